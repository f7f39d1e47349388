#include "tests/load/load_generator.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_format.h"
#include "rlvr/v1/session.grpc.pb.h"

namespace rlvr::testing {
namespace {

using Clock = std::chrono::steady_clock;
using rlvr::v1::ActorMessage;
using rlvr::v1::LearnerMessage;

// Shared tallies, guarded by mu.
struct Tally {
  std::mutex mu;
  LoadReport report;
  std::vector<double> ack_ms;
};

// Kinds of deliberately broken groups.
enum class Fault {
  kNone,
  kTokenOutOfVocab,
  kNaNLogprob,
  kWrongGroupSize,
  kRewardOutOfRange,
  kLengthMismatch,
  kUnknownLease
};

class Session final : public grpc::ClientBidiReactor<ActorMessage, LearnerMessage> {
 public:
  Session(rlvr::v1::SessionService::Stub* stub, const LoadOptions& options, int index, Tally* tally)
      : options_(options), tally_(tally), rng_(options.seed * 7919 + index) {
    hello_.mutable_hello()->set_actor_id(absl::StrFormat("load-%d", index));
    hello_.mutable_hello()->set_incarnation(absl::StrFormat("%016x", rng_()));
    hello_.mutable_hello()->set_capacity(options.capacity);
    // Even sessions speak batch_messages (a LeaseBatch is answered with one
    // RolloutBatch); odd ones one group per message, as older actors do.
    batches_ = options.batch_messages && index % 2 == 0;
    hello_.mutable_hello()->set_batch_messages(batches_);
    stub->async()->Session(&context_, this);
    StartRead(&incoming_);
    Send(hello_);
    StartCall();
  }

  // Ends the stream; OnDone signals completion.
  void Close() { context_.TryCancel(); }

  void Wait() {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return done_; });
  }
  bool failed() const { return failed_; }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    Handle(incoming_);
    StartRead(&incoming_);
  }

  void OnWriteDone(bool ok) override {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (!ok) {
      outbox_.clear();
      return;
    }
    WriteNextLocked();
  }

  void OnDone(const grpc::Status& status) override {
    std::lock_guard<std::mutex> lock(mu_);
    failed_ = !status.ok() && status.error_code() != grpc::StatusCode::CANCELLED;
    done_ = true;
    done_cv_.notify_all();
  }

 private:
  void Send(ActorMessage msg) {
    std::lock_guard<std::mutex> lock(mu_);
    outbox_.push_back(std::move(msg));
    if (!writing_) WriteNextLocked();
  }

  void WriteNextLocked() {
    if (outbox_.empty()) return;
    current_ = std::move(outbox_.front());
    outbox_.pop_front();
    writing_ = true;
    StartWrite(&current_);
  }

  void Handle(const LearnerMessage& m) {
    if (m.has_welcome()) {
      version_ = m.welcome().latest_version();
      if (options_.vocab_size == 0) vocab_ = static_cast<int>(m.welcome().vocab_size());
      return;
    }
    if (m.has_weights_available()) {
      version_ = std::max<uint64_t>(version_, m.weights_available().version());
      return;
    }
    if (m.has_lease()) {
      ActorMessage msg;
      *msg.mutable_group() = Answer(m.lease());
      Send(std::move(msg));
      return;
    }
    if (m.has_lease_batch()) {
      ActorMessage msg;
      for (const auto& lease : m.lease_batch().leases()) {
        *msg.mutable_group_batch()->add_groups() = Answer(lease);
      }
      Send(std::move(msg));
      return;
    }
    if (m.has_ack()) TallyAck(m.ack());
    if (m.has_ack_batch()) {
      for (const auto& ack : m.ack_batch().acks()) TallyAck(ack);
    }
  }

  void TallyAck(const rlvr::v1::Ack& ack) {
    auto now = Clock::now();
    std::lock_guard<std::mutex> lock(tally_->mu);
    auto it = sent_.find(ack.lease_id());
    if (it == sent_.end()) return;
    double ms = std::chrono::duration<double, std::milli>(now - it->second.first).count();
    bool valid = it->second.second;
    sent_.erase(it);
    tally_->ack_ms.push_back(ms);
    LoadReport& r = tally_->report;
    if (valid && ack.accepted()) ++r.valid_accepted;
    if (valid && !ack.accepted()) {
      ++r.valid_rejected;
      ++r.valid_rejected_by_reason[rlvr::v1::RejectReason_Name(ack.reason())];
    }
    if (!valid && ack.accepted()) ++r.invalid_accepted;
    if (!valid && !ack.accepted()) ++r.invalid_rejected;
  }

  // A group for `lease` (valid, or broken in one random way), recorded as sent.
  rlvr::v1::RolloutGroup Answer(const rlvr::v1::WorkLease& lease) {
    std::uniform_real_distribution<double> u(0, 1);
    Fault fault = Fault::kNone;
    if (u(rng_) < options_.invalid_fraction) {
      fault = static_cast<Fault>(1 + rng_() % 6);
    }
    int vocab = options_.vocab_size > 0 ? options_.vocab_size : std::max(vocab_, 2);
    int tokens =
        std::min(options_.completion_tokens, std::max(1, lease.sampling().max_new_tokens()));
    rlvr::v1::RolloutGroup group;
    auto* g = &group;
    g->set_lease_id(fault == Fault::kUnknownLease ? lease.lease_id() + (1ULL << 40)
                                                  : lease.lease_id());
    g->set_prompt_id(lease.prompt_id());
    g->set_policy_version(std::max(version_, lease.min_policy_version()));
    int n = lease.group_size() + (fault == Fault::kWrongGroupSize ? 1 : 0);
    for (int i = 0; i < n; ++i) {
      auto* c = g->add_completions();
      for (int t = 0; t < tokens; ++t) {
        c->add_token_ids(static_cast<int>(rng_() % static_cast<uint64_t>(vocab)));
        c->add_behaviour_logprobs(-0.5f - static_cast<float>(u(rng_)));
      }
      c->set_reward(i % 2 == 0 ? 1.0f : 0.0f);
      c->set_finish_reason(rlvr::v1::FINISH_REASON_LENGTH);
    }
    auto* c0 = g->mutable_completions(0);
    switch (fault) {
      case Fault::kTokenOutOfVocab:
        c0->set_token_ids(0, vocab + 5);
        break;
      case Fault::kNaNLogprob:
        c0->set_behaviour_logprobs(0, std::numeric_limits<float>::quiet_NaN());
        break;
      case Fault::kRewardOutOfRange:
        c0->set_reward(2.0f);
        break;
      case Fault::kLengthMismatch:
        c0->add_behaviour_logprobs(-1.0f);
        break;
      default:
        break;
    }
    {
      std::lock_guard<std::mutex> lock(tally_->mu);
      ++tally_->report.leases;
      if (fault == Fault::kNone) {
        ++tally_->report.valid_sent;
      } else {
        ++tally_->report.invalid_sent;
      }
      sent_[g->lease_id()] = {Clock::now(), fault == Fault::kNone};
    }
    return group;
  }

  const LoadOptions& options_;
  Tally* tally_;
  std::mt19937_64 rng_;
  grpc::ClientContext context_;
  ActorMessage hello_;
  LearnerMessage incoming_;
  uint64_t version_ = 0;
  int vocab_ = 0;
  bool batches_ = false;  // This session declared batch_messages.
  // Sent groups awaiting an ack: lease id -> (time, valid). Guarded by tally_->mu.
  std::unordered_map<uint64_t, std::pair<Clock::time_point, bool>> sent_;

  std::mutex mu_;
  std::condition_variable done_cv_;
  std::deque<ActorMessage> outbox_;  // Guarded by mu_.
  ActorMessage current_;             // The message being written.
  bool writing_ = false;             // Guarded by mu_.
  bool done_ = false;                // Guarded by mu_.
  bool failed_ = false;
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * (v.size() - 1));
  return v[i];
}

}  // namespace

