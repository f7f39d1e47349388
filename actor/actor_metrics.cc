#include "actor/actor_metrics.h"

#include "common/metrics/metrics.h"

namespace rlvr::actor {

ActorMetrics::ActorMetrics(prometheus::Registry& r)
    : tokens(UnlabelledCounter(r, "rlvr_actor_tokens_generated_total",
                               "Completion tokens sampled by this actor.")),
      groups_sent(UnlabelledCounter(r, "rlvr_actor_groups_sent_total",
                                    "Rollout groups sent to the learner.")),
      groups_rejected(
          UnlabelledCounter(r, "rlvr_actor_groups_rejected_total",
                            "Rollout groups the learner rejected (Ack.accepted = false).")),
      reconnects(UnlabelledCounter(r, "rlvr_actor_reconnects_total",
                                   "Session attempts after a failed or broken session.")),
      weight_sync_failures(
          UnlabelledCounter(r, "rlvr_actor_weight_sync_failures_total",
                            "Weight transfers discarded (corrupt, partial, unloadable).")),
      generation_seconds(UnlabelledHistogram(
          r, "rlvr_actor_generation_seconds",
          "Wall time of one generation batch (generate + verify).", SecondsBuckets())),
      weight_sync_seconds(UnlabelledHistogram(r, "rlvr_actor_weight_sync_seconds",
                                              "First chunk to staged model, per policy version.",
                                              SecondsBuckets())),
      policy_version(UnlabelledGauge(r, "rlvr_actor_policy_version",
                                     "Policy version used for generation (0 = none).")),
      reward_mean(
          UnlabelledGauge(r, "rlvr_actor_reward_mean", "Mean verifier reward of the last batch.")),
      leases_in_flight(UnlabelledGauge(r, "rlvr_actor_leases_in_flight",
                                       "Leases held now (queued or being generated).")),
      session_up(UnlabelledGauge(r, "rlvr_actor_session_up",
                                 "1 while a session with the learner is established.")) {}

}  // namespace rlvr::actor
