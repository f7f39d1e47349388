// SessionService over real gRPC on 127.0.0.1:0: crafted groups are answered
// with the right RejectReason, counted, and the learner keeps working.
#include "learner/session_service.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <limits>
#include <set>
#include <thread>

#include "common/net/grpc_util.h"
#include "learner/rollout_decoder.h"
#include "learner/weight_publisher.h"

namespace rlvr::learner {
namespace {

using rlvr::v1::ActorMessage;
using rlvr::v1::LearnerMessage;
using rlvr::v1::RejectReason;
using rlvr::v1::WorkLease;

constexpr int64_t kMaxMessage = 4096;

// The parameter: true runs the session with batch_messages (groups sent in
// RolloutBatch, leases and acks received in LeaseBatch / AckBatch), false with
// one group, lease and ack per message (what an older actor does).
class SessionServiceTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    IngestOptions o;
    o.group_size = 2;
    o.sampling.max_new_tokens = 3;
    o.max_policy_lag = 1;
    o.buffer_groups = 8;
    // With lag 1 the credits cover the next two updates (rollout_buffer.h):
    // 8 leases, as many as the tests hold at once.
    o.groups_per_update = 4;
    o.lease_timeout_s = 3600;
    o.max_message_bytes = kMaxMessage;
    o.max_sessions = 2;
    o.vocab_size = 10;
    o.eos_id = 2;
    std::vector<LeasePrompt> prompts;
    for (int i = 0; i < 20; ++i) prompts.push_back({"p" + std::to_string(i), {1, 5}, "3"});
    ingest_ = std::make_unique<Ingest>(o, prompts, &metrics_);
    service_ = std::make_unique<SessionServiceImpl>(ingest_.get());
    GrpcServerOptions so;
    so.max_receive_bytes = kMaxMessage + (1 << 20);
    auto started = StartGrpcServer(so, {service_.get()});
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(started->server);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(started->port),
                                   grpc::InsecureChannelCredentials());
    stub_ = rlvr::v1::SessionService::NewStub(channel_);
    ingest_->Start();
    ingest_->Publish(1);
    service_->AnnounceWeights(1, 100);
  }
  void TearDown() override {
    ingest_->Stop();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }

  struct Client {
    std::unique_ptr<grpc::ClientContext> ctx;
    std::unique_ptr<grpc::ClientReaderWriter<ActorMessage, LearnerMessage>> stream;
    std::deque<WorkLease> leases;
    bool batch = false;  // Hello.batch_messages was set.
    void Collect(const LearnerMessage& m) {
      if (m.has_lease()) {
        EXPECT_FALSE(batch) << "a batch session got a single WorkLease";
        leases.push_back(m.lease());
      }
      if (m.has_lease_batch()) {
        EXPECT_TRUE(batch) << "an older actor got a LeaseBatch";
        for (const WorkLease& l : m.lease_batch().leases()) leases.push_back(l);
      }
      if (m.has_lease_revocation()) {
        // As an actor does: revoked leases are dropped (their prompts are re-queued).
        for (uint64_t id : m.lease_revocation().lease_ids()) {
          std::erase_if(leases, [id](const WorkLease& l) { return l.lease_id() == id; });
        }
      }
    }
    // Reads until an Ack (or AckBatch) arrives, collecting leases on the way.
    std::vector<rlvr::v1::Ack> ReadAcks() {
      LearnerMessage m;
      while (stream->Read(&m)) {
        Collect(m);
        if (m.has_ack()) return {m.ack()};
        if (m.has_ack_batch()) return {m.ack_batch().acks().begin(), m.ack_batch().acks().end()};
      }
      ADD_FAILURE() << "stream ended before an Ack";
      return {};
    }
    rlvr::v1::Ack ReadAck() {
      std::vector<rlvr::v1::Ack> acks = ReadAcks();
      EXPECT_EQ(acks.size(), 1u);
      return acks.empty() ? rlvr::v1::Ack() : acks[0];
    }
    // Sends `m` (one group) alone, or wrapped in a one-group RolloutBatch.
    bool Send(const ActorMessage& m) {
      if (!batch || !m.has_group()) return stream->Write(m);
      ActorMessage b;
      *b.mutable_group_batch()->add_groups() = m.group();
      return stream->Write(b);
    }
    WorkLease NextLease() {
      LearnerMessage m;
      while (leases.empty() && stream->Read(&m)) Collect(m);
      if (leases.empty()) {
        ADD_FAILURE() << "stream ended before a lease";
        return {};
      }
      WorkLease l = leases.front();
      leases.pop_front();
      return l;
    }
  };

  Client Connect(int capacity, LearnerMessage* welcome = nullptr) {
    Client c;
    c.batch = GetParam();
    c.ctx = std::make_unique<grpc::ClientContext>();
    c.ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    c.stream = stub_->Session(c.ctx.get());
    ActorMessage hello;
    hello.mutable_hello()->set_actor_id("test");
    hello.mutable_hello()->set_incarnation("abc");
    hello.mutable_hello()->set_capacity(capacity);
    hello.mutable_hello()->set_batch_messages(c.batch);
    EXPECT_TRUE(c.stream->Write(hello));
    LearnerMessage m;
    if (c.stream->Read(&m)) {
      EXPECT_TRUE(m.has_welcome());
      if (welcome != nullptr) *welcome = m;
    }
    return c;
  }

  static ActorMessage Group(const WorkLease& l, uint64_t version) {
    ActorMessage m;
    auto* g = m.mutable_group();
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
    return m;
  }

  // Sends a batch of 8 groups larger than an HTTP/2 frame, so that it
  // arrives in several slices, and expects every group accepted. With
  // `declined`, one group's reason is UTF-8 but not ASCII, which the
  // decoder leaves to protobuf.
  void ExpectBatchInManySlicesAccepted(bool declined) {
    Client c = Connect(8);
    ActorMessage batch;
    for (int i = 0; i < 8; ++i) {
      ActorMessage m = Group(c.NextLease(), 1);
      // ~1.9 KB of reason per completion: ~3.9 KB per group (limit 4 KiB), ~31 KB in all.
      for (auto& comp : *m.mutable_group()->mutable_completions()) {
        comp.set_verifier_reason(std::string(1900, 'r'));
      }
      if (declined && i == 5) {
        m.mutable_group()->mutable_completions(0)->set_verifier_reason("r\xc3\xa9ponse");
      }
      *batch.mutable_group_batch()->add_groups() = m.group();
    }
    ASSERT_GT(batch.ByteSizeLong(), 16384u);  // More than one HTTP/2 DATA frame.
    std::vector<ReceivedGroup> slots;
    size_t count;
    ASSERT_EQ(DecodeRolloutMessage(batch.SerializeAsString(), {2, 8}, &slots, &count),
              declined ? DecodeOutcome::kDecline : DecodeOutcome::kBatch);
    ASSERT_TRUE(c.stream->Write(batch));
    std::vector<rlvr::v1::Ack> acks = c.ReadAcks();
    ASSERT_EQ(acks.size(), 8u);
    for (int i = 0; i < 8; ++i) {
      EXPECT_TRUE(acks[i].accepted()) << acks[i].detail();
      EXPECT_EQ(acks[i].lease_id(), batch.group_batch().groups(i).lease_id());
    }
    EXPECT_EQ(metrics_.groups_accepted->Value(), 8);
  }

  void ExpectRejected(Client& c, const ActorMessage& m, RejectReason reason) {
    const double before = metrics_.Rejected(reason).Value();
    ASSERT_TRUE(c.Send(m));
    rlvr::v1::Ack ack = c.ReadAck();
    EXPECT_FALSE(ack.accepted());
    EXPECT_EQ(ack.reason(), reason)
        << rlvr::v1::RejectReason_Name(ack.reason()) << " " << ack.detail();
    EXPECT_EQ(ack.lease_id(), m.group().lease_id());
    EXPECT_FALSE(ack.detail().empty());
    EXPECT_EQ(metrics_.Rejected(reason).Value(), before + 1);
  }

  void ExpectAccepted(Client& c, const ActorMessage& m) {
    ASSERT_TRUE(c.Send(m));
    rlvr::v1::Ack ack = c.ReadAck();
    EXPECT_TRUE(ack.accepted()) << ack.detail();
  }

  LearnerMetrics metrics_{std::make_shared<prometheus::Registry>()};
  std::unique_ptr<Ingest> ingest_;
  std::unique_ptr<SessionServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<rlvr::v1::SessionService::Stub> stub_;
};

