#include "actor/outbox.h"

#include <utility>

namespace rlvr::actor {

bool Outbox::Push(rlvr::v1::ActorMessage msg) {
  absl::MutexLock lock(&mu_);
  if (closed_ || queue_.size() >= capacity_) return false;
  queue_.push_back(std::move(msg));
  return true;
}

bool Outbox::ReadyLocked() const { return closed_ || !queue_.empty(); }

bool Outbox::Pop(rlvr::v1::ActorMessage* msg) {
  absl::MutexLock lock(&mu_);
  // Await re-checks the condition on every wake-up (no spurious returns).
  mu_.Await(absl::Condition(this, &Outbox::ReadyLocked));
  if (queue_.empty() || (closed_ && !graceful_)) return false;
  *msg = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

void Outbox::Close(bool graceful) {
  absl::MutexLock lock(&mu_);
  if (!closed_) {
    graceful_ = graceful;
  } else if (!graceful) {
    graceful_ = false;
  }
  closed_ = true;
  if (!graceful_) queue_.clear();
}

bool Outbox::graceful() const {
  absl::MutexLock lock(&mu_);
  return closed_ && graceful_;
}

}  // namespace rlvr::actor
