// The learner's front door over real gRPC on 127.0.0.1:0 (issue 19): hung
// sessions are suspended and their re-queued prompts go to working ones;
// consecutive expiries close a session; streams without Hello are bounded per
// peer address, never take the place of a session that says Hello, and are
// closed at the Hello deadline; Hello.capacity is clamped
// and advertised; rejected-group logs are rate limited; compressed calls are
// refused; every refusal reason is registered and counted; published
// diagnostics are clamped; ended streams are reported to the memory
// releaser, which releases once a burst is over.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include "common/base/memory_policy.h"
#include "common/net/grpc_util.h"
#include "learner/learner_metrics.h"
#include "learner/session_service.h"

namespace rlvr::learner {
namespace {

using rlvr::v1::ActorMessage;
using rlvr::v1::LearnerMessage;
using rlvr::v1::WorkLease;
using Clock = std::chrono::steady_clock;

// A session stream whose messages are read by a thread of its own, so that a
// test can watch several sessions at once without blocking.
class AsyncSession {
 public:
  AsyncSession(rlvr::v1::SessionService::Stub* stub, int capacity, bool send_hello = true) {
    ctx_.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    stream_ = stub->Session(&ctx_);
    if (send_hello) {
      ActorMessage hello;
      hello.mutable_hello()->set_actor_id("front-door-test");
      hello.mutable_hello()->set_incarnation("x");
      hello.mutable_hello()->set_capacity(capacity);
      hello.mutable_hello()->set_batch_messages(true);
      stream_->Write(hello);
    }
    reader_ = std::thread([this] {
      LearnerMessage m;
      while (stream_->Read(&m)) {
        std::lock_guard<std::mutex> l(mu_);
        if (m.has_welcome()) welcome_ = m.welcome();
        if (m.has_lease_batch()) {
          for (const WorkLease& w : m.lease_batch().leases()) leases_.push_back(w);
        }
        if (m.has_ack_batch()) {
          for (const rlvr::v1::Ack& a : m.ack_batch().acks()) acks_.push_back(a);
        }
        cv_.notify_all();
      }
      grpc::Status status = stream_->Finish();
      std::lock_guard<std::mutex> l(mu_);
      status_ = status;
      ended_ = true;
      cv_.notify_all();
    });
  }
  ~AsyncSession() {
    ctx_.TryCancel();
    reader_.join();
  }