std::string LoadReport::Summary() const {
  std::string reasons;
  for (const auto& [k, v] : valid_rejected_by_reason) reasons += absl::StrFormat(" %s=%d", k, v);
  return absl::StrFormat(
      "sessions %d (failed %d), %.1f s: leases %d, valid sent %d accepted %d rejected %d [%s ], "
      "invalid sent %d rejected %d accepted %d; accepted %.1f groups/s; ack p50 %.2f ms p99 %.2f "
      "ms "
      "max %.2f ms",
      sessions_opened, sessions_failed, seconds, leases, valid_sent, valid_accepted, valid_rejected,
      reasons, invalid_sent, invalid_rejected, invalid_accepted, accepted_per_s, ack_p50_ms,
      ack_p99_ms, ack_max_ms);
}

absl::StatusOr<LoadReport> RunLoad(const LoadOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  // A few channels shared by the sessions, like a few actor hosts.
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<rlvr::v1::SessionService::Stub>> stubs;
  for (int i = 0; i < 8; ++i) {
    args.SetInt("rlvr.load.channel", i);  // Distinct channels, not one shared subchannel.
    channels.push_back(
        grpc::CreateCustomChannel(options.target, grpc::InsecureChannelCredentials(), args));
    stubs.push_back(rlvr::v1::SessionService::NewStub(channels.back()));
  }
  Tally tally;
  auto t0 = Clock::now();
  std::vector<std::unique_ptr<Session>> sessions;
  for (int i = 0; i < options.sessions; ++i) {
    sessions.push_back(
        std::make_unique<Session>(stubs[i % stubs.size()].get(), options, i, &tally));
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(options.duration_s));
  double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (auto& s : sessions) s->Close();
  for (auto& s : sessions) s->Wait();
  std::lock_guard<std::mutex> lock(tally.mu);
  LoadReport r = tally.report;
  r.sessions_opened = options.sessions;
  for (auto& s : sessions) r.sessions_failed += s->failed() ? 1 : 0;
  r.seconds = seconds;
  r.accepted_per_s = (r.valid_accepted + r.invalid_accepted) / seconds;
  r.ack_p50_ms = Percentile(tally.ack_ms, 0.5);
  r.ack_p99_ms = Percentile(tally.ack_ms, 0.99);
  r.ack_max_ms = Percentile(tally.ack_ms, 1.0);
  return r;
}

}  // namespace rlvr::testing
