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
  prometheus::Counter* leases_revoked;
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

  // The front door (docs/reliability.md). Calls refused or ended by the
  // learner before or outside group validation, by reason (every reason of
  // kCallRefusalReasons is registered at construction, so dashboards see
  // zeros): rlvr_learner_call_refusals_total{reason}.
  prometheus::Counter& CallRefused(const std::string& reason);
  prometheus::Family<prometheus::Counter>* call_refusals_family;
  // Sessions suspended for expired leases (no new leases until they answer).
  prometheus::Gauge* sessions_suspended;
  // Session streams open and not yet past Hello.
  prometheus::Gauge* sessions_awaiting_hello;
  // Rejected-group log lines suppressed by the per-session rate limit (the
  // rejections themselves are all in groups_rejected_total).
  prometheus::Counter* reject_logs_suppressed;
  // Update diagnostics that were not finite or beyond kDiagnosticLimit and
  // were published clamped: rlvr_learner_diagnostics_clamped_total{name}.
  prometheus::Family<prometheus::Counter>* diagnostics_clamped_family;
};

// Reasons of rlvr_learner_call_refusals_total, one per way a call ends
// refused (docs/reliability.md, "Integrating your own actor").
inline constexpr const char* kCallRefusalReasons[] = {
    "unauthenticated",       // Missing or wrong bearer token.
    "session_limit",         // max_sessions streams open or awaiting Hello.
    "hello_timeout",         // No Hello within learner.hello_timeout_s.
    "message_before_hello",  // A first message that is not Hello.
    "bad_hello",             // Hello.capacity < 1.
    "malformed",             // Bytes that are no ActorMessage.
    "too_many_groups",       // A RolloutBatch above the session's capacity.
    // A compressed call (rlvr never compresses; only identity is enabled):
    // refused UNIMPLEMENTED by gRPC core at its headers, before inflation.
    "compressed",
    // A message above the transport limit (learner.max_message_bytes +
    // max(1 MiB, 1/8)), refused RESOURCE_EXHAUSTED by the session handler.
    "oversize_message",
    // Cancelled before Hello by the client or a broken connection.
    "cancelled_before_hello",
    "lease_expiries",  // Closed after lease_expiries_to_close expiries.
    "shutting_down",   // The learner is stopping.
};

// Diagnostics are published (Prometheus, metrics.jsonl, GetStatus) within
// +-kDiagnosticLimit: an extreme but valid input (a behaviour log-prob of
// -1e30) can make the KL and the ratio +Inf, which Prometheus shows as +Inf
// and JSON cannot hold (null).
inline constexpr double kDiagnosticLimit = 1e30;

// `value` if finite and within +-kDiagnosticLimit; else clamped to the
// limit (NaN to +limit) with *clamped set to true.
double ClampDiagnostic(double value, bool* clamped);

// "unknown_lease" for REJECT_REASON_UNKNOWN_LEASE, etc.
std::string RejectReasonLabel(rlvr::v1::RejectReason reason);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_LEARNER_METRICS_H_
