// The session thread of ActorImpl (actor/actor_impl.h).
//
// Contract: one session at a time, Hello -> Welcome -> read until the stream
// ends, then reconnect with backoff until Shutdown. The reader never runs
// model code and never blocks on anything but the stream; leases and acks go
// to the LeaseBook under mu_, answers go out through the session's Outbox,
// drained by one writer thread per session (the only thread that writes the
// stream). A session's leases are the book's to drop when it ends.
#include <glog/logging.h>

#include <algorithm>
#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "actor/actor_impl.h"
#include "actor/transport.h"
#include "common/net/auth.h"
#include "rlvr/v1/session.grpc.pb.h"

namespace rlvr::actor {

void ActorImpl::SessionLoop() {
  int failures = 0;
  bool first = true;
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (StoppingLocked()) break;
      if (!first) ++stats_.reconnects;
    }
    if (!first) metrics_.reconnects.Increment();
    first = false;
    failures = RunOneSession() ? 1 : failures + 1;
    const absl::Duration delay = Backoff(failures);
    absl::MutexLock lock(&mu_);
    const absl::Time until = absl::Now() + delay;
    while (!StoppingLocked() && !backoff_cv_.WaitWithDeadline(&mu_, until)) {
    }
    if (StoppingLocked()) break;
  }
  absl::MutexLock lock(&mu_);
  session_thread_done_ = true;
  done_cv_.SignalAll();
}

bool ActorImpl::RunOneSession() {
  auto ctx = std::make_shared<grpc::ClientContext>();
  rlvr::v1::ActorMessage hello_msg;
  rlvr::v1::Hello* hello = hello_msg.mutable_hello();
  {
    absl::MutexLock lock(&mu_);
    if (StoppingLocked()) return false;
    session_ctx_ = ctx;
    hello->set_have_version(slots_.newest_version());
  }
  AttachToken(ctx.get(), options_.auth_token);
  auto stream = OpenSession(session_channel_.get(), ctx.get());
  hello->set_actor_id(options_.actor_id);
  hello->set_incarnation(incarnation_);
  hello->set_capacity(capacity_);
  hello->set_batch_messages(true);
  rlvr::v1::LearnerMessage msg;
  bool welcomed =
      stream->Write(EncodeActorMessage(hello_msg)) && stream->Read(&msg) && msg.has_welcome();
  if (welcomed && msg.welcome().vocab_size() != 0 &&
      static_cast<int>(msg.welcome().vocab_size()) != vocab_size_) {
    LOG(ERROR) << "learner vocab_size " << msg.welcome().vocab_size() << " != actor's "
               << vocab_size_ << "; closing the session";
    welcomed = false;
  }
  if (!welcomed) {
    ctx->TryCancel();
    grpc::Status status = stream->Finish();
    LOG_EVERY_N(WARNING, 10) << "session with " << options_.learner_address
                             << " not established: " << status.error_code() << " "
                             << status.error_message();
    absl::MutexLock lock(&mu_);
    session_ctx_.reset();
    return false;
  }

  const rlvr::v1::Welcome welcome = msg.welcome();
  auto outbox = std::make_shared<Outbox>(static_cast<size_t>(2 * capacity_ + 16));
  uint64_t session;
  bool rewound = false;
  {
    absl::MutexLock lock(&mu_);
    if (welcome.latest_version() > 0 && welcome.latest_version() < slots_.newest_version()) {
      // The learner went back in time (resumed from an older checkpoint):
      // our weights are from a future it will never accept. Forget them and
      // fetch its newest version from scratch.
      rewound = true;
      slots_.Reset();
      policy_version_.store(0);
      latest_known_version_ = welcome.latest_version();
      metrics_.policy_version.Set(0);
      if (weight_ctx_) weight_ctx_->TryCancel();
    }
    session = book_.OpenSession();
    outbox_ = outbox;
    session_batches_ = welcome.batch_messages();
    session_max_message_bytes_ = welcome.max_message_bytes();
    latest_known_version_ = std::max(latest_known_version_, welcome.latest_version());
    ++stats_.sessions;
    // A shutdown that began while we were connecting closes this session at once.
    if (StoppingLocked()) outbox->Close(/*graceful=*/true);
    backoff_cv_.SignalAll();  // The learner is reachable: retry weights now.
  }
  if (rewound) {
    LOG(WARNING) << "learner's latest version " << welcome.latest_version()
                 << " is older than ours; dropped our weights to refetch";
  }
  metrics_.session_up.Set(1);
  UpdateHealth();
  LOG(INFO) << "actor session " << welcome.session_id() << " established with "
            << options_.learner_address << " (latest version " << welcome.latest_version()
            << ", max lag " << welcome.max_policy_lag() << ")";

  // The writer owns Write/WritesDone; this thread owns Read; Finish comes
  // after both (gRPC's sync stream allows one reader and one writer at once).
  std::thread writer([&stream, &ctx, outbox, pool = &group_pool_] {
    rlvr::v1::ActorMessage out;
    bool ok = true;
    while (ok && outbox->Pop(&out)) {
      ok = stream->Write(EncodeActorMessage(out));
      pool->Give(std::move(out));
    }
    if (ok && outbox->graceful()) {
      stream->WritesDone();
    } else if (!ok) {
      ctx->TryCancel();
    }
  });

  while (stream->Read(&msg)) {
    switch (msg.kind_case()) {
      case rlvr::v1::LearnerMessage::kLease:
        HandleLease(session, std::move(*msg.mutable_lease()));
        break;
      case rlvr::v1::LearnerMessage::kAck:
        HandleAck(msg.ack());
        break;
      case rlvr::v1::LearnerMessage::kLeaseBatch:
        for (rlvr::v1::WorkLease& lease : *msg.mutable_lease_batch()->mutable_leases()) {
          HandleLease(session, std::move(lease));
        }
        break;
      case rlvr::v1::LearnerMessage::kAckBatch:
        for (const rlvr::v1::Ack& ack : msg.ack_batch().acks()) HandleAck(ack);
        break;
      case rlvr::v1::LearnerMessage::kLeaseRevocation: {
        const auto& ids = msg.lease_revocation().lease_ids();
        absl::MutexLock lock(&mu_);
        const int revoked = book_.Revoke(session, std::vector<uint64_t>(ids.begin(), ids.end()));
        if (revoked > 0) {
          VLOG(1) << "learner revoked " << revoked << " leases at version "
                  << msg.lease_revocation().version();
          UpdateLeaseGaugeLocked();
          gen_cv_.SignalAll();
        }
        break;
      }
      case rlvr::v1::LearnerMessage::kWeightsAvailable: {
        absl::MutexLock lock(&mu_);
        latest_known_version_ = std::max(latest_known_version_, msg.weights_available().version());
        backoff_cv_.SignalAll();
        break;
      }
      default:
        break;
    }
  }

  {
    absl::MutexLock lock(&mu_);
    // The learner re-queues every lease of a broken session; the book drops ours.
    book_.CloseSession();
    outbox_.reset();
    session_ctx_.reset();
    UpdateLeaseGaugeLocked();
    gen_cv_.SignalAll();
  }
  outbox->Close(/*graceful=*/false);
  writer.join();
  grpc::Status status = stream->Finish();
  metrics_.session_up.Set(0);
  UpdateHealth();
  LOG(INFO) << "actor session ended: " << status.error_code() << " " << status.error_message();
  return true;
}

