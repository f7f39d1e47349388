// A bounded queue of ActorMessages between the threads that produce them
// (generation, lease handling, shutdown) and the one writer thread of a
// session stream. Producers never block: Push fails when the queue is full or
// closed (a dropped group's lease simply expires at the learner and is
// re-leased). Thread-safe.
#ifndef RLVR_ACTOR_OUTBOX_H_
#define RLVR_ACTOR_OUTBOX_H_

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>

#include "rlvr/v1/session.pb.h"

namespace rlvr::actor {

class Outbox {
 public:
  explicit Outbox(size_t capacity) : capacity_(capacity) {}

  // Queues `msg`; false if the outbox is closed or holds `capacity` messages.
  bool Push(rlvr::v1::ActorMessage msg);

  // Blocks until a message is available (true) or the outbox is closed
  // (false; after a graceful close, only once every queued message was popped).
  bool Pop(rlvr::v1::ActorMessage* msg);

  // Closes the outbox. graceful: queued messages are still delivered and the
  // writer then half-closes the stream (WritesDone); otherwise they are
  // discarded. A graceful close may be turned into an abort, not the reverse.
  void Close(bool graceful);

  // True if closed gracefully (the writer should send WritesDone).
  bool graceful() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<rlvr::v1::ActorMessage> queue_;  // Guarded by mu_.
  bool closed_ = false;                       // Guarded by mu_.
  bool graceful_ = false;                     // Guarded by mu_.
};

}  // namespace rlvr::actor

#endif  // RLVR_ACTOR_OUTBOX_H_
