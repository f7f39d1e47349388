#include "learner/session_service.h"

#include <glog/logging.h>
#include <google/protobuf/arena.h>
#include <grpcpp/support/byte_buffer.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/net/grpc_util.h"
#include "learner/rollout_decoder.h"

// Exported by gRPC core (src/core/lib/surface/call_test_only.h) but not in its
// installed headers: the encoding of the call's incoming messages. It is the
// one way a handler can tell that core refused its call for compression
// (the grpc-encoding header is consumed by core, and the refusal reaches the
// handler as a plain cancellation). Weak: with a gRPC that lacks it, such
// refusals count as cancelled_before_hello.
grpc_compression_algorithm grpc_call_test_only_get_compression_algorithm(grpc_call* call)
    __attribute__((weak));

namespace rlvr::learner {
namespace {

// Whether the call's client compressed its messages (see above).
bool IncomingCompressed(grpc::CallbackServerContext* context) {
  if (grpc_call_test_only_get_compression_algorithm == nullptr || context->c_call() == nullptr) {
    return false;
  }
  return grpc_call_test_only_get_compression_algorithm(context->c_call()) != GRPC_COMPRESS_NONE;
}

}  // namespace

// Lock order: SessionServiceImpl::mu_ -> SessionReactor::mu_ -> Ingest.
// A reactor never calls into the service while holding its own mutex, and
// calls Ingest methods that may wake sessions (Submit, Return, CloseSession)
// without holding it.
class SessionReactor final : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  SessionReactor(SessionServiceImpl* service, Ingest* ingest, grpc::CallbackServerContext* context)
      : service_(service),
        ingest_(ingest),
        context_(context),
        peer_(context->peer()),
        max_receive_bytes_(TransportLimitBytes(ingest->options().max_message_bytes)) {}

  // Starts reading, or ends the call at once with `refusal`.
  void Start(grpc::Status refusal) {
    if (!refusal.ok()) {
      absl::MutexLock l(&mu_);
      RequestFinishLocked(std::move(refusal));
      return;
    }
    ReadNext();
  }