void ActorImpl::HandleLease(uint64_t session, rlvr::v1::WorkLease lease) {
  const uint64_t id = lease.lease_id();
  const uint64_t min_version = lease.min_policy_version();
  absl::MutexLock lock(&mu_);
  const LeaseBook::Admission admission = book_.Grant(session, std::move(lease), absl::Now());
  switch (admission.kind) {
    case LeaseBook::Admission::kGiveBack: {
      if (!StoppingLocked()) {
        LOG_EVERY_N(WARNING, 10) << "returning lease " << id << ": " << admission.reason;
      }
      SendGiveBackLocked(GiveBack{{id}, admission.reason});
      return;
    }
    case LeaseBook::Admission::kIgnored: {
      LOG_EVERY_N(WARNING, 10) << "ignoring lease " << id << ": " << admission.reason;
      return;
    }
    case LeaseBook::Admission::kQueued:
      break;
  }
  if (min_version > latest_known_version_) {
    // Evidence of a newer version: wake a weight watch waiting in backoff.
    latest_known_version_ = min_version;
    backoff_cv_.SignalAll();
  }
  UpdateLeaseGaugeLocked();
  gen_cv_.SignalAll();
}

void ActorImpl::HandleAck(const rlvr::v1::Ack& ack) {
  {
    absl::MutexLock lock(&mu_);
    book_.Ack(ack.lease_id());
    if (ack.accepted()) {
      ++stats_.groups_accepted;
      return;
    }
    ++stats_.groups_rejected;
  }
  metrics_.groups_rejected.Increment();
  LOG_EVERY_N(WARNING, 10) << "learner rejected group of lease " << ack.lease_id() << ": "
                           << rlvr::v1::RejectReason_Name(ack.reason()) << " " << ack.detail();
}

}  // namespace rlvr::actor