// Tests of RolloutBatch itself: instantiated for batch sessions only.
class SessionServiceBatchTest : public SessionServiceTest {};

TEST_P(SessionServiceTest, WelcomeWeightsAndLeases) {
  LearnerMessage welcome;
  Client c = Connect(2, &welcome);
  EXPECT_EQ(welcome.welcome().latest_version(), 1u);
  EXPECT_EQ(welcome.welcome().max_policy_lag(), 1u);
  EXPECT_EQ(welcome.welcome().vocab_size(), 10u);
  EXPECT_EQ(welcome.welcome().max_message_bytes(), static_cast<uint64_t>(kMaxMessage));
  EXPECT_TRUE(welcome.welcome().batch_messages());
  LearnerMessage m;
  bool weights = false;
  while ((!weights || c.leases.size() < 2) && c.stream->Read(&m)) {
    weights = weights || (m.has_weights_available() && m.weights_available().version() == 1);
    c.Collect(m);
  }
  EXPECT_TRUE(weights);
  EXPECT_EQ(c.leases.size(), 2u);
  c.ctx->TryCancel();
}

TEST_P(SessionServiceTest, EveryRejectReasonIsAnsweredAndCountedAndTrainingContinues) {
  Client c = Connect(8);
  // Unknown lease.
  WorkLease l = c.NextLease();
  WorkLease fake = l;
  fake.set_lease_id(999999);
  ExpectRejected(c, Group(fake, 1), rlvr::v1::REJECT_REASON_UNKNOWN_LEASE);
  // Accepted, then duplicate.
  ExpectAccepted(c, Group(l, 1));
  ExpectRejected(c, Group(l, 1), rlvr::v1::REJECT_REASON_DUPLICATE);
  // Expired.
  l = c.NextLease();
  uint64_t cut = l.lease_id();
  for (const WorkLease& h : c.leases) cut = std::max(cut, h.lease_id());
  ingest_->ExpireLeases(absl::Now() + absl::Hours(2));  // Expires every lease held.
  ExpectRejected(c, Group(l, 1), rlvr::v1::REJECT_REASON_EXPIRED_LEASE);
  std::erase_if(c.leases, [cut](const WorkLease& h) { return h.lease_id() <= cut; });
  // Wrong group size.
  ActorMessage m = Group(c.NextLease(), 1);
  m.mutable_group()->mutable_completions()->RemoveLast();
  ExpectRejected(c, m, rlvr::v1::REJECT_REASON_WRONG_GROUP_SIZE);
  // Token out of vocabulary (and negative).
  m = Group(c.NextLease(), 1);
  m.mutable_group()->mutable_completions(1)->set_token_ids(0, 10);
  ExpectRejected(c, m, rlvr::v1::REJECT_REASON_TOKEN_OUT_OF_VOCAB);
  m = Group(c.NextLease(), 1);
  m.mutable_group()->mutable_completions(0)->set_token_ids(1, -1);
  ExpectRejected(c, m, rlvr::v1::REJECT_REASON_TOKEN_OUT_OF_VOCAB);
  // Lengths: fewer log-probs, empty completion, too long, wrong prompt id.
  m = Group(c.NextLease(), 1);
  m.mutable_group()->mutable_completions(0)->mutable_behaviour_logprobs()->RemoveLast();
  ExpectRejected(c, m, rlvr::v1::REJECT_REASON_LENGTH_MISMATCH);
  m = Group(c.NextLease(), 1);
  m.mutable_group()->mutable_completions(1)->clear_token_ids();
  m.mutable_group()->mutable_completions(1)->clear_behaviour_logprobs();
  ExpectRejected(c, m, rlvr::v1::REJECT_REASON_LENGTH_MISMATCH);
  m = Group(c.NextLease(), 1);
  for (int i = 0; i < 2; ++i) {
    m.mutable_group()->mutable_completions(0)->add_token_ids(4);
    m.mutable_group()->mutable_completions(0)->add_behaviour_logprobs(-0.1f);
  }
  ExpectRejected(c, m, rlvr::v1::REJECT_REASON_LENGTH_MISMATCH);
  m = Group(c.NextLease(), 1);
  m.mutable_group()->set_prompt_id("other");
  ExpectRejected(c, m, rlvr::v1::REJECT_REASON_LENGTH_MISMATCH);
  // Non-finite log-prob, positive log-prob, NaN reward.
  m = Group(c.NextLease(), 1);
  m.mutable_group()->mutable_completions(0)->set_behaviour_logprobs(
      0, std::numeric_limits<float>::quiet_NaN());
  ExpectRejected(c, m, rlvr::v1::REJECT_REASON_NON_FINITE);
  m = Group(c.NextLease(), 1);
  m.mutable_group()->mutable_completions(0)->set_behaviour_logprobs(1, 0.5f);
  ExpectRejected(c, m, rlvr::v1::REJECT_REASON_NON_FINITE);
  m = Group(c.NextLease(), 1);
  m.mutable_group()->mutable_completions(1)->set_reward(std::numeric_limits<float>::infinity());
  ExpectRejected(c, m, rlvr::v1::REJECT_REASON_NON_FINITE);
  // Reward out of range.
  m = Group(c.NextLease(), 1);
  m.mutable_group()->mutable_completions(1)->set_reward(-0.5f);
  ExpectRejected(c, m, rlvr::v1::REJECT_REASON_REWARD_OUT_OF_RANGE);
  // Stale / future versions.
  ingest_->Publish(3);
  m = Group(c.NextLease(), 1);
  ExpectRejected(c, m, rlvr::v1::REJECT_REASON_STALE_VERSION);
  m = Group(c.NextLease(), 7);
  ExpectRejected(c, m, rlvr::v1::REJECT_REASON_STALE_VERSION);
  // Oversize: above max_message_bytes but below the transport limit.
  m = Group(c.NextLease(), 3);
  m.mutable_group()->mutable_completions(0)->set_verifier_reason(std::string(2 * kMaxMessage, 'x'));
  ExpectRejected(c, m, rlvr::v1::REJECT_REASON_OVERSIZE);
  // The session still works: a valid group is accepted.
  ExpectAccepted(c, Group(c.NextLease(), 3));
  EXPECT_EQ(ingest_->Snapshot().groups_accepted(), 2u);
  EXPECT_EQ(ingest_->Snapshot().groups_rejected(), 17u);
  c.ctx->TryCancel();
}