  // Called under the service's mutex: ends the call if Hello has not been
  // accepted yet, counting the refusal before the status can reach the client.
  void HelloTimeout(double timeout_s) {
    absl::MutexLock l(&mu_);
    if (session_ != 0 || finishing_) return;
    service_->Refused("hello_timeout");
    RequestFinishLocked(
        grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                     absl::StrCat("no Hello within ", timeout_s, " s (learner.hello_timeout_s)")));
  }
  // Called under the service's mutex: the pool of streams awaiting Hello was
  // full and this one's address held the most of them.
  void Displaced(const std::string& by) {
    absl::MutexLock l(&mu_);
    if (session_ != 0 || finishing_) return;
    service_->Refused("displaced_before_hello");
    RequestFinishLocked(grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("no Hello yet, and the streams awaiting Hello are full "
                     "(learner.max_awaiting_hello); this address held the most, a stream from ",
                     by, " took its place")));
  }
  // Called under the service's mutex: the ingest closed the session.
  void Evicted(const std::string& why) {
    absl::MutexLock l(&mu_);
    LOG(WARNING) << "session " << session_ << " (" << peer_ << "): ending the call: " << why;
    RequestFinishLocked(grpc::Status(grpc::StatusCode::UNAVAILABLE, why));
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
    out_.push_back(Serialize(m));
    PumpLocked();
  }

  // Called under the service's mutex: tells the actor to drop revoked leases.
  void EnqueueRevocation(const std::vector<uint64_t>& lease_ids, uint64_t version) {
    absl::MutexLock l(&mu_);
    if (finishing_) return;
    rlvr::v1::LearnerMessage m;
    rlvr::v1::LeaseRevocation* r = m.mutable_lease_revocation();
    r->mutable_lease_ids()->Add(lease_ids.begin(), lease_ids.end());
    r->set_version(version);
    out_.push_back(Serialize(m));
    PumpLocked();
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The actor closed its side or the call is cancelled.
      CloseIngestSession();
      absl::MutexLock l(&mu_);
      // Judged in OnDone, when IsCancelled() is final.
      ended_before_hello_ = session_ == 0 && !finishing_;
      RequestFinishLocked(grpc::Status::OK);
      return;
    }
    if (const size_t length = in_.Length(); length > max_receive_bytes_) {
      // Refused before its bytes are read (gRPC holds them already).
      service_->Refused("oversize_message");
      if (service_->LogAllowed()) {
        LOG(WARNING) << "session " << session_ << " (" << peer_ << "): a message of " << length
                     << " bytes, above the limit of " << max_receive_bytes_ << "; ending the call";
      }
      EndCall(grpc::Status(
          grpc::StatusCode::RESOURCE_EXHAUSTED,
          absl::StrCat("message of ", length, " bytes above the learner's limit of ",
                       max_receive_bytes_, " (learner.max_message_bytes + max(1 MiB, 1/8))")));
      return;
    }
    size_t count = 0;
    const DecodeOutcome outcome =
        DecodeRolloutMessage(WirePieces(), DecodeLimits{ingest_->options().group_size, capacity_},
                             &received_, &count, &wire_);
    switch (outcome) {
      case DecodeOutcome::kGroup:
      case DecodeOutcome::kBatch:
        if (session_ == 0) {
          FailBeforeHello();
          return;
        }
        SubmitReceived(count, /*batch=*/outcome == DecodeOutcome::kBatch);
        break;
      case DecodeOutcome::kDecline:
        if (!HandleParsed(JoinedWire())) return;
        break;
      case DecodeOutcome::kTooManyGroups: {
        if (session_ == 0) {
          FailBeforeHello();
          return;
        }
        service_->Refused("too_many_groups");
        LOG(WARNING) << "session " << session_ << " (" << actor_id_ << "): a RolloutBatch of more "
                     << "than " << capacity_ << " groups; ending the call";
        EndCall(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                             absl::StrCat("a RolloutBatch of more than ", capacity_,
                                          " groups: the session holds at most Hello.capacity = ",
                                          capacity_, " leases")));
        return;
      }
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
    if (ended_before_hello_ && context_->IsCancelled()) {
      // Cancelled before Hello, not by us: gRPC core refused a compressed
      // call (only identity is enabled), or the client gave up or the
      // connection broke.
      service_->Refused(IncomingCompressed(context_) ? "compressed" : "cancelled_before_hello");
    }
    service_->Unregister(this);
    CloseIngestSession();
    delete this;
  }

 private:
  // The message's bytes as gRPC holds them: its slices, in order (a large
  // message arrives in several). The decoder reads them in place.
  std::span<const std::string_view> WirePieces() {
    in_slices_.clear();
    in_pieces_.clear();
    (void)in_.Dump(&in_slices_);
    for (const grpc::Slice& slice : in_slices_) {
      in_pieces_.emplace_back(reinterpret_cast<const char*>(slice.begin()), slice.size());
    }
    return in_pieces_;
  }

  // The same bytes contiguous, for protobuf: the one slice, or the slices
  // copied into wire_.
  std::string_view JoinedWire() {
    if (in_pieces_.size() == 1) return in_pieces_[0];
    wire_.clear();
    for (const std::string_view piece : in_pieces_) wire_.append(piece);
    return wire_;
  }

  // Groups decoded into received_[0, count): one Ack (a single group) or
  // one AckBatch.
  void SubmitReceived(size_t count, bool batch) {
    // The answer is built on an arena (no allocation per Ack once its first
    // block has grown to a batch) and serialized here, outside the lock.
    if (ack_arena_block_ == nullptr) ack_arena_block_.reset(new char[kAnswerBlockBytes]);
    google::protobuf::Arena arena(ArenaOptionsFor(ack_arena_block_.get(), kAnswerBlockBytes));
    auto* m = google::protobuf::Arena::CreateMessage<rlvr::v1::LearnerMessage>(&arena);
    auto* acks = m->mutable_ack_batch()->mutable_acks();
    ingest_->SubmitReceived(session_, &received_, count, acks);
    for (const rlvr::v1::Ack& ack : *acks) LogRejects(ack);
    if (!batch) {
      rlvr::v1::Ack ack = std::move((*acks)[0]);
      *m->mutable_ack() = std::move(ack);
    }
    grpc::ByteBuffer answer = Serialize(*m);
    absl::MutexLock l(&mu_);
    out_.push_back(std::move(answer));
    PumpLocked();
  }

  // A message the decoder declined, parsed with protobuf into a fresh arena
  // message (resetting the arena frees the previous one at once). False
  // when the call is ending.
  bool HandleParsed(std::string_view wire) {
    if (parse_arena_ == nullptr) parse_arena_ = std::make_unique<ParseArena>();
    parse_arena_->arena.Reset();
    rlvr::v1::ActorMessage* in =
        google::protobuf::Arena::CreateMessage<rlvr::v1::ActorMessage>(&parse_arena_->arena);
    if (!in->ParseFromArray(wire.data(), static_cast<int>(wire.size()))) {
      service_->Refused("malformed");
      LOG(WARNING) << "session " << session_ << " from " << peer_ << ": " << wire.size()
                   << " bytes that are no ActorMessage; ending the call";
      return EndCall(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                  absl::StrCat("malformed message: ", wire.size(),
                                               " bytes that are no rlvr.v1.ActorMessage")));
    }
    switch (in->kind_case()) {
      case rlvr::v1::ActorMessage::kHello:
        return HandleHello(in->hello());
      case rlvr::v1::ActorMessage::kGroup:
      case rlvr::v1::ActorMessage::kGroupBatch: {
        // Converted into the decoder's slots and answered as decoded groups.
        if (session_ == 0) return FailBeforeHello();
        const bool batch = in->kind_case() == rlvr::v1::ActorMessage::kGroupBatch;
        const size_t n = batch ? static_cast<size_t>(in->group_batch().groups_size()) : 1;
        if (received_.size() < n) received_.resize(n);
        for (size_t i = 0; i < n; ++i) {
          ingest_->ConvertParsed(
              batch ? in->group_batch().groups(static_cast<int>(i)) : in->group(), &received_[i]);
        }
        SubmitReceived(n, batch);
        return true;
      }
      case rlvr::v1::ActorMessage::kReturnLeases: {
        if (session_ == 0) return FailBeforeHello();
        std::vector<uint64_t> ids(in->return_leases().lease_ids().begin(),
                                  in->return_leases().lease_ids().end());
        ingest_->Return(session_, ids);
        absl::MutexLock l(&mu_);
        PumpLocked();
        return true;
      }
      default:
        if (session_ == 0) return FailBeforeHello();
        if (service_->LogAllowed()) {
          LOG(WARNING) << "session " << session_ << ": empty ActorMessage ignored";
        }
        return true;
    }
  }

  // Rate limited across sessions (LogAllowed): a batch of a thousand
  // invalid groups costs a few lines; the counters have every rejection.
  void LogRejects(const rlvr::v1::Ack& ack) {
    if (ack.accepted() || !service_->LogAllowed()) return;
    LOG(WARNING) << "session " << session_ << " (" << actor_id_ << "): lease " << ack.lease_id()
                 << " rejected " << rlvr::v1::RejectReason_Name(ack.reason()) << ": "
                 << ack.detail();
  }

  bool HandleHello(const rlvr::v1::Hello& hello) {
    if (session_ != 0) {
      if (service_->LogAllowed()) {
        LOG(WARNING) << "session " << session_ << ": second Hello ignored";
      }
      return true;
    }
    absl::StatusOr<uint64_t> id = ingest_->OpenSession(hello.capacity());
    if (!id.ok()) {
      service_->Refused(absl::IsResourceExhausted(id.status()) ? "session_limit"
                        : absl::IsInvalidArgument(id.status()) ? "bad_hello"
                                                               : "shutting_down");
      LOG(WARNING) << "refusing session from " << peer_ << ": " << id.status();
      return EndCall(ToGrpcStatus(id.status()));
    }
    actor_id_ = hello.actor_id().substr(0, 128);
    const int max_capacity = std::max(1, ingest_->options().max_capacity);
    // >= 1: OpenSession checked it; clamped as OpenSession clamps it.
    capacity_ = static_cast<size_t>(std::min(hello.capacity(), max_capacity));
    LOG(INFO) << "session " << *id << " opened: actor " << actor_id_ << " ("
              << hello.incarnation().substr(0, 64) << ") capacity " << hello.capacity() << " from "
              << peer_;
    {
      absl::MutexLock l(&mu_);
      session_ = *id;
      batch_messages_ = hello.batch_messages();
      rlvr::v1::LearnerMessage m;
      rlvr::v1::Welcome* w = m.mutable_welcome();
      w->set_session_id(absl::StrCat(*id));
      const IngestOptions& o = ingest_->options();
      w->set_latest_version(ingest_->Snapshot().latest_version());
      w->set_max_policy_lag(o.max_policy_lag);
      w->set_vocab_size(o.vocab_size);
      w->set_max_message_bytes(o.max_message_bytes);
      w->set_batch_messages(true);
      w->set_max_capacity(static_cast<uint32_t>(max_capacity));
      w->set_capacity(static_cast<uint32_t>(capacity_));
      out_.push_back(Serialize(m));
    }
    service_->Register(this, *id);  // Also queues the newest WeightsAvailable.
    absl::MutexLock l(&mu_);
    PumpLocked();
    return true;
  }

  // Lets go of the last message (its slices and, if it was large, the
  // joined bytes: a session keeps at most kKeepWireBytes between messages)
  // and starts reading the next.
  void ReadNext() {
    in_.Clear();
    in_slices_.clear();
    in_pieces_.clear();
    if (wire_.capacity() > kKeepWireBytes) std::string().swap(wire_);
    StartRead(&in_);
  }

  static google::protobuf::ArenaOptions ArenaOptionsFor(char* block,
                                                        size_t bytes = kArenaBlockBytes) {
    google::protobuf::ArenaOptions o;
    o.initial_block = block;
    o.initial_block_size = bytes;
    o.start_block_size = kArenaBlockBytes;
    o.max_block_size = 1 << 20;
    return o;
  }

  // A message's wire bytes, as they are queued for the stream.
  static grpc::ByteBuffer Serialize(const rlvr::v1::LearnerMessage& m) {
    grpc::ByteBuffer bytes;
    bool own = false;
    const grpc::Status serialized =
        grpc::SerializationTraits<rlvr::v1::LearnerMessage>::Serialize(m, &bytes, &own);
    CHECK(serialized.ok()) << serialized.error_message();
    return bytes;
  }

  bool FailBeforeHello() {
    service_->Refused("message_before_hello");
    return EndCall(
        grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "the first ActorMessage must be Hello"));
  }

  // Ends the call with `status`; false, for the read chain to stop.
  bool EndCall(grpc::Status status) {
    absl::MutexLock l(&mu_);
    RequestFinishLocked(std::move(status));
    return false;
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
      // The leases are made on an arena in their LeaseBatch (no allocation
      // per lease or string once the first block has grown to a grant).
      if (lease_arena_block_ == nullptr) lease_arena_block_.reset(new char[kAnswerBlockBytes]);
      google::protobuf::Arena arena(ArenaOptionsFor(lease_arena_block_.get(), kAnswerBlockBytes));
      auto* m = google::protobuf::Arena::CreateMessage<rlvr::v1::LearnerMessage>(&arena);
      auto* leases = m->mutable_lease_batch()->mutable_leases();
      ingest_->Grant(session_, leases);
      if (batch_messages_ && !leases->empty()) {
        // One message for all of them: one write and one read instead of n.
        out_.push_back(Serialize(*m));
      } else {
        for (rlvr::v1::WorkLease& lease : *leases) {
          auto* one = google::protobuf::Arena::CreateMessage<rlvr::v1::LearnerMessage>(&arena);
          one->mutable_lease()->Swap(&lease);
          out_.push_back(Serialize(*one));
        }
      }
    }
    if (!out_.empty() && !write_failed_) {
      current_.Swap(&out_.front());  // The previous write's bytes go with the pop.
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
  grpc::CallbackServerContext* const context_;
  const std::string peer_;
  const size_t max_receive_bytes_;  // TransportLimitBytes.
  // The read chain's state, only touched by it: the message being read,
  // its slices, the bytes joined where a group is spread over several (or a
  // declined message's), and the groups decoded from it (slots reused
  // across messages). A message the decoder declines is parsed on
  // parse_arena_, which keeps its first block (kArenaBlockBytes) across
  // messages.
  grpc::ByteBuffer in_;
  std::vector<grpc::Slice> in_slices_;
  std::vector<std::string_view> in_pieces_;  // Views of in_slices_.
  std::string wire_;  // A joined group for the decoder, or a declined message for protobuf.
  std::vector<ReceivedGroup> received_;
  size_t capacity_ = 0;  // Hello.capacity: the most groups one message may carry.
  static constexpr size_t kArenaBlockBytes = 64 << 10;
  static constexpr size_t kKeepWireBytes = 1 << 20;
  struct ParseArena {
    std::unique_ptr<char[]> block{new char[kArenaBlockBytes]};
    google::protobuf::Arena arena{ArenaOptionsFor(block.get())};
  };
  // Made at the stream's first message (its Hello), not with the reactor: a
  // stream that is refused at once, or never sends a message, then costs
  // gRPC's ~18 KiB and not 64 KiB more (measured with tests/interop/streams.js:
  // 1,000 streams a round, 256 held awaiting Hello and 744 refused, left the
  // heap 80 MB larger).
  std::unique_ptr<ParseArena> parse_arena_;
  // The first block of the arenas answers are built on: an AckBatch or a
  // LeaseBatch of 16 fits (a larger grant takes more blocks, freed with it).
  // Made at first use, after Hello, for the same reason as parse_arena_.
  static constexpr size_t kAnswerBlockBytes = 16 << 10;
  // The first block of the arena each answer (AckBatch or Ack) is built on.
  std::unique_ptr<char[]> ack_arena_block_;
  std::string actor_id_;

  absl::Mutex mu_;
  uint64_t session_ ABSL_GUARDED_BY(mu_) = 0;  // 0 until Hello is accepted.
  // Hello.batch_messages: leases may be sent as one LeaseBatch.
  bool batch_messages_ ABSL_GUARDED_BY(mu_) = false;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;  // Ingest session closed.
  // The read chain ended (not by us) before Hello; read in OnDone.
  bool ended_before_hello_ = false;
  // Serialized messages waiting for the stream's one write in flight.
  std::deque<grpc::ByteBuffer> out_ ABSL_GUARDED_BY(mu_);
  grpc::ByteBuffer current_ ABSL_GUARDED_BY(mu_);  // The write in flight.
  // The first block of the arena PumpLocked builds granted leases on (made
  // at the first grant).
  std::unique_ptr<char[]> lease_arena_block_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool finishing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status finish_status_ ABSL_GUARDED_BY(mu_);
};