  // Waits up to `timeout_s` for `pred` (called under the lock).
  template <typename Pred>
  bool WaitFor(double timeout_s, Pred pred) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, std::chrono::duration<double>(timeout_s), [&] { return pred(); });
  }
  // The leases received so far and not taken yet.
  std::vector<WorkLease> TakeLeases() {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<WorkLease> out(leases_.begin(), leases_.end());
    leases_.clear();
    return out;
  }
  size_t lease_count() {
    std::lock_guard<std::mutex> l(mu_);
    return leases_.size();
  }
  bool Send(const ActorMessage& m) {
    std::lock_guard<std::mutex> l(write_mu_);
    return stream_->Write(m);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<WorkLease> leases_;
  std::vector<rlvr::v1::Ack> acks_;
  std::optional<rlvr::v1::Welcome> welcome_;
  bool ended_ = false;
  grpc::Status status_;
  grpc::ClientContext ctx_;

 private:
  std::mutex write_mu_;
  std::unique_ptr<grpc::ClientReaderWriter<ActorMessage, LearnerMessage>> stream_;
  std::thread reader_;
};

ActorMessage Answer(const std::vector<WorkLease>& leases, uint64_t version) {
  ActorMessage m;
  for (const WorkLease& l : leases) {
    auto* g = m.mutable_group_batch()->add_groups();
    g->set_lease_id(l.lease_id());
    g->set_prompt_id(l.prompt_id());
    g->set_policy_version(version);
    for (int i = 0; i < l.group_size(); ++i) {
      auto* c = g->add_completions();
      c->add_token_ids(3);
      c->add_token_ids(2);
      c->add_behaviour_logprobs(-1.0f);
      c->add_behaviour_logprobs(-0.25f);
      c->set_reward(i % 2 == 0 ? 1.0f : 0.0f);
      c->set_finish_reason(rlvr::v1::FINISH_REASON_STOP);
    }
  }
  return m;
}

struct FrontDoorParams {
  int max_policy_lag = 0;
  int groups_per_update = 4;
  double lease_timeout_s = 0.4;
  int lease_expiries_to_close = 0;
  int max_sessions = 4;
  int max_capacity = 4;
  double hello_timeout_s = 0.5;
  int max_awaiting_hello = 8;
  int max_awaiting_hello_per_peer = 4;
  int log_lines_per_s = 20;
  // The memory releaser's schedule (0: it never releases).
  int release_after_streams = 0;
};

class FrontDoorTest : public ::testing::Test {
 protected:
  void Start(const FrontDoorParams& p) {
    IngestOptions o;
    o.group_size = 2;
    o.sampling.max_new_tokens = 3;
    o.max_policy_lag = p.max_policy_lag;
    o.buffer_groups = 16;
    o.groups_per_update = p.groups_per_update;
    o.lease_timeout_s = p.lease_timeout_s;
    o.max_message_bytes = 1 << 20;
    o.max_sessions = p.max_sessions;
    o.max_capacity = p.max_capacity;
    o.lease_expiries_to_close = p.lease_expiries_to_close;
    o.vocab_size = 10;
    o.eos_id = 2;
    o.expiry_poll_s = 0.02;
    std::vector<LeasePrompt> prompts;
    for (int i = 0; i < 64; ++i) prompts.push_back({"p" + std::to_string(i), {1, 5}, "3"});
    ingest_ = std::make_unique<Ingest>(o, prompts, &metrics_);
    SessionServiceOptions so;
    so.hello_timeout_s = p.hello_timeout_s;
    so.max_awaiting_hello = p.max_awaiting_hello;
    so.max_awaiting_hello_per_peer = p.max_awaiting_hello_per_peer;
    so.log_lines_per_s = p.log_lines_per_s;
    BurstTrimSchedule::Options trim;
    trim.min_ended = p.release_after_streams;
    trim.quiet = absl::Milliseconds(100);
    trim.min_interval = absl::ZeroDuration();
    releaser_ = std::make_unique<MemoryReleaser>(trim, [this] { return ++release_calls_ > 0; });
    so.memory_releaser = releaser_.get();
    service_ = std::make_unique<SessionServiceImpl>(ingest_.get(), nullptr, so);
    LearnerConfig lc;
    lc.max_message_bytes = o.max_message_bytes;
    GrpcServerOptions gso = FrontDoorServerOptions(lc);
    // A second listener on a unix socket: its clients have another peer
    // address than the loopback TCP ones (the per-address bound).
    unix_path_ = ::testing::TempDir() + "rlvr_front_door_" + std::to_string(getpid()) + ".sock";
    std::remove(unix_path_.c_str());
    gso.extra_addresses = {"unix:" + unix_path_};
    auto started = StartGrpcServer(gso, {service_.get()});
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(started->server);
    port_ = started->port;
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                   grpc::InsecureChannelCredentials());
    stub_ = rlvr::v1::SessionService::NewStub(channel_);
    unix_stub_ = rlvr::v1::SessionService::NewStub(
        grpc::CreateChannel("unix:" + unix_path_, grpc::InsecureChannelCredentials()));
    ingest_->Start();
    ingest_->Publish(1);
  }
  void TearDown() override {
    if (ingest_ != nullptr) ingest_->Stop();
    if (server_ != nullptr) {
      server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    }
  }
  double Refusals(const std::string& reason) { return metrics_.CallRefused(reason).Value(); }
  // Waits for the live streams to drop to `n` (reactors freed).
  bool WaitLiveStreams(int n, double timeout_s) {
    const auto t0 = Clock::now();
    while (service_->live_streams() != n) {
      if (Clock::now() - t0 > std::chrono::duration<double>(timeout_s)) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return true;
  }

  LearnerMetrics metrics_{std::make_shared<prometheus::Registry>()};
  std::unique_ptr<Ingest> ingest_;
  std::atomic<int> release_calls_{0};
  std::unique_ptr<MemoryReleaser> releaser_;  // Outlives service_.
  std::unique_ptr<SessionServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<rlvr::v1::SessionService::Stub> stub_;
  std::string unix_path_;
  // The same server through its unix socket: another peer address.
  std::unique_ptr<rlvr::v1::SessionService::Stub> unix_stub_;
};

TEST_F(FrontDoorTest, EveryRefusalReasonIsRegisteredOnce) {
  Start({});
  int found = 0;
  for (const auto& family : metrics_.registry->Collect()) {
    if (family.name != "rlvr_learner_call_refusals_total") continue;
    for (const auto& m : family.metric) {
      ++found;
      EXPECT_EQ(m.counter.value, 0) << m.label[0].value;
    }
  }
  EXPECT_EQ(found, static_cast<int>(std::size(kCallRefusalReasons)));
}

// Synchronous mode, windows of 4 groups. The hung session (capacity 2) takes
// part of the first window and never answers; once its leases expire it is
// suspended, the re-queued prompts go to the working session, and every
// later window is trained by the working session alone; the hung one gets
// nothing until it answers, then gets work again.
TEST_F(FrontDoorTest, HungSessionIsSuspendedAndTheWorkingOneGetsTheRequeuedWork) {
  Start({});
  AsyncSession hung(stub_.get(), 2);
  ASSERT_TRUE(hung.WaitFor(5, [&] { return hung.leases_.size() == 2; }));
  AsyncSession working(stub_.get(), 2);
  ASSERT_TRUE(working.WaitFor(5, [&] { return working.leases_.size() == 2; }));
  const std::vector<WorkLease> hung_leases = hung.TakeLeases();

  std::thread trainer([&] {
    for (uint64_t version = 1; version <= 4; ++version) {
      auto taken = ingest_->WaitForUpdate([] { return false; });
      ASSERT_TRUE(taken.ok()) << taken.status();
      ingest_->CompleteUpdate(*taken);
      ingest_->Publish(version + 1);
    }
  });
  // The working session answers whatever it gets; 4 windows of 4 groups.
  uint64_t version = 1;
  int answered = 0;
  const auto t0 = Clock::now();
  while (answered < 16 && Clock::now() - t0 < std::chrono::seconds(20)) {
    working.WaitFor(0.5, [&] { return !working.leases_.empty(); });
    std::vector<WorkLease> leases = working.TakeLeases();
    if (leases.empty()) continue;
    version = ingest_->Snapshot().latest_version();
    ASSERT_TRUE(working.Send(Answer(leases, version)));
    answered += static_cast<int>(leases.size());
  }
  trainer.join();
  EXPECT_EQ(answered, 16) << "the working session did not train every window";
  EXPECT_EQ(hung.lease_count(), 0u) << "a hung session got new work";
  EXPECT_TRUE(ingest_->Suspended(1));
  EXPECT_EQ(metrics_.sessions_suspended->Value(), 1);

  // The hung session answers (late: its leases expired) and is given work again.
  ASSERT_TRUE(hung.Send(Answer(hung_leases, 1)));
  ASSERT_TRUE(hung.WaitFor(5, [&] { return hung.acks_.size() == 2; }));
  EXPECT_EQ(hung.acks_[0].reason(), rlvr::v1::REJECT_REASON_EXPIRED_LEASE);
  EXPECT_FALSE(ingest_->Suspended(1));
  EXPECT_TRUE(hung.WaitFor(5, [&] { return !hung.leases_.empty(); }))
      << "the session that answered got no new lease";
  EXPECT_EQ(metrics_.sessions_suspended->Value(), 0);
}

TEST_F(FrontDoorTest, ConsecutiveExpiriesCloseTheSession) {
  FrontDoorParams p;
  p.max_policy_lag = 1;
  p.lease_expiries_to_close = 2;
  Start(p);
  AsyncSession hung(stub_.get(), 2);
  ASSERT_TRUE(hung.WaitFor(5, [&] { return hung.ended_; }));
  EXPECT_EQ(hung.status_.error_code(), grpc::StatusCode::UNAVAILABLE)
      << hung.status_.error_message();
  EXPECT_NE(hung.status_.error_message().find("lease_expiries_to_close"), std::string::npos);
  EXPECT_EQ(Refusals("lease_expiries"), 1);
  EXPECT_EQ(ingest_->Snapshot().sessions(), 0u);
  EXPECT_EQ(ingest_->Snapshot().leases_outstanding(), 0u);
}

// Streams that never say Hello (a client without credentials flooding the
// learner, issue 42): one address holds at most max_awaiting_hello_per_peer
// of them, the rest are refused at once; they never count against
// max_sessions, so actors from another address are welcomed while the flood
// goes on, up to max_sessions sessions; the held ones end DEADLINE_EXCEEDED
// at the Hello deadline and every reactor is freed. Cancelled ones are freed
// at once.
TEST_F(FrontDoorTest, HelloLessStreamsAreBoundedPerPeerAndNeverLockActorsOut) {
  FrontDoorParams p;
  p.hello_timeout_s = 2.5;
  Start(p);
  std::vector<std::unique_ptr<AsyncSession>> silent;
  for (int i = 0; i < 200; ++i) {
    silent.push_back(std::make_unique<AsyncSession>(stub_.get(), 1, /*send_hello=*/false));
  }
  int refused = 0;
  for (const auto t0 = Clock::now(); Clock::now() - t0 < std::chrono::milliseconds(1500);) {
    refused = 0;
    for (auto& s : silent) {
      std::lock_guard<std::mutex> l(s->mu_);
      refused += s->ended_ && s->status_.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
    }
    if (refused >= 196) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(refused, 196);
  EXPECT_EQ(service_->awaiting_hello(), 4);
  EXPECT_EQ(metrics_.sessions_awaiting_hello->Value(), 4);
  EXPECT_EQ(Refusals("peer_awaiting_hello"), 196);
  EXPECT_EQ(Refusals("session_limit"), 0);
  // Actors from another address are welcomed while the flood holds its
  // share, up to max_sessions (4) sessions that said Hello...
  std::vector<std::unique_ptr<AsyncSession>> actors;
  for (int i = 0; i < 4; ++i) {
    actors.push_back(std::make_unique<AsyncSession>(unix_stub_.get(), 1));
    ASSERT_TRUE(actors.back()->WaitFor(5, [&] { return actors.back()->welcome_.has_value(); }))
        << "actor " << i << " was not welcomed: " << actors.back()->status_.error_message();
  }
  EXPECT_EQ(ingest_->Snapshot().sessions(), 4u);
  // ... and max_sessions counts only those.
  {
    AsyncSession fifth(unix_stub_.get(), 1);
    ASSERT_TRUE(fifth.WaitFor(5, [&] { return fifth.ended_; }));
    EXPECT_EQ(fifth.status_.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
    EXPECT_NE(fifth.status_.error_message().find("learner.max_sessions"), std::string::npos)
        << fifth.status_.error_message();
  }
  EXPECT_EQ(Refusals("session_limit"), 1);
  actors.clear();
  // The Hello deadline ends the silent ones.
  for (auto& s : silent) {
    ASSERT_TRUE(s->WaitFor(5, [&] { return s->ended_; }));
  }
  int timed_out = 0;
  for (auto& s : silent) {
    timed_out += s->status_.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ? 1 : 0;
  }
  EXPECT_EQ(timed_out, 4);
  EXPECT_EQ(Refusals("hello_timeout"), 4);
  silent.clear();
  EXPECT_TRUE(WaitLiveStreams(0, 5)) << service_->live_streams() << " reactors left";
  EXPECT_EQ(service_->awaiting_hello(), 0);
  AsyncSession actor(stub_.get(), 1);
  EXPECT_TRUE(actor.WaitFor(5, [&] { return actor.welcome_.has_value(); }));

  // Cancelled by the client before any Hello: freed at once, not at the deadline.
  {
    std::vector<std::unique_ptr<AsyncSession>> more;
    for (int i = 0; i < 3; ++i) {
      more.push_back(std::make_unique<AsyncSession>(stub_.get(), 1, /*send_hello=*/false));
    }
    EXPECT_TRUE(WaitLiveStreams(4, 2));
  }
  EXPECT_TRUE(WaitLiveStreams(1, 0.5)) << "cancelled streams were not freed";
  EXPECT_EQ(Refusals("cancelled_before_hello"), 3);
}

// Every stream that ends (refused, cancelled before Hello, a session
// closed by its actor) is reported to the memory releaser; the service's
// background thread releases once the burst is over, and not again without
// a new burst.
TEST_F(FrontDoorTest, EndedStreamsAreReleasedOnceAfterTheBurst) {
  FrontDoorParams p;
  p.hello_timeout_s = 5;
  p.release_after_streams = 8;
  p.max_awaiting_hello_per_peer = 2;
  Start(p);
  {
    std::vector<std::unique_ptr<AsyncSession>> burst;
    for (int i = 0; i < 10; ++i) {
      burst.push_back(std::make_unique<AsyncSession>(stub_.get(), 1, /*send_hello=*/i < 2));
    }
    // 4 held (2 sessions, 2 awaiting Hello: the address's share), 6 refused
    // at once.
    ASSERT_TRUE(WaitLiveStreams(4, 5)) << service_->live_streams();
    ASSERT_TRUE(burst[0]->WaitFor(5, [&] { return burst[0]->welcome_.has_value(); }));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(releaser_->releases(), 0) << "released before min_ended streams ended";
  }
  ASSERT_TRUE(WaitLiveStreams(0, 5));
  for (int i = 0; i < 300 && releaser_->releases() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(releaser_->releases(), 1);
  EXPECT_EQ(release_calls_.load(), 1);
  // Fewer than 8 more: no second release.
  {
    AsyncSession one(stub_.get(), 1);
    ASSERT_TRUE(one.WaitFor(5, [&] { return one.welcome_.has_value(); }));
  }
  ASSERT_TRUE(WaitLiveStreams(0, 5));
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(release_calls_.load(), 1);
}

// Hello.capacity of 10^9 is clamped to 4 and both are in Welcome; a batch of
// more groups than that ends the call; a batch of invalid (empty) groups is
// answered group by group with a bounded number of log lines.
TEST_F(FrontDoorTest, CapacityIsClampedAndRejectLogsAreRateLimited) {
  FrontDoorParams p;
  p.max_policy_lag = 1;
  p.log_lines_per_s = 2;
  Start(p);
  AsyncSession a(stub_.get(), 1000000000);
  ASSERT_TRUE(a.WaitFor(5, [&] { return a.welcome_.has_value() && a.leases_.size() == 4; }));
  EXPECT_EQ(a.welcome_->max_capacity(), 4u);
  EXPECT_EQ(a.welcome_->capacity(), 4u);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(a.lease_count(), 4u);
  ActorMessage empty;
  for (int i = 0; i < 4; ++i) empty.mutable_group_batch()->add_groups();
  const double suppressed = metrics_.reject_logs_suppressed->Value();
  ASSERT_TRUE(a.Send(empty));
  ASSERT_TRUE(a.WaitFor(5, [&] { return a.acks_.size() == 4; }));
  for (const auto& ack : a.acks_) EXPECT_FALSE(ack.accepted());
  EXPECT_GE(metrics_.reject_logs_suppressed->Value(), suppressed + 2);

  ActorMessage five;
  for (int i = 0; i < 5; ++i) five.mutable_group_batch()->add_groups();
  a.Send(five);
  ASSERT_TRUE(a.WaitFor(5, [&] { return a.ended_; }));
  EXPECT_EQ(a.status_.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(Refusals("too_many_groups"), 1);
}

// A gzip-compressed call is refused (rlvr never compresses) and counted.
// (That it is refused before inflation: front_door_process_test's bomb.)
TEST_F(FrontDoorTest, CompressedCallsAreRefused) {
  Start({});
  grpc::ClientContext ctx;
  ctx.set_compression_algorithm(GRPC_COMPRESS_GZIP);
  auto stream = stub_->Session(&ctx);
  ActorMessage hello;
  hello.mutable_hello()->set_capacity(1);
  hello.mutable_hello()->set_actor_id(std::string(4 << 20, 'a'));  // 4 MiB, ~4 KB gzipped.
  stream->Write(hello);
  LearnerMessage m;
  EXPECT_FALSE(stream->Read(&m));
  const grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.error_code() == grpc::StatusCode::UNIMPLEMENTED ||
              status.error_code() == grpc::StatusCode::INTERNAL)
      << status.error_code() << " " << status.error_message();
  EXPECT_EQ(ingest_->Snapshot().sessions(), 0u);
  // gRPC core refused it; the handler tells it from a client's cancel by the
  // call's incoming encoding.
  for (int i = 0; i < 200 && Refusals("compressed") < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_EQ(Refusals("compressed"), 1);
  EXPECT_EQ(Refusals("cancelled_before_hello"), 0);
}

// A message above the transport limit (max_message_bytes 1 MiB here: limit
// 2 MiB) ends the call RESOURCE_EXHAUSTED and is counted as such, before
// Hello and after it; one between max_message_bytes and the limit is
// answered group by group (OVERSIZE) and the session goes on.
TEST_F(FrontDoorTest, OversizeMessagesAreRefusedAndCounted) {
  Start({});
  ASSERT_EQ(TransportLimitBytes(1 << 20), 2u << 20);
  {
    grpc::ClientContext ctx;
    auto stream = stub_->Session(&ctx);
    ActorMessage hello;
    hello.mutable_hello()->set_capacity(1);
    hello.mutable_hello()->set_actor_id(std::string(3 << 20, 'a'));
    stream->Write(hello);
    LearnerMessage m;
    EXPECT_FALSE(stream->Read(&m));
    const grpc::Status status = stream->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << status.error_message();
    EXPECT_NE(status.error_message().find("learner.max_message_bytes"), std::string::npos)
        << status.error_message();
  }
  EXPECT_TRUE(WaitLiveStreams(0, 5));
  EXPECT_EQ(Refusals("oversize_message"), 1);
  EXPECT_EQ(Refusals("cancelled_before_hello"), 0);

  AsyncSession a(stub_.get(), 2);
  ASSERT_TRUE(a.WaitFor(5, [&] { return a.leases_.size() == 2; }));
  std::vector<WorkLease> leases = a.TakeLeases();
  ActorMessage big = Answer({leases[0]}, 1);
  big.mutable_group_batch()->mutable_groups(0)->mutable_completions(0)->set_verifier_reason(
      std::string((1 << 20) + 1000, 'r'));  // Above max_message_bytes, below the limit.
  ASSERT_TRUE(a.Send(big));
  ASSERT_TRUE(a.WaitFor(5, [&] { return a.acks_.size() == 1; }));
  EXPECT_EQ(a.acks_[0].reason(), rlvr::v1::REJECT_REASON_OVERSIZE);
  ActorMessage huge = Answer({leases[1]}, 1);
  huge.mutable_group_batch()->mutable_groups(0)->mutable_completions(0)->set_verifier_reason(
      std::string(3 << 20, 'r'));
  a.Send(huge);
  ASSERT_TRUE(a.WaitFor(5, [&] { return a.ended_; }));
  EXPECT_EQ(a.status_.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED)
      << a.status_.error_message();
  EXPECT_EQ(Refusals("oversize_message"), 2);
  EXPECT_TRUE(WaitLiveStreams(0, 5));  // The ingest session closes when the call is done.
  EXPECT_EQ(ingest_->Snapshot().sessions(), 0u);
}

TEST(ClampDiagnosticTest, NonFiniteAndHugeValuesAreClampedAndFlagged) {
  bool clamped = false;
  EXPECT_EQ(ClampDiagnostic(0.5, &clamped), 0.5);
  EXPECT_FALSE(clamped);
  EXPECT_EQ(ClampDiagnostic(-1e29, &clamped), -1e29);
  EXPECT_FALSE(clamped);
  EXPECT_EQ(ClampDiagnostic(std::numeric_limits<double>::infinity(), &clamped), kDiagnosticLimit);
  EXPECT_TRUE(clamped);
  clamped = false;
  EXPECT_EQ(ClampDiagnostic(-std::numeric_limits<double>::infinity(), &clamped), -kDiagnosticLimit);
  EXPECT_TRUE(clamped);
  clamped = false;
  EXPECT_EQ(ClampDiagnostic(std::nan(""), &clamped), kDiagnosticLimit);
  EXPECT_TRUE(clamped);
  clamped = false;
  EXPECT_EQ(ClampDiagnostic(3e300, &clamped), kDiagnosticLimit);
  EXPECT_TRUE(clamped);
}

}  // namespace
}  // namespace rlvr::learner