TEST_P(SessionServiceTest, ExcessSessionsAreRefusedAndDisconnectRequeues) {
  Client a = Connect(3);
  WorkLease first = a.NextLease();
  LearnerMessage m;
  // A stream that does not start with Hello is refused (and counted).
  grpc::ClientContext ctx2;
  auto bad = stub_->Session(&ctx2);
  bad->Write(Group(first, 1));
  EXPECT_FALSE(bad->Read(&m));
  EXPECT_EQ(bad->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(metrics_.CallRefused("message_before_hello").Value(), 1);
  for (int i = 0; i < 500 && service_->live_streams() > 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  Client b = Connect(1);
  // A third session is refused with RESOURCE_EXHAUSTED, before its Hello
  // is read: streams count against max_sessions from their start.
  grpc::ClientContext ctx;
  auto stream = stub_->Session(&ctx);
  ActorMessage hello;
  hello.mutable_hello()->set_capacity(1);
  stream->Write(hello);
  EXPECT_FALSE(stream->Read(&m));
  EXPECT_EQ(stream->Finish().error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(metrics_.CallRefused("session_limit").Value(), 1);

  // Kill session a: its 3 leases come back.
  const double reissued = metrics_.leases_reissued->Value();
  a.ctx->TryCancel();
  for (int i = 0; i < 200 && metrics_.leases_reissued->Value() < reissued + 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(metrics_.leases_reissued->Value(), reissued + 3);
  // b (capacity 1) gets its own lease, answers it, then receives the re-queued prompt.
  WorkLease lb = b.NextLease();
  ExpectAccepted(b, Group(lb, 1));
  WorkLease next = b.NextLease();
  EXPECT_EQ(next.prompt_id(), first.prompt_id());
  b.ctx->TryCancel();
}

// A RolloutBatch with bad groups among good ones: every group gets its own Ack
// in order, each bad one is rejected alone and counted by reason, the good
// ones are buffered, and sending the batch again accepts nothing twice.
TEST_P(SessionServiceBatchTest, MixedBatchIsJudgedPerGroupAndExactlyOnce) {
  Client c = Connect(8);
  std::vector<WorkLease> leases;
  for (int i = 0; i < 6; ++i) leases.push_back(c.NextLease());
  ActorMessage batch;
  auto* groups = batch.mutable_group_batch()->mutable_groups();
  for (const WorkLease& l : leases) *groups->Add() = Group(l, 1).group();
  groups->Mutable(1)->mutable_completions(0)->set_token_ids(0, 10);
  groups->Mutable(3)->mutable_completions(1)->set_reward(2.0f);
  groups->Mutable(4)->set_lease_id(424242);
  const double vocab = metrics_.Rejected(rlvr::v1::REJECT_REASON_TOKEN_OUT_OF_VOCAB).Value();
  const double range = metrics_.Rejected(rlvr::v1::REJECT_REASON_REWARD_OUT_OF_RANGE).Value();
  const double unknown = metrics_.Rejected(rlvr::v1::REJECT_REASON_UNKNOWN_LEASE).Value();
  ASSERT_TRUE(c.stream->Write(batch));
  std::vector<rlvr::v1::Ack> acks = c.ReadAcks();
  ASSERT_EQ(acks.size(), 6u);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(acks[i].lease_id(), groups->Get(i).lease_id());
  EXPECT_TRUE(acks[0].accepted());
  EXPECT_EQ(acks[1].reason(), rlvr::v1::REJECT_REASON_TOKEN_OUT_OF_VOCAB);
  EXPECT_TRUE(acks[2].accepted());
  EXPECT_EQ(acks[3].reason(), rlvr::v1::REJECT_REASON_REWARD_OUT_OF_RANGE);
  EXPECT_EQ(acks[4].reason(), rlvr::v1::REJECT_REASON_UNKNOWN_LEASE);
  EXPECT_TRUE(acks[5].accepted());
  EXPECT_EQ(metrics_.Rejected(rlvr::v1::REJECT_REASON_TOKEN_OUT_OF_VOCAB).Value(), vocab + 1);
  EXPECT_EQ(metrics_.Rejected(rlvr::v1::REJECT_REASON_REWARD_OUT_OF_RANGE).Value(), range + 1);
  EXPECT_EQ(metrics_.Rejected(rlvr::v1::REJECT_REASON_UNKNOWN_LEASE).Value(), unknown + 1);
  EXPECT_EQ(ingest_->Snapshot().groups_accepted(), 3u);

  // The same batch again: the accepted groups are duplicates, nothing is buffered twice.
  const double dup = metrics_.Rejected(rlvr::v1::REJECT_REASON_DUPLICATE).Value();
  ASSERT_TRUE(c.stream->Write(batch));
  acks = c.ReadAcks();
  ASSERT_EQ(acks.size(), 6u);
  for (const rlvr::v1::Ack& a : acks) EXPECT_FALSE(a.accepted());
  EXPECT_EQ(acks[0].reason(), rlvr::v1::REJECT_REASON_DUPLICATE);
  EXPECT_EQ(acks[5].reason(), rlvr::v1::REJECT_REASON_DUPLICATE);
  EXPECT_EQ(metrics_.Rejected(rlvr::v1::REJECT_REASON_DUPLICATE).Value(), dup + 3);
  EXPECT_EQ(ingest_->Snapshot().groups_accepted(), 3u);

  // The rejected groups' prompts were re-queued and come back as new leases
  // (in one LeaseBatch), together with fresh credit for the accepted ones.
  WorkLease again = c.NextLease();
  EXPECT_GT(again.lease_id(), leases.back().lease_id());
  c.ctx->TryCancel();
}

INSTANTIATE_TEST_SUITE_P(SingleAndBatch, SessionServiceTest, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Batch" : "Single";
                         });
INSTANTIATE_TEST_SUITE_P(Batch, SessionServiceBatchTest, ::testing::Values(true),
                         [](const ::testing::TestParamInfo<bool>&) {
                           return std::string("Batch");
                         });

// The decoder declines what it does not read itself (here a verifier
// reason that is UTF-8 but not ASCII): protobuf parses it and the group is
// judged as any other. Bytes that are no ActorMessage end the call with
// INVALID_ARGUMENT, and the session's leases go back to the queue.
TEST_P(SessionServiceTest, DeclinedMessagesAreParsedAndMalformedBytesEndTheCall) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  const grpc::internal::RpcMethod method("/rlvr.v1.SessionService/Session",
                                         grpc::internal::RpcMethod::BIDI_STREAMING);
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, LearnerMessage>> raw(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, LearnerMessage>::Create(
          channel_.get(), method, &ctx));
  auto write = [&](const std::string& bytes) {
    grpc::Slice slice(bytes);
    grpc::ByteBuffer buffer(&slice, 1);
    return raw->Write(buffer);
  };
  ActorMessage hello;
  hello.mutable_hello()->set_actor_id("raw");
  hello.mutable_hello()->set_capacity(2);
  hello.mutable_hello()->set_batch_messages(GetParam());
  ASSERT_TRUE(write(hello.SerializeAsString()));
  std::deque<WorkLease> leases;
  LearnerMessage m;
  while (leases.size() < 2 && raw->Read(&m)) {
    if (m.has_lease()) leases.push_back(m.lease());
    for (const WorkLease& l : m.lease_batch().leases()) leases.push_back(l);
  }
  ASSERT_EQ(leases.size(), 2u);

  ActorMessage group = Group(leases[0], 1);
  group.mutable_group()->mutable_completions(0)->set_verifier_reason("r\xc3\xa9ponse");
  std::vector<ReceivedGroup> slots;
  size_t count;
  ASSERT_EQ(DecodeRolloutMessage(group.SerializeAsString(), {2, 2}, &slots, &count),
            DecodeOutcome::kDecline);
  ActorMessage batch;
  *batch.mutable_group_batch()->add_groups() = group.group();
  ASSERT_TRUE(write((GetParam() ? batch : group).SerializeAsString()));
  bool acked = false;
  while (!acked && raw->Read(&m)) {
    for (const rlvr::v1::Ack& ack : m.ack_batch().acks()) {
      EXPECT_TRUE(ack.accepted()) << ack.detail();
      acked = true;
    }
    if (m.has_ack()) {
      EXPECT_TRUE(m.ack().accepted()) << m.ack().detail();
      acked = true;
    }
  }
  ASSERT_TRUE(acked);
  EXPECT_EQ(metrics_.groups_accepted->Value(), 1);

  // A length past the end of the message.
  ASSERT_TRUE(write(std::string("\x12\x09\x22\x01", 4)));
  while (raw->Read(&m)) {
  }
  const grpc::Status status = raw->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("no rlvr.v1.ActorMessage"), std::string::npos)
      << status.error_message();

  // The unanswered lease was re-queued, and the learner goes on.
  for (int i = 0; i < 3000 && ingest_->Snapshot().leases_outstanding() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(ingest_->Snapshot().leases_outstanding(), 0u);
  EXPECT_GE(ingest_->Snapshot().leases_reissued(), 1u);  // leases[1], and any granted since.
  Client next = Connect(2);
  ExpectAccepted(next, Group(next.NextLease(), 1));
}

// A batch larger than an HTTP/2 frame arrives in several slices, which the
// session decodes in place (a group that spans two is joined alone): every
// group is judged as if sent alone.
TEST_P(SessionServiceBatchTest, BatchInManySlicesIsDecodedWhole) {
  ExpectBatchInManySlicesAccepted(/*declined=*/false);
}

// The same with a group the decoder declines: the session joins the slices
// for protobuf, and every group is judged as if the decoder had read it.
TEST_P(SessionServiceBatchTest, DeclinedBatchInManySlicesIsParsedWhole) {
  ExpectBatchInManySlicesAccepted(/*declined=*/true);
}

// A RolloutBatch of more groups than the session's capacity (it can hold no
// more leases than that) ends the call before anything in it is judged; its
// leases go back to the queue.
TEST_P(SessionServiceBatchTest, BatchOfMoreGroupsThanTheCapacityEndsTheCall) {
  Client c = Connect(2);
  WorkLease a = c.NextLease();
  WorkLease b = c.NextLease();
  ActorMessage batch;
  for (const WorkLease& l : {a, b, a})
    *batch.mutable_group_batch()->add_groups() = Group(l, 1).group();
  ASSERT_TRUE(c.stream->Write(batch));
  LearnerMessage m;
  while (c.stream->Read(&m)) EXPECT_FALSE(m.has_ack_batch()) << "no group may be judged";
  const grpc::Status status = c.stream->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("more than 2 groups"), std::string::npos)
      << status.error_message();
  EXPECT_EQ(metrics_.groups_accepted->Value(), 0);
  for (int i = 0; i < 3000 && ingest_->Snapshot().leases_outstanding() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_EQ(ingest_->Snapshot().leases_outstanding(), 0u);
  EXPECT_GE(ingest_->Snapshot().leases_reissued(), 2u);
}

}  // namespace
}  // namespace rlvr::learner