size_t TransportLimitBytes(int64_t max_message_bytes) {
  const int64_t max_msg = std::max<int64_t>(0, max_message_bytes);
  return static_cast<size_t>(std::min<int64_t>(max_msg + std::max<int64_t>(1 << 20, max_msg / 8),
                                               std::numeric_limits<int>::max()));
}

GrpcServerOptions FrontDoorServerOptions(const LearnerConfig& learner) {
  GrpcServerOptions so;
  // The session handler applies TransportLimitBytes (counted); core's limit
  // bounds every service's messages (see the header).
  so.max_receive_bytes = static_cast<int>(std::min<size_t>(
      2 * TransportLimitBytes(learner.max_message_bytes), std::numeric_limits<int>::max()));
  so.keepalive_time_ms =
      learner.keepalive_time_s > 0
          ? std::max(1, static_cast<int>(std::lround(learner.keepalive_time_s * 1000)))
          : 0;
  so.keepalive_timeout_ms =
      std::max(1, static_cast<int>(std::lround(learner.keepalive_timeout_s * 1000)));
  return so;
}

SessionServiceImpl::SessionServiceImpl(Ingest* ingest, const TokenChecker* auth,
                                       SessionServiceOptions options)
    : ingest_(ingest),
      auth_(auth),
      options_(options),
      admission_(
          HelloAdmissionOptions{options.max_awaiting_hello, options.max_awaiting_hello_per_peer}) {
  ingest_->SetWakeCallback([this] { WakeAll(); });
  ingest_->SetEvictCallback(
      [this](uint64_t session, const std::string& why) { Evict(session, why); });
  ingest_->SetRevokeCallback([this](uint64_t session, const std::vector<uint64_t>& lease_ids,
                                    uint64_t version) { Revoke(session, lease_ids, version); });
  housekeeping_thread_ = std::thread([this] { HousekeepingLoop(); });
}

