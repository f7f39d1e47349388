#include "actor/testing/fake_learner.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/checksum.h"
#include "common/base/status_macros.h"
#include "common/net/grpc_util.h"
#include "rlvr/v1/session.grpc.pb.h"
#include "rlvr/v1/weights.grpc.pb.h"

namespace rlvr::actor::testing {

using rlvr::v1::ActorMessage;
using rlvr::v1::LearnerMessage;

namespace {

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct SessionState {
  grpc::ServerContext* ctx = nullptr;
  grpc::ServerReaderWriter<LearnerMessage, ActorMessage>* stream = nullptr;
  int capacity = 1;
  bool batches = false;  // Leases go out in LeaseBatch messages.
  std::mutex write_mu;   // Serialises writes; `closed` guarded by it.
  bool closed = false;
  // Guarded by Impl::mu_: lease id -> (lease, prompt index).
  std::map<uint64_t, std::pair<rlvr::v1::WorkLease, int>> outstanding;

  void Write(const LearnerMessage& msg) {
    std::lock_guard<std::mutex> lock(write_mu);
    if (!closed) stream->Write(msg);
  }
};

}  // namespace

class FakeLearner::Impl final : public rlvr::v1::SessionService::Service,
                                public rlvr::v1::WeightService::Service {
 public:
  explicit Impl(const FakeLearnerOptions& options) : options_(options) {
    for (int i = 0; i < static_cast<int>(options_.prompts.size()); ++i) queue_.push_back(i);
  }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      shutdown_ = true;
    }
    cv_.notify_all();
    if (server_) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
      server_->Wait();
    }
  }

  grpc::Status Session(grpc::ServerContext* ctx,
                       grpc::ServerReaderWriter<LearnerMessage, ActorMessage>* stream) override {
    ActorMessage in;
    if (!stream->Read(&in) || !in.has_hello()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "first message must be Hello");
    }
    auto s = std::make_shared<SessionState>();
    s->ctx = ctx;
    s->stream = stream;
    s->capacity = std::max(1, in.hello().capacity());
    s->batches = options_.batch_messages && in.hello().batch_messages();
    LearnerMessage welcome;
    // The Welcome is the session's first message, as the real learner
    // guarantees: holding the session's write lock while it becomes visible
    // keeps a concurrent PublishWeights (which writes WeightsAvailable to
    // every session) from writing before it. Lock order: write_mu, then mu_.
    std::unique_lock<std::mutex> welcome_first(s->write_mu);
    {
      std::lock_guard<std::mutex> lock(mu_);
      sessions_.insert(s);
      ++stats_.sessions_opened;
      stats_.incarnations.push_back(in.hello().incarnation());
      stats_.hello_versions.push_back(in.hello().have_version());
      auto* w = welcome.mutable_welcome();
      w->set_session_id(absl::StrCat("fake-", stats_.sessions_opened));
      w->set_latest_version(latest_version_);
      w->set_max_policy_lag(options_.max_policy_lag);
      w->set_vocab_size(options_.vocab_size);
      w->set_max_message_bytes(16 << 20);
      w->set_batch_messages(options_.batch_messages);
    }
    stream->Write(welcome);
    welcome_first.unlock();
    cv_.notify_all();
    TopUp(*s);

    while (stream->Read(&in)) {
      if (in.has_group()) {
        LearnerMessage ack_msg;
        *ack_msg.mutable_ack() = HandleGroup(*s, in.group());
        {
          std::lock_guard<std::mutex> lock(mu_);
          ++stats_.single_groups;
        }
        s->Write(ack_msg);
        TopUp(*s);
      } else if (in.has_group_batch()) {
        if (!options_.batch_messages) {
          std::lock_guard<std::mutex> lock(mu_);
          ++stats_.unexpected_batches;  // An older learner would drop it.
          continue;
        }
        LearnerMessage ack_msg;
        for (const rlvr::v1::RolloutGroup& g : in.group_batch().groups()) {
          *ack_msg.mutable_ack_batch()->add_acks() = HandleGroup(*s, g);
        }
        {
          std::lock_guard<std::mutex> lock(mu_);
          ++stats_.group_batches;
        }
        s->Write(ack_msg);
        TopUp(*s);
      } else if (in.has_return_leases()) {
        std::lock_guard<std::mutex> lock(mu_);
        for (uint64_t id : in.return_leases().lease_ids()) {
          auto it = s->outstanding.find(id);
          if (it == s->outstanding.end()) continue;
          queue_.push_front(it->second.second);
          s->outstanding.erase(it);
          ++stats_.leases_returned;
        }
      }
    }
    const bool clean = !ctx->IsCancelled();
    {
      std::lock_guard<std::mutex> write_lock(s->write_mu);
      s->closed = true;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (clean) ++stats_.sessions_closed_cleanly;
      for (auto& [id, lease] : s->outstanding) {
        queue_.push_front(lease.second);
        ++stats_.leases_requeued;
      }
      s->outstanding.clear();
      sessions_.erase(s);
    }
    cv_.notify_all();
    return grpc::Status::OK;
  }

  grpc::Status WatchWeights(grpc::ServerContext* ctx, const rlvr::v1::WatchWeightsRequest* request,
                            grpc::ServerWriter<rlvr::v1::WeightChunk>* writer) override {
    uint64_t have = request->have_version();
    while (true) {
      std::shared_ptr<const std::string> blob;
      uint64_t version = 0;
      Corruption mode = Corruption::kNone;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait_for(lock, std::chrono::milliseconds(50),
                     [&] { return shutdown_ || latest_version_ > have; });
        if (shutdown_) return grpc::Status::OK;
        if (ctx->IsCancelled()) return grpc::Status::CANCELLED;
        if (latest_version_ <= have) continue;
        blob = latest_blob_;
        version = latest_version_;
        ++stats_.weight_transfers;
        if (corrupt_count_ > 0) {
          mode = corrupt_mode_;
          --corrupt_count_;
          ++stats_.corrupted_transfers;
        }
      }
      const uint64_t total = blob->size();
      const uint64_t step = std::max<uint64_t>(1, options_.chunk_bytes);
      const uint64_t n = (total + step - 1) / step;
      const uint32_t blob_crc = Crc32(std::string_view(*blob));
      for (uint64_t i = 0; i < n; ++i) {
        if (mode == Corruption::kTruncate && i == std::max<uint64_t>(1, n / 2)) {
          return grpc::Status::OK;  // The stream ends mid-transfer.
        }
        rlvr::v1::WeightChunk chunk;
        chunk.set_version(version);
        chunk.set_offset(i * step);
        chunk.set_total_bytes(total);
        std::string data = blob->substr(i * step, step);
        uint32_t crc = Crc32(std::string_view(data));
        if (i == n / 2 && (mode == Corruption::kFlipByte || mode == Corruption::kBadChunkCrc)) {
          data[data.size() / 2] ^= 0x5a;
          if (mode == Corruption::kFlipByte) crc = Crc32(std::string_view(data));
        }
        chunk.set_data(std::move(data));
        chunk.set_chunk_crc32(crc);
        chunk.set_blob_crc32(blob_crc);
        chunk.set_last(i + 1 == n);
        if (!writer->Write(chunk)) return grpc::Status::CANCELLED;
      }
      have = version;
    }
  }

  // Judges one group; the caller sends the Ack.
  rlvr::v1::Ack HandleGroup(SessionState& s, const rlvr::v1::RolloutGroup& group) {
    rlvr::v1::Ack result;
    auto* ack = &result;
    ack->set_lease_id(group.lease_id());
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = s.outstanding.find(group.lease_id());
      if (it == s.outstanding.end()) {
        ++stats_.unknown_lease_groups;
        ack->set_reason(rlvr::v1::REJECT_REASON_UNKNOWN_LEASE);
      } else if (group.completions_size() != it->second.first.group_size()) {
        ++stats_.wrong_size_groups;
        ack->set_reason(rlvr::v1::REJECT_REASON_WRONG_GROUP_SIZE);
        queue_.push_front(it->second.second);
        s.outstanding.erase(it);
      } else if (group.policy_version() < it->second.first.min_policy_version() ||
                 group.policy_version() > latest_version_) {
        ++stats_.stale_groups;
        ack->set_reason(rlvr::v1::REJECT_REASON_STALE_VERSION);
        queue_.push_front(it->second.second);
        s.outstanding.erase(it);
      } else {
        ack->set_accepted(true);
        accepted_.push_back(Received{it->second.first, group});
        if (options_.cycle) queue_.push_back(it->second.second);
        s.outstanding.erase(it);
      }
    }
    cv_.notify_all();
    return result;
  }

  // Grants leases up to the session's capacity (+ extra_grants).
  void TopUp(SessionState& s) {
    std::vector<LearnerMessage> grants;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const int limit = s.capacity + options_.extra_grants;
      while (leasing_ && !queue_.empty() && static_cast<int>(s.outstanding.size()) < limit) {
        const int index = queue_.front();
        queue_.pop_front();
        const FakePrompt& p = options_.prompts[index];
        LearnerMessage m;
        rlvr::v1::WorkLease* lease = m.mutable_lease();
        lease->set_lease_id(next_lease_id_++);
        lease->set_prompt_id(p.id);
        lease->mutable_prompt_token_ids()->Assign(p.tokens.begin(), p.tokens.end());
        lease->set_group_size(options_.group_size);
        *lease->mutable_sampling() = options_.sampling;
        lease->mutable_sampling()->set_seed(options_.sampling.seed() + index);
        lease->set_deadline_unix_ms(NowUnixMs() +
                                    static_cast<int64_t>(options_.lease_timeout_s * 1000));
        lease->set_task(options_.task);
        lease->set_answer(p.answer);
        if (options_.enforce_min_version && latest_version_ > 0) {
          lease->set_min_policy_version(latest_version_ > options_.max_policy_lag
                                            ? latest_version_ - options_.max_policy_lag
                                            : 1);
        }
        s.outstanding[lease->lease_id()] = {*lease, index};
        stats_.max_outstanding =
            std::max(stats_.max_outstanding, static_cast<int>(s.outstanding.size()));
        ++stats_.leases_granted;
        grants.push_back(std::move(m));
      }
    }
    if (s.batches && !grants.empty()) {
      LearnerMessage batch;
      for (LearnerMessage& m : grants) {
        *batch.mutable_lease_batch()->add_leases() = std::move(*m.mutable_lease());
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.lease_batches;
      }
      s.Write(batch);
      return;
    }
    for (const auto& m : grants) s.Write(m);
  }

  std::vector<std::shared_ptr<SessionState>> Sessions() {
    std::lock_guard<std::mutex> lock(mu_);
    return {sessions_.begin(), sessions_.end()};
  }

  const FakeLearnerOptions options_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  // Guarded by mu_.
  bool shutdown_ = false;
  bool leasing_ = true;
  std::deque<int> queue_;
  uint64_t next_lease_id_ = 1000;
  std::set<std::shared_ptr<SessionState>> sessions_;
  std::vector<Received> accepted_;
  uint64_t latest_version_ = 0;
  std::shared_ptr<const std::string> latest_blob_;
  Corruption corrupt_mode_ = Corruption::kNone;
  int corrupt_count_ = 0;
  FakeLearnerStats stats_;
};

