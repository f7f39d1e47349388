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
// Thread safety: all public methods are thread-safe. The service and the
// Ingest it uses must outlive the grpc::Server they are registered in
// (shut the server down first).
#ifndef RLVR_LEARNER_SESSION_SERVICE_H_
#define RLVR_LEARNER_SESSION_SERVICE_H_

#include <cstdint>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "learner/ingest.h"
#include "rlvr/v1/session.grpc.pb.h"

namespace rlvr::learner {

class SessionReactor;

class SessionServiceImpl final
    : public rlvr::v1::SessionService::WithRawCallbackMethod_Session<
          rlvr::v1::SessionService::Service> {
 public:
  // `ingest` is not owned. Installs itself as the ingest's wake callback.
  // `auth` (nullable, not owned) checks each call's bearer token.
  explicit SessionServiceImpl(Ingest* ingest, const TokenChecker* auth = nullptr);
  ~SessionServiceImpl() override;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Session(
      grpc::CallbackServerContext* context) override;

  // Queues WeightsAvailable{version, total_bytes} on every open session.
  void AnnounceWeights(uint64_t version, uint64_t total_bytes);
  // Lets every session ask Ingest for leases again.
  void WakeAll();
  // Sessions whose Hello was accepted and that are still open.
  int open_sessions();

 private:
  friend class SessionReactor;
  void Register(SessionReactor* r);
  void Unregister(SessionReactor* r);

  Ingest* const ingest_;
  const TokenChecker* const auth_;
  absl::Mutex mu_;
  std::set<SessionReactor*> reactors_ ABSL_GUARDED_BY(mu_);
  uint64_t latest_version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t latest_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_SESSION_SERVICE_H_