SessionServiceImpl::~SessionServiceImpl() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  housekeeping_thread_.join();
  ingest_->SetWakeCallback(nullptr);
  ingest_->SetEvictCallback(nullptr);
  ingest_->SetRevokeCallback(nullptr);
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SessionServiceImpl::Session(
    grpc::CallbackServerContext* context) {
  auto* r = new SessionReactor(this, ingest_, context);
  grpc::Status refusal = auth_ != nullptr ? auth_->Check(*context) : grpc::Status::OK;
  if (!refusal.ok()) Refused("unauthenticated");
  r->Start(Admit(r, PeerAddress(context->peer()), std::move(refusal)));
  return r;
}

grpc::Status SessionServiceImpl::Admit(SessionReactor* r, const std::string& peer,
                                       grpc::Status refusal) {
  absl::MutexLock l(&mu_);
  ++live_;
  if (!refusal.ok()) return refusal;
  const int max_sessions = ingest_->options().max_sessions;
  const int open = static_cast<int>(ingest_->Snapshot().sessions());
  if (stop_) {
    Refused("shutting_down");
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "learner is shutting down");
  }
  // Only sessions that said Hello count here: streams awaiting Hello have
  // their own pool and cannot take a session's place.
  if (open >= max_sessions) {
    Refused("session_limit");
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("learner serves at most ", max_sessions, " sessions (learner.max_sessions)"));
  }
  HelloAdmission::Decision d = admission_.Admit(r, peer);
  if (!d.admitted) {
    Refused(d.refusal.c_str());
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        d.refusal == "peer_awaiting_hello"
            ? absl::StrCat(admission_.options().max_per_peer, " streams from ", peer,
                           " are already waiting to say Hello "
                           "(learner.max_awaiting_hello_per_peer)")
            : absl::StrCat(admission_.options().max_awaiting,
                           " streams are waiting to say Hello, none from an address holding "
                           "more than yours (learner.max_awaiting_hello)"));
  }
  if (d.displaced != nullptr) {
    auto* other = const_cast<SessionReactor*>(static_cast<const SessionReactor*>(d.displaced));
    auto it = awaiting_.find(other);
    if (it != awaiting_.end()) it->second = absl::InfiniteFuture();  // Ended; gone at OnDone.
    other->Displaced(peer);
  }
  awaiting_[r] = absl::Now() + absl::Seconds(options_.hello_timeout_s);
  ingest_->metrics()->sessions_awaiting_hello->Set(static_cast<double>(awaiting_.size()));
  return grpc::Status::OK;
}

