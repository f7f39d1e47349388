// rlvr.v1.SessionService on learner rank 0, on the gRPC callback API.
//
// One reactor per actor stream owns the stream's state (its outgoing queue,
// its session id in Ingest) and deletes itself in OnDone. Callbacks never
// block and run no model code: a group is validated and handed to Ingest's
// buffer, and the Ack, new leases and weight announcements are queued for
// the stream's single in-flight write.
//
// The method is registered raw (ByteBuffer in and out): rollout messages
// are decoded from their bytes straight into the trainer's groups
// (rollout_decoder.h); other messages, and any the decoder declines, are
// parsed with protobuf. Bytes that are no ActorMessage end the call with
// INVALID_ARGUMENT.
//
// The front door (docs/reliability.md, "The front door"): streams that have
// not said Hello wait in a pool of their own, bounded per peer address and in
// all (hello_admission.h), so that they never take the place of a session
// that said Hello (max_sessions counts only those); one that sends no Hello
// within hello_timeout_s is ended DEADLINE_EXCEEDED; Hello.capacity is
// clamped to the ingest's max_capacity (Welcome says so); a compressed call is
// refused UNIMPLEMENTED by gRPC core before its message is inflated (only
// identity is enabled, FrontDoorServerOptions), which the handler recognises
// from the call's incoming encoding; a message above TransportLimitBytes is
// refused RESOURCE_EXHAUSTED by the handler (gRPC core's own limit is set
// above it, see FrontDoorServerOptions); a session the ingest closes for
// expired leases is ended UNAVAILABLE;
// freed credits are offered to the sessions that made progress most recently first; leases the
// ingest revokes at a new version are sent to their session as a LeaseRevocation. Every such
// refusal is counted in rlvr_learner_call_refusals_total{reason}, and rejected-group log lines are
// rate limited (the counters keep the totals).
//
// Memory: every stream that ends is reported to the options' MemoryReleaser,
// which the service's background thread asks to return freed memory to the
// OS once a burst of ended streams is over (common/memory_policy.h).
//
// Thread safety: all public methods are thread-safe. The service and the
// Ingest it uses must outlive the grpc::Server they are registered in
// (shut the server down first).
#ifndef RLVR_LEARNER_SESSION_SERVICE_H_
#define RLVR_LEARNER_SESSION_SERVICE_H_

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/base/memory_policy.h"
#include "common/config/run_config.h"
#include "common/net/auth.h"
#include "common/net/grpc_util.h"
#include "learner/hello_admission.h"
#include "learner/ingest.h"
#include "rlvr/v1/session.grpc.pb.h"

namespace rlvr::learner {

class SessionReactor;

struct SessionServiceOptions {
  // A stream must send Hello within this time (learner.hello_timeout_s).
  double hello_timeout_s = 10.0;
  // Streams awaiting Hello, in all and per peer address
  // (learner.max_awaiting_hello, learner.max_awaiting_hello_per_peer).
  int max_awaiting_hello = 64;
  int max_awaiting_hello_per_peer = 8;
  // Rejected-group (and ignored-message) log lines per second, all sessions
  // together; the rest are counted in reject_logs_suppressed.
  int log_lines_per_s = 20;
  // Told of every stream that ends; its ReleaseIfDue is called from the
  // service's background thread (every hello_timeout_s / 4, 10 to 100 ms).
  // Null: none. Not owned; must outlive the service.
  MemoryReleaser* memory_releaser = nullptr;
};

// The largest session message accepted, bytes: a little above
// max_message_bytes (max(1 MiB, 1/8) more), so that an oversize group is
// answered OVERSIZE rather than cut. Larger messages end the call
// RESOURCE_EXHAUSTED (reason oversize_message).
size_t TransportLimitBytes(int64_t max_message_bytes);

// The learner's gRPC server options for `learner`: keepalive from
// keepalive_time_s / keepalive_timeout_s, and GrpcServerOptions' keepalive
// enforcement policy and compression refusal. Address and TLS are left
// default. gRPC core's receive limit is twice TransportLimitBytes: the session
// handler refuses (and counts) messages between the two itself; core cuts
// larger ones, for every service of the server, as a cancelled call. (gRPC
// 1.51 receives a whole message before its own size check: a 300 MB message
// to a server with a 2 MiB limit raised its peak RSS by ~300 MB; the core
// limit still bounds what one message can cost.)
GrpcServerOptions FrontDoorServerOptions(const LearnerConfig& learner);

class SessionServiceImpl final : public rlvr::v1::SessionService::WithRawCallbackMethod_Session<
                                     rlvr::v1::SessionService::Service> {
 public:
  // `ingest` is not owned. Installs itself as the ingest's wake and evict
  // callbacks. `auth` (nullable, not owned) checks each call's bearer token.
  explicit SessionServiceImpl(Ingest* ingest, const TokenChecker* auth = nullptr,
                              SessionServiceOptions options = {});
  ~SessionServiceImpl() override;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Session(
      grpc::CallbackServerContext* context) override;

  // Queues WeightsAvailable{version, total_bytes} on every open session.
  void AnnounceWeights(uint64_t version, uint64_t total_bytes);
  // Lets every session ask Ingest for leases again.
  void WakeAll();
  // Sessions whose Hello was accepted and that are still open.
  int open_sessions();
  // Streams open that have not sent Hello (counted against max_sessions).
  int awaiting_hello();
  // Reactors alive (Hello or not; until the call is done and freed).
  int live_streams();

 private:
  friend class SessionReactor;
  // A new stream from `peer` (PeerAddress): registered as awaiting Hello
  // (possibly displacing another, which is ended), or the refusal to end it
  // with (counted): max_sessions sessions open, its address's or the pool's
  // bound on streams awaiting Hello.
  grpc::Status Admit(SessionReactor* r, const std::string& peer, grpc::Status refusal);
  // Hello accepted: `r` now serves ingest session `session`.
  void Register(SessionReactor* r, uint64_t session);
  void Unregister(SessionReactor* r);
  void Evict(uint64_t session, const std::string& why);
  // Queues a LeaseRevocation on the session's stream (if it is open).
  void Revoke(uint64_t session, const std::vector<uint64_t>& lease_ids, uint64_t version);
  // The background thread: ends streams at their Hello deadline and lets
  // the memory releaser work.
  void HousekeepingLoop() ABSL_LOCKS_EXCLUDED(mu_);
  // Whether a rate-limited log line may be written now; counts it if not.
  bool LogAllowed();
  void Refused(const char* reason) { ingest_->metrics()->CallRefused(reason).Increment(); }

  Ingest* const ingest_;
  const TokenChecker* const auth_;
  const SessionServiceOptions options_;
  absl::Mutex mu_;
  std::set<SessionReactor*> reactors_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, SessionReactor*> by_session_ ABSL_GUARDED_BY(mu_);
  // Streams awaiting Hello -> their Hello deadline (InfiniteFuture once
  // ended for missing it, until the call is done).
  std::map<SessionReactor*, absl::Time> awaiting_ ABSL_GUARDED_BY(mu_);
  // The streams awaiting Hello that are still in the pool (not yet ended).
  HelloAdmission admission_ ABSL_GUARDED_BY(mu_);
  int live_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread housekeeping_thread_;
  absl::Mutex log_mu_;
  absl::Time log_window_ ABSL_GUARDED_BY(log_mu_);
  int log_lines_ ABSL_GUARDED_BY(log_mu_) = 0;
  uint64_t latest_version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t latest_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_SESSION_SERVICE_H_
