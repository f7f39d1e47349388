#include "actor/actor_metrics.h"

#include "common/metrics/metrics.h"

namespace rlvr::actor {

ActorMetrics::ActorMetrics(prometheus::Registry& r)
    : tokens(prometheus::BuildCounter()
                 .Name("rlvr_actor_tokens_generated_total")
                 .Help("Completion tokens sampled by this actor.")
                 .Register(r)
                 .Add({})),
      groups_sent(prometheus::BuildCounter()
                      .Name("rlvr_actor_groups_sent_total")
                      .Help("Rollout groups sent to the learner.")
                      .Register(r)
                      .Add({})),
      groups_rejected(prometheus::BuildCounter()
                          .Name("rlvr_actor_groups_rejected_total")
                          .Help("Rollout groups the learner rejected (Ack.accepted = false).")
                          .Register(r)
                          .Add({})),
      reconnects(prometheus::BuildCounter()
                     .Name("rlvr_actor_reconnects_total")
                     .Help("Session attempts after a failed or broken session.")
                     .Register(r)
                     .Add({})),
      weight_sync_failures(prometheus::BuildCounter()
                               .Name("rlvr_actor_weight_sync_failures_total")
                               .Help("Weight transfers discarded (corrupt, partial, unloadable).")
                               .Register(r)
                               .Add({})),
      generation_seconds(prometheus::BuildHistogram()
                             .Name("rlvr_actor_generation_seconds")
                             .Help("Wall time of one generation batch (generate + verify).")
                             .Register(r)
                             .Add({}, SecondsBuckets())),
      weight_sync_seconds(prometheus::BuildHistogram()
                              .Name("rlvr_actor_weight_sync_seconds")
                              .Help("First chunk to staged model, per policy version.")
                              .Register(r)
                              .Add({}, SecondsBuckets())),
      policy_version(prometheus::BuildGauge()
                         .Name("rlvr_actor_policy_version")
                         .Help("Policy version used for generation (0 = none).")
                         .Register(r)
                         .Add({})),
      reward_mean(prometheus::BuildGauge()
                      .Name("rlvr_actor_reward_mean")
                      .Help("Mean verifier reward of the last batch.")
                      .Register(r)
                      .Add({})),
      leases_in_flight(prometheus::BuildGauge()
                           .Name("rlvr_actor_leases_in_flight")
                           .Help("Leases held now (queued or being generated).")
                           .Register(r)
                           .Add({})),
      session_up(prometheus::BuildGauge()
                     .Name("rlvr_actor_session_up")
                     .Help("1 while a session with the learner is established.")
                     .Register(r)
                     .Add({})) {}

}  // namespace rlvr::actor