void SessionServiceImpl::Register(SessionReactor* r, uint64_t session) {
  absl::MutexLock l(&mu_);
  awaiting_.erase(r);
  admission_.Remove(r);
  ingest_->metrics()->sessions_awaiting_hello->Set(static_cast<double>(awaiting_.size()));
  reactors_.insert(r);
  by_session_[session] = r;
  if (latest_version_ > 0) r->EnqueueWeights(latest_version_, latest_bytes_);
}

void SessionServiceImpl::Unregister(SessionReactor* r) {
  if (options_.memory_releaser != nullptr) options_.memory_releaser->StreamEnded();
  absl::MutexLock l(&mu_);
  --live_;
  reactors_.erase(r);
  admission_.Remove(r);
  if (awaiting_.erase(r) > 0) {
    ingest_->metrics()->sessions_awaiting_hello->Set(static_cast<double>(awaiting_.size()));
  }
  for (auto it = by_session_.begin(); it != by_session_.end(); ++it) {
    if (it->second == r) {
      by_session_.erase(it);
      break;
    }
  }
}

void SessionServiceImpl::Evict(uint64_t session, const std::string& why) {
  absl::MutexLock l(&mu_);
  auto it = by_session_.find(session);
  if (it == by_session_.end()) return;
  Refused("lease_expiries");
  it->second->Evicted(why);
}

