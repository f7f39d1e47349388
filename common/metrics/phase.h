// What a process is doing, as a Prometheus state set: one gauge series per
// phase, `<name>{phase="<phase>"}`, 1 for the current phase and 0 for every
// other (the pattern of Prometheus' naming guidelines for an enum, as
// kube-state-metrics' kube_pod_status_phase). Every series exists from
// construction, so a query sees the zeros too.
//
// Thread safety: Set and current may be called from any thread.
#ifndef RLVR_COMMON_METRICS_PHASE_H_
#define RLVR_COMMON_METRICS_PHASE_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace rlvr {

class PhaseGauge {
 public:
  // Registers `name` in `registry` with one series per entry of `phases`
  // (label `phase`) and sets the first phase. The registry must outlive this.
  PhaseGauge(prometheus::Registry& registry, const std::string& name, const std::string& help,
             std::vector<std::string> phases);

  // Makes `phase` the current one. A phase not given at construction is a
  // programming error (CHECK).
  void Set(absl::string_view phase);
  std::string current() const;

 private:
  const std::vector<std::string> phases_;
  std::vector<prometheus::Gauge*> gauges_;
  mutable absl::Mutex mu_;
  size_t current_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rlvr

#endif  // RLVR_COMMON_METRICS_PHASE_H_
