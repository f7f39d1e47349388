// The learner's Prometheus metrics (names are a contract with deploy/; see
// docs/learner.md). One LearnerMetrics per process, registered in the
// process's registry: it is the one owner of every learner family, those of
// updates included (`update`, which rank 0's Trainer records into; the
// Trainer registers nothing). prometheus-cpp metrics are thread-safe, so
// every field may be updated from any thread.
#ifndef RLVR_LEARNER_LEARNER_METRICS_H_
#define RLVR_LEARNER_LEARNER_METRICS_H_

#include <memory>
#include <string>

#include "learner/diagnostics/update_metrics.h"
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
  // The families of updates: step, diagnostics, wall times, tokens trained,
  // groups dropped by the batcher. Handed to the Trainer.
  UpdateMetrics update;

  prometheus::Gauge* policy_version;
  prometheus::Counter* groups_accepted;
  prometheus::Family<prometheus::Counter>* groups_rejected_family;
  // rlvr_learner_groups_dropped_total{reason="stale"} (the family is
  // update's; the batcher's reasons are counted there).
  prometheus::Counter* dropped_stale;
  prometheus::Counter* leases_granted;
  prometheus::Counter* leases_reissued;
  prometheus::Counter* leases_revoked;
  prometheus::Gauge* leases_outstanding;
  prometheus::Gauge* actors_connected;
  prometheus::Gauge* buffer_groups;
  prometheus::Gauge* buffer_capacity_groups;
  prometheus::Histogram* staleness_versions;
  prometheus::Gauge* heldout_accuracy;
  prometheus::Histogram* weight_publish_seconds;
  prometheus::Gauge* weight_publish_bytes;
  prometheus::Gauge* weight_watchers;

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
};

// Reasons of rlvr_learner_call_refusals_total, one per way a call ends
// refused (docs/reliability.md, "Integrating your own actor").
inline constexpr const char* kCallRefusalReasons[] = {
    "unauthenticated",  // Missing or wrong bearer token.
    "session_limit",    // max_sessions sessions (that said Hello) open.
    // Streams awaiting Hello (hello_admission.h): the stream's address
    // already holds max_awaiting_hello_per_peer of them; the pool holds
    // max_awaiting_hello and no address holds more than the stream's; a
    // stream ended to make room for one from an address holding fewer.
    "peer_awaiting_hello", "awaiting_hello_full", "displaced_before_hello",
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

// rlvr_learner_phase{phase}: what a learner process is doing, 1 for the
// current phase (common/metrics/phase.h), served on /metrics from the
// process's start. `rlvr learner` goes starting -> rendezvous (joining the
// other ranks, building the model) -> resuming (loading the checkpoint,
// sending the state to the other ranks) -> training (rank 0: serving
// sessions; evaluating while it evaluates held-out prompts) -> stopping.
// `rlvr pretrain --metrics_port` (the learner pod's init container) exports
// the same family with phase pretraining.
inline constexpr const char* kLearnerPhases[] = {
    "starting", "pretraining", "rendezvous", "resuming", "training", "evaluating", "stopping",
};
inline constexpr const char kLearnerPhaseHelp[] =
    "What the learner process is doing: 1 for the current phase (starting, pretraining, "
    "rendezvous, resuming, training, evaluating, stopping), 0 for the others.";

// "unknown_lease" for REJECT_REASON_UNKNOWN_LEASE, etc.
std::string RejectReasonLabel(rlvr::v1::RejectReason reason);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_LEARNER_METRICS_H_