void SessionServiceImpl::Revoke(uint64_t session, const std::vector<uint64_t>& lease_ids,
                                uint64_t version) {
  absl::MutexLock l(&mu_);
  auto it = by_session_.find(session);
  if (it != by_session_.end()) it->second->EnqueueRevocation(lease_ids, version);
}

void SessionServiceImpl::HousekeepingLoop() {
  const absl::Duration poll = std::clamp(absl::Seconds(options_.hello_timeout_s / 4),
                                         absl::Milliseconds(10), absl::Milliseconds(100));
  for (;;) {
    {
      absl::MutexLock l(&mu_);
      mu_.AwaitWithTimeout(absl::Condition(&stop_), poll);
      if (stop_) return;
      const absl::Time now = absl::Now();
      for (auto& [r, deadline] : awaiting_) {
        if (deadline > now) continue;
        deadline = absl::InfiniteFuture();  // Ended once; gone at OnDone.
        admission_.Remove(r);
        r->HelloTimeout(options_.hello_timeout_s);
      }
    }
    // Without mu_: a release takes milliseconds.
    if (options_.memory_releaser != nullptr) options_.memory_releaser->ReleaseIfDue();
  }
}

bool SessionServiceImpl::LogAllowed() {
  absl::MutexLock l(&log_mu_);
  const absl::Time now = absl::Now();
  if (now - log_window_ >= absl::Seconds(1)) {
    if (log_lines_ > options_.log_lines_per_s) {
      LOG(WARNING) << (log_lines_ - options_.log_lines_per_s)
                   << " rejected-group log lines left out in the last second (counted in "
                      "rlvr_learner_groups_rejected_total and "
                      "rlvr_learner_reject_logs_suppressed_total)";
    }
    log_window_ = now;
    log_lines_ = 0;
  }
  if (++log_lines_ <= options_.log_lines_per_s) return true;
  ingest_->metrics()->reject_logs_suppressed->Increment();
  return false;
}

int SessionServiceImpl::awaiting_hello() {
  absl::MutexLock l(&mu_);
  return static_cast<int>(awaiting_.size());
}

int SessionServiceImpl::live_streams() {
  absl::MutexLock l(&mu_);
  return live_;
}

void SessionServiceImpl::AnnounceWeights(uint64_t version, uint64_t total_bytes) {
  absl::MutexLock l(&mu_);
  latest_version_ = version;
  latest_bytes_ = total_bytes;
  for (SessionReactor* r : reactors_) r->EnqueueWeights(version, total_bytes);
}

void SessionServiceImpl::WakeAll() {
  // Sessions that made progress most recently ask first; suspended ones are
  // not asked (Grant gives them nothing).
  const std::vector<uint64_t> order = ingest_->SessionsByProgress();
  absl::MutexLock l(&mu_);
  for (uint64_t session : order) {
    auto it = by_session_.find(session);
    if (it != by_session_.end()) it->second->Wake();
  }
}

int SessionServiceImpl::open_sessions() {
  absl::MutexLock l(&mu_);
  return static_cast<int>(reactors_.size());
}

}  // namespace rlvr::learner
