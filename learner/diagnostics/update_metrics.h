// The Prometheus metrics of learner updates: every family an update's
// diagnostics are exported to (generated from the `diagnostic` options of
// proto/rlvr/v1/diagnostics.proto: gauges, counters, labelled counters) plus
// the update's own figures (step, world size, wall times, last-step time and
// the count of clamped diagnostics). Names are a contract with deploy/
// (deploy/checks/metrics-contract.txt); see docs/learner.md.
//
// Ownership: this object registers each of these families once; one
// UpdateMetrics per registry. In the learner it is part of LearnerMetrics,
// which hands it to the Trainer (rank 0), the one writer of its figures. The
// registry must outlive this object.
//
// Thread safety: prometheus-cpp metrics are thread-safe; every method may be
// called from any thread.
#ifndef RLVR_LEARNER_DIAGNOSTICS_UPDATE_METRICS_H_
#define RLVR_LEARNER_DIAGNOSTICS_UPDATE_METRICS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "learner/diagnostics/update_diagnostics.h"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
class Registry;
template <typename T>
class Family;
}  // namespace prometheus

namespace rlvr::learner {

class UpdateMetrics {
 public:
  explicit UpdateMetrics(prometheus::Registry& registry);
  UpdateMetrics(const UpdateMetrics&) = delete;
  UpdateMetrics& operator=(const UpdateMetrics&) = delete;

  // A trained update: rlvr_learner_step, every exported diagnostic (clamped
  // with ClampDiagnostics; the clamped ones counted in
  // rlvr_learner_diagnostics_clamped_total{name}), the step's wall time and
  // the last-step timestamp (now).
  void RecordUpdate(uint64_t step, const UpdateDiagnostics& diagnostics, double step_seconds);
  void SetStep(uint64_t step);
  void SetWorldSize(int world_size);
  void ObserveCheckpointSeconds(double seconds);

  // A counter family registered here (CHECK-fails for another name), for the
  // label values another owner counts: the ingest's
  // rlvr_learner_groups_dropped_total{reason="stale"}.
  prometheus::Family<prometheus::Counter>& CounterFamily(const std::string& name) const;

 private:
  struct Exported {
    const google::protobuf::FieldDescriptor* field;
    prometheus::Gauge* gauge;      // Null for a counter.
    prometheus::Counter* counter;  // Null for a gauge.
  };
  std::vector<Exported> exported_;
  std::vector<std::pair<std::string, prometheus::Family<prometheus::Counter>*>> counter_families_;
  prometheus::Gauge* step_;
  prometheus::Gauge* world_size_;
  prometheus::Gauge* last_step_timestamp_;
  prometheus::Histogram* step_seconds_;
  prometheus::Histogram* checkpoint_seconds_;
  prometheus::Family<prometheus::Counter>* clamped_;
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_DIAGNOSTICS_UPDATE_METRICS_H_
