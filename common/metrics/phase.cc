#include "common/metrics/phase.h"

#include <glog/logging.h>

#include <algorithm>
#include <utility>

#include "prometheus/family.h"

namespace rlvr {

PhaseGauge::PhaseGauge(prometheus::Registry& registry, const std::string& name,
                       const std::string& help, std::vector<std::string> phases)
    : phases_(std::move(phases)) {
  CHECK(!phases_.empty()) << name << ": no phases";
  auto& family = prometheus::BuildGauge().Name(name).Help(help).Register(registry);
  for (const std::string& p : phases_) gauges_.push_back(&family.Add({{"phase", p}}));
  gauges_.front()->Set(1.0);
}

void PhaseGauge::Set(absl::string_view phase) {
  const auto it = std::find(phases_.begin(), phases_.end(), phase);
  CHECK(it != phases_.end()) << "unknown phase " << phase;
  const size_t next = static_cast<size_t>(it - phases_.begin());
  absl::MutexLock l(&mu_);
  if (next == current_) return;
  // The new phase first: a scrape between the two writes sees two phases at
  // 1 rather than none.
  gauges_[next]->Set(1.0);
  gauges_[current_]->Set(0.0);
  current_ = next;
}

std::string PhaseGauge::current() const {
  absl::MutexLock l(&mu_);
  return phases_[current_];
}

}  // namespace rlvr