absl::StatusOr<std::vector<FakePrompt>> PromptsFromTask(const Task& task,
                                                        const Tokenizer& tokenizer, int n) {
  const auto& train = task.train();
  if (train.empty()) return absl::InvalidArgumentError("task has no training prompts");
  std::vector<FakePrompt> out;
  for (int i = 0; i < n; ++i) {
    const Prompt& p = train[i % train.size()];
    ASSIGN_OR_RETURN(std::vector<int> tokens, EncodePrompt(tokenizer, p.text));
    out.push_back(FakePrompt{absl::StrCat(p.id, "#", i), std::move(tokens), p.answer});
  }
  return out;
}

absl::StatusOr<std::unique_ptr<FakeLearner>> FakeLearner::Start(const FakeLearnerOptions& options) {
  auto impl = std::make_unique<Impl>(options);
  GrpcServerOptions server_options;
  server_options.address = "127.0.0.1:0";
  absl::StatusOr<StartedServer> started =
      StartGrpcServer(server_options, {static_cast<rlvr::v1::SessionService::Service*>(impl.get()),
                                       static_cast<rlvr::v1::WeightService::Service*>(impl.get())});
  if (!started.ok()) return started.status();
  impl->server_ = std::move(started->server);
  impl->port_ = started->port;
  return std::unique_ptr<FakeLearner>(new FakeLearner(std::move(impl)));
}

