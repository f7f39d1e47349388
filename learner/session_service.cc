#include "learner/session_service.h"

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include <glog/logging.h>

#include <google/protobuf/arena.h>

#include "absl/strings/str_cat.h"
#include "common/grpc_util.h"

namespace rlvr::learner {

// Lock order: SessionServiceImpl::mu_ -> SessionReactor::mu_ -> Ingest.
// A reactor never calls into the service while holding its own mutex, and
// calls Ingest methods that may wake sessions (Submit, Return, CloseSession)
// without holding it.
class SessionReactor final
    : public grpc::ServerBidiReactor<rlvr::v1::ActorMessage, rlvr::v1::LearnerMessage> {
 public:
  SessionReactor(SessionServiceImpl* service, Ingest* ingest, std::string peer,
                 grpc::Status auth)
      : service_(service), ingest_(ingest), peer_(std::move(peer)) {
    if (!auth.ok()) {
      absl::MutexLock l(&mu_);
      RequestFinishLocked(std::move(auth));
      return;
    }
    ReadNext();
  }

  // Called under the service's mutex.
  void Wake() {
    absl::MutexLock l(&mu_);
    PumpLocked();
  }
  void EnqueueWeights(uint64_t version, uint64_t bytes) {
    absl::MutexLock l(&mu_);
    if (finishing_) return;
    rlvr::v1::LearnerMessage m;
    m.mutable_weights_available()->set_version(version);
    m.mutable_weights_available()->set_total_bytes(bytes);
    out_.push_back(std::move(m));
    PumpLocked();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The actor closed its side or the call is cancelled.
      CloseIngestSession();
      absl::MutexLock l(&mu_);
      RequestFinishLocked(grpc::Status::OK);
      return;
    }
    switch (in_->kind_case()) {
      case rlvr::v1::ActorMessage::kHello:
        HandleHello();
        return;
      case rlvr::v1::ActorMessage::kGroup: {
        if (session_ == 0) return FailBeforeHello();
        rlvr::v1::Ack ack = ingest_->Submit(
            session_, in_->group(),
            MessageBytesForLimit(in_->group(), ingest_->options().max_message_bytes));
        if (!ack.accepted()) {
          LOG(WARNING) << "session " << session_ << " (" << actor_id_ << "): lease "
                       << ack.lease_id() << " rejected "
                       << rlvr::v1::RejectReason_Name(ack.reason()) << ": " << ack.detail();
        }
        absl::MutexLock l(&mu_);
        rlvr::v1::LearnerMessage m;
        *m.mutable_ack() = std::move(ack);
        out_.push_back(std::move(m));
        PumpLocked();
        break;
      }
      case rlvr::v1::ActorMessage::kGroupBatch: {
        if (session_ == 0) return FailBeforeHello();
        rlvr::v1::LearnerMessage m;
        auto* acks = m.mutable_ack_batch()->mutable_acks();
        ingest_->SubmitBatch(session_, in_->group_batch(), acks);
        for (const rlvr::v1::Ack& ack : *acks) {
          if (ack.accepted()) continue;
          LOG(WARNING) << "session " << session_ << " (" << actor_id_ << "): lease "
                       << ack.lease_id() << " rejected "
                       << rlvr::v1::RejectReason_Name(ack.reason()) << ": " << ack.detail();
        }
        absl::MutexLock l(&mu_);
        out_.push_back(std::move(m));
        PumpLocked();
        break;
      }
      case rlvr::v1::ActorMessage::kReturnLeases: {
        if (session_ == 0) return FailBeforeHello();
        std::vector<uint64_t> ids(in_->return_leases().lease_ids().begin(),
                                  in_->return_leases().lease_ids().end());
        ingest_->Return(session_, ids);
        absl::MutexLock l(&mu_);
        PumpLocked();
        break;
      }
      default:
        if (session_ == 0) return FailBeforeHello();
        LOG(WARNING) << "session " << session_ << ": empty ActorMessage ignored";
        break;
    }
    ReadNext();
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock l(&mu_);
    writing_ = false;
    if (!ok) {
      write_failed_ = true;
      out_.clear();
    }
    PumpLocked();
  }

  void OnCancel() override {}

  void OnDone() override {
    service_->Unregister(this);
    CloseIngestSession();
    delete this;
  }

 private:
  void HandleHello() {
    const rlvr::v1::Hello& hello = in_->hello();
    if (session_ != 0) {
      LOG(WARNING) << "session " << session_ << ": second Hello ignored";
      ReadNext();
      return;
    }
    absl::StatusOr<uint64_t> id = ingest_->OpenSession(hello.capacity());
    if (!id.ok()) {
      LOG(WARNING) << "refusing session from " << peer_ << ": " << id.status();
      absl::MutexLock l(&mu_);
      RequestFinishLocked(ToGrpcStatus(id.status()));
      return;
    }
    actor_id_ = hello.actor_id().substr(0, 128);
    LOG(INFO) << "session " << *id << " opened: actor " << actor_id_ << " ("
              << hello.incarnation().substr(0, 64) << ") capacity " << hello.capacity()
              << " from " << peer_;
    {
      absl::MutexLock l(&mu_);
      session_ = *id;
      batch_messages_ = hello.batch_messages();
      rlvr::v1::LearnerMessage m;
      rlvr::v1::Welcome* w = m.mutable_welcome();
      w->set_session_id(absl::StrCat(*id));
      const IngestOptions& o = ingest_->options();
      w->set_latest_version(ingest_->Snapshot().latest_version);
      w->set_max_policy_lag(o.max_policy_lag);
      w->set_vocab_size(o.vocab_size);
      w->set_max_message_bytes(o.max_message_bytes);
      w->set_batch_messages(true);
      out_.push_back(std::move(m));
    }
    service_->Register(this);  // Also queues the newest WeightsAvailable.
    {
      absl::MutexLock l(&mu_);
      PumpLocked();
    }
    ReadNext();
  }

