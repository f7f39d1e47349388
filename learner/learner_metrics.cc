#include "learner/learner_metrics.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "common/metrics/metrics.h"
#include "prometheus/family.h"

namespace rlvr::learner {
std::string RejectReasonLabel(rlvr::v1::RejectReason reason) {
  std::string name = rlvr::v1::RejectReason_Name(reason);
  constexpr absl::string_view kPrefix = "REJECT_REASON_";
  if (name.rfind(std::string(kPrefix), 0) == 0) name = name.substr(kPrefix.size());
  return absl::AsciiStrToLower(name);
}

LearnerMetrics::LearnerMetrics(std::shared_ptr<prometheus::Registry> reg)
    : registry(reg), update(*reg) {
  prometheus::Registry& r = *registry;
  policy_version =
      &UnlabelledGauge(r, "rlvr_learner_policy_version", "Newest published policy version.");
  groups_accepted = &UnlabelledCounter(r, "rlvr_learner_groups_accepted_total",
                                       "Groups accepted into the buffer.");
  groups_rejected_family = &prometheus::BuildCounter()
                                .Name("rlvr_learner_groups_rejected_total")
                                .Help("Groups rejected at ingest, by reason.")
                                .Register(r);
  // Pre-create every reason so dashboards see zeros.
  for (int i = rlvr::v1::RejectReason_MIN + 1; i <= rlvr::v1::RejectReason_MAX; ++i) {
    if (rlvr::v1::RejectReason_IsValid(i)) Rejected(static_cast<rlvr::v1::RejectReason>(i));
  }
  dropped_stale =
      &update.CounterFamily("rlvr_learner_groups_dropped_total").Add({{"reason", "stale"}});
  leases_granted =
      &UnlabelledCounter(r, "rlvr_learner_leases_granted_total", "Work leases granted.");
  leases_reissued = &UnlabelledCounter(r, "rlvr_learner_leases_reissued_total",
                                       "Leases whose prompt went back to the queue.");
  leases_revoked =
      &UnlabelledCounter(r, "rlvr_learner_leases_revoked_total",
                         "Leases revoked at a new version because their groups would be stale.");
  leases_outstanding =
      &UnlabelledGauge(r, "rlvr_learner_leases_outstanding", "Leases granted, not answered.");
  actors_connected = &UnlabelledGauge(r, "rlvr_learner_actors_connected", "Actor sessions open.");
  buffer_groups =
      &UnlabelledGauge(r, "rlvr_learner_buffer_groups", "Groups waiting in the rollout buffer.");
  buffer_capacity_groups = &UnlabelledGauge(r, "rlvr_learner_buffer_capacity_groups",
                                            "Rollout buffer capacity, groups.");
  std::vector<double> staleness_buckets;
  for (int i = 0; i <= 16; ++i) staleness_buckets.push_back(i);
  staleness_versions = &UnlabelledHistogram(
      r, "rlvr_learner_staleness_versions",
      "Versions between a trained group's policy and the learner's.", staleness_buckets);
  heldout_accuracy =
      &UnlabelledGauge(r, "rlvr_learner_heldout_accuracy", "Last held-out greedy accuracy.");
  weight_publish_seconds =
      &UnlabelledHistogram(r, "rlvr_learner_weight_publish_seconds",
                           "Serialize + publish time of a version.", SecondsBuckets());
  weight_publish_bytes =
      &UnlabelledGauge(r, "rlvr_learner_weight_publish_bytes", "Size of the last blob.");
  weight_watchers =
      &UnlabelledGauge(r, "rlvr_learner_weight_watchers", "Open WatchWeights streams.");
  call_refusals_family = &prometheus::BuildCounter()
                              .Name("rlvr_learner_call_refusals_total")
                              .Help(
                                  "Session and weight calls refused or ended by the learner "
                                  "outside group validation, by reason.")
                              .Register(r);
  for (const char* reason : kCallRefusalReasons) CallRefused(reason);
  sessions_suspended =
      &UnlabelledGauge(r, "rlvr_learner_sessions_suspended",
                       "Sessions given no leases until they answer (expired leases).");
  sessions_awaiting_hello = &UnlabelledGauge(r, "rlvr_learner_sessions_awaiting_hello",
                                             "Session streams open, Hello not yet received.");
  reject_logs_suppressed =
      &UnlabelledCounter(r, "rlvr_learner_reject_logs_suppressed_total",
                         "Rejected-group log lines left out by the log rate limit.");
}

prometheus::Counter& LearnerMetrics::CallRefused(const std::string& reason) {
  return call_refusals_family->Add({{"reason", reason}});
}

prometheus::Counter& LearnerMetrics::Rejected(rlvr::v1::RejectReason reason) {
  return groups_rejected_family->Add({{"reason", RejectReasonLabel(reason)}});
}

}  // namespace rlvr::learner