FakeLearner::FakeLearner(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

FakeLearner::~FakeLearner() { impl_->Stop(); }

std::string FakeLearner::address() const { return absl::StrCat("127.0.0.1:", impl_->port_); }

void FakeLearner::PublishWeights(uint64_t version, std::string blob) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu_);
    impl_->latest_version_ = version;
    impl_->latest_blob_ = std::make_shared<const std::string>(std::move(blob));
  }
  impl_->cv_.notify_all();
  LearnerMessage m;
  m.mutable_weights_available()->set_version(version);
  for (auto& s : impl_->Sessions()) s->Write(m);
}

void FakeLearner::CorruptNextTransfers(Corruption mode, int count) {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  impl_->corrupt_mode_ = mode;
  impl_->corrupt_count_ = count;
}

void FakeLearner::DropSessions() {
  for (auto& s : impl_->Sessions()) s->ctx->TryCancel();
}

void FakeLearner::SetLeasing(bool enabled) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu_);
    impl_->leasing_ = enabled;
  }
  if (enabled) {
    for (auto& s : impl_->Sessions()) impl_->TopUp(*s);
  }
}

bool FakeLearner::WaitForGroups(int n, double timeout_s) {
  std::unique_lock<std::mutex> lock(impl_->mu_);
  return impl_->cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                             [&] { return static_cast<int>(impl_->accepted_.size()) >= n; });
}

bool FakeLearner::WaitForSessions(int opened, double timeout_s) {
  std::unique_lock<std::mutex> lock(impl_->mu_);
  return impl_->cv_.wait_for(lock, std::chrono::duration<double>(timeout_s),
                             [&] { return impl_->stats_.sessions_opened >= opened; });
}

std::vector<FakeLearner::Received> FakeLearner::accepted() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->accepted_;
}

FakeLearnerStats FakeLearner::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return impl_->stats_;
}

int FakeLearner::open_sessions() const {
  std::lock_guard<std::mutex> lock(impl_->mu_);
  return static_cast<int>(impl_->sessions_.size());
}

}  // namespace rlvr::actor::testing