  // Parses the next message into a fresh arena message. Resetting the arena
  // frees the previous message (and everything it held) at once, so parsing
  // a RolloutBatch costs a few block allocations instead of one per field.
  void ReadNext() {
    arena_.Reset();
    in_ = google::protobuf::Arena::CreateMessage<rlvr::v1::ActorMessage>(&arena_);
    StartRead(in_);
  }

  static google::protobuf::ArenaOptions ArenaOptionsFor(char* block) {
    google::protobuf::ArenaOptions o;
    o.initial_block = block;
    o.initial_block_size = kArenaBlockBytes;
    o.start_block_size = kArenaBlockBytes;
    o.max_block_size = 1 << 20;
    return o;
  }

  void FailBeforeHello() {
    absl::MutexLock l(&mu_);
    RequestFinishLocked(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first ActorMessage must be Hello"));
  }

  void CloseIngestSession() {
    uint64_t s;
    {
      absl::MutexLock l(&mu_);
      s = session_;
      closed_ = true;
    }
    if (s != 0) ingest_->CloseSession(s);
  }

  void RequestFinishLocked(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finishing_) return;
    finishing_ = true;
    finish_status_ = std::move(status);
    PumpLocked();
  }

  // Starts the next write, granting leases first when there is room; or
  // finishes once the queue is drained.
  void PumpLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || finished_) return;
    if (!finishing_ && !closed_ && !write_failed_ && session_ != 0) {
      std::vector<rlvr::v1::WorkLease> leases = ingest_->Grant(session_);
      if (batch_messages_ && !leases.empty()) {
        // One message for all of them: one write and one read instead of n.
        rlvr::v1::LearnerMessage m;
        auto* batch = m.mutable_lease_batch()->mutable_leases();
        batch->Reserve(static_cast<int>(leases.size()));
        for (rlvr::v1::WorkLease& lease : leases) *batch->Add() = std::move(lease);
        out_.push_back(std::move(m));
      } else {
        for (rlvr::v1::WorkLease& lease : leases) {
          rlvr::v1::LearnerMessage m;
          *m.mutable_lease() = std::move(lease);
          out_.push_back(std::move(m));
        }
      }
    }
    if (!out_.empty() && !write_failed_) {
      current_ = std::move(out_.front());
      out_.pop_front();
      writing_ = true;
      // No buffer_hint here: a hinted write may not complete until a later
      // write flushes it, and this reactor keeps one write in flight.
      StartWrite(&current_);
      return;
    }
    if (finishing_) {
      finished_ = true;
      Finish(finish_status_);
    }
  }

  SessionServiceImpl* const service_;
  Ingest* const ingest_;
  const std::string peer_;
  // The message being read, on arena_; only touched by the read chain. The
  // arena keeps its first block (kArenaBlockBytes, enough for a typical
  // group) across messages.
  static constexpr size_t kArenaBlockBytes = 64 << 10;
  std::unique_ptr<char[]> arena_block_{new char[kArenaBlockBytes]};
  google::protobuf::Arena arena_{ArenaOptionsFor(arena_block_.get())};
  rlvr::v1::ActorMessage* in_ = nullptr;
  std::string actor_id_;       // Read chain only.

  absl::Mutex mu_;
  uint64_t session_ ABSL_GUARDED_BY(mu_) = 0;  // 0 until Hello is accepted.
  // Hello.batch_messages: leases may be sent as one LeaseBatch.
  bool batch_messages_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;    // Ingest session closed.
  std::deque<rlvr::v1::LearnerMessage> out_ ABSL_GUARDED_BY(mu_);
  rlvr::v1::LearnerMessage current_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status finish_status_ ABSL_GUARDED_BY(mu_);
};

SessionServiceImpl::SessionServiceImpl(Ingest* ingest, const TokenChecker* auth)
    : ingest_(ingest), auth_(auth) {
  ingest_->SetWakeCallback([this] { WakeAll(); });
}

SessionServiceImpl::~SessionServiceImpl() { ingest_->SetWakeCallback(nullptr); }

grpc::ServerBidiReactor<rlvr::v1::ActorMessage, rlvr::v1::LearnerMessage>*
SessionServiceImpl::Session(grpc::CallbackServerContext* context) {
  return new SessionReactor(this, ingest_, context->peer(),
                            auth_ != nullptr ? auth_->Check(*context) : grpc::Status::OK);
}

void SessionServiceImpl::Register(SessionReactor* r) {
  absl::MutexLock l(&mu_);
  reactors_.insert(r);
  if (latest_version_ > 0) r->EnqueueWeights(latest_version_, latest_bytes_);
}

void SessionServiceImpl::Unregister(SessionReactor* r) {
  absl::MutexLock l(&mu_);
  reactors_.erase(r);
}

void SessionServiceImpl::AnnounceWeights(uint64_t version, uint64_t total_bytes) {
  absl::MutexLock l(&mu_);
  latest_version_ = version;
  latest_bytes_ = total_bytes;
  for (SessionReactor* r : reactors_) r->EnqueueWeights(version, total_bytes);
}

void SessionServiceImpl::WakeAll() {
  absl::MutexLock l(&mu_);
  for (SessionReactor* r : reactors_) r->Wake();
}

int SessionServiceImpl::open_sessions() {
  absl::MutexLock l(&mu_);
  return static_cast<int>(reactors_.size());
}

}  // namespace rlvr::learner
