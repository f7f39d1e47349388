#include "actor/outbox.h"

#include <utility>

namespace rlvr::actor {

bool Outbox::Push(rlvr::v1::ActorMessage msg) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_ || queue_.size() >= capacity_) return false;
    queue_.push_back(std::move(msg));
  }
  cv_.notify_one();
  return true;
}

bool Outbox::Pop(rlvr::v1::ActorMessage* msg) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return closed_ || !queue_.empty(); });
  if (queue_.empty() || (closed_ && !graceful_)) return false;
  *msg = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

void Outbox::Close(bool graceful) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!closed_) {
      graceful_ = graceful;
    } else if (!graceful) {
      graceful_ = false;
    }
    closed_ = true;
    if (!graceful_) queue_.clear();
  }
  cv_.notify_all();
}

bool Outbox::graceful() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_ && graceful_;
}

}  // namespace rlvr::actor
