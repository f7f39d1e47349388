// The learner's Prometheus metrics (names are a contract with deploy/; see
// docs/learner.md). One LearnerMetrics per process, registered in the
// process's registry. prometheus-cpp metrics are thread-safe, so every field
// may be updated from any thread.
#ifndef RLVR_LEARNER_LEARNER_METRICS_H_
#define RLVR_LEARNER_LEARNER_METRICS_H_

#include <memory>
#include <string>

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "rlvr/v1/session.pb.h"

namespace rlvr::learner {

struct LearnerMetrics {
  // Registers every learner metric in `registry` (kept alive by the struct).
  explicit LearnerMetrics(std::shared_ptr<prometheus::Registry> registry);

  // rlvr_learner_groups_rejected_total{reason=<lower-case reason suffix>}.
  prometheus::Counter& Rejected(rlvr::v1::RejectReason reason);

  std::shared_ptr<prometheus::Registry> registry;

  prometheus::Gauge* step;
  prometheus::Gauge* policy_version;
  prometheus::Counter* groups_accepted;
  prometheus::Family<prometheus::Counter>* groups_rejected_family;
  prometheus::Counter* dropped_stale;
  prometheus::Counter* dropped_zero_variance;
  prometheus::Counter* dropped_balance;
  prometheus::Counter* dropped_trust_region;
  prometheus::Counter* leases_granted;
  prometheus::Counter* leases_reissued;
  prometheus::Gauge* leases_outstanding;
  prometheus::Gauge* actors_connected;
  prometheus::Gauge* buffer_groups;
  prometheus::Gauge* buffer_capacity_groups;
  prometheus::Histogram* staleness_versions;
  prometheus::Histogram* step_seconds;
  prometheus::Counter* tokens_trained;
  prometheus::Gauge* reward_mean;
  prometheus::Gauge* accuracy;
  prometheus::Gauge* heldout_accuracy;
  prometheus::Gauge* entropy;
  prometheus::Gauge* clip_fraction;
  prometheus::Gauge* ratio_mean;
  prometheus::Gauge* ratio_max;
  prometheus::Gauge* grad_norm;
  prometheus::Gauge* kl_behaviour_recomputed;
  prometheus::Gauge* cancellation_residual;
  prometheus::Gauge* orthogonality_residual;
  prometheus::Gauge* zero_variance_fraction;
  prometheus::Gauge* positive_rollouts;
  prometheus::Gauge* negative_rollouts;
  prometheus::Histogram* weight_publish_seconds;
  prometheus::Gauge* weight_publish_bytes;
  prometheus::Gauge* weight_watchers;
  prometheus::Gauge* last_step_timestamp_seconds;
  prometheus::Histogram* checkpoint_seconds;
  prometheus::Gauge* world_size;
};

// "unknown_lease" for REJECT_REASON_UNKNOWN_LEASE, etc.
std::string RejectReasonLabel(rlvr::v1::RejectReason reason);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_LEARNER_METRICS_H_
