// A bounded queue of ActorMessages between the threads that produce them
// (generation, lease handling, shutdown) and the one writer thread of a
// session stream. Producers never block: Push fails when the queue is full or
// closed (a dropped group's lease simply expires at the learner and is
// re-leased). Thread-safe.
#ifndef RLVR_ACTOR_OUTBOX_H_
#define RLVR_ACTOR_OUTBOX_H_

#include <cstddef>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "rlvr/v1/session.pb.h"

namespace rlvr::actor {

class Outbox {
 public:
  explicit Outbox(size_t capacity) : capacity_(capacity) {}

  // Queues `msg`; false if the outbox is closed or holds `capacity` messages.
  bool Push(rlvr::v1::ActorMessage msg) ABSL_LOCKS_EXCLUDED(mu_);

  // Blocks until a message is available (true) or the outbox is closed
  // (false; after a graceful close, only once every queued message was popped).
  bool Pop(rlvr::v1::ActorMessage* msg) ABSL_LOCKS_EXCLUDED(mu_);

  // Closes the outbox. graceful: queued messages are still delivered and the
  // writer then half-closes the stream (WritesDone); otherwise they are
  // discarded. A graceful close may be turned into an abort, not the reverse.
  void Close(bool graceful) ABSL_LOCKS_EXCLUDED(mu_);

  // True if closed gracefully (the writer should send WritesDone).
  bool graceful() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Pop's wake-up condition: a message to pop, or the end.
  bool ReadyLocked() const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::deque<rlvr::v1::ActorMessage> queue_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  bool graceful_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace rlvr::actor

#endif  // RLVR_ACTOR_OUTBOX_H_
