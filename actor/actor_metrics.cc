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
          "Wall time to generate and verify one static batch, or one group from the admission "
          "of its first row (continuous).",
          SecondsBuckets())),
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
                                 "1 while a session with the learner is established.")),
      slot_steps(UnlabelledCounter(
          r, "rlvr_actor_slot_steps_total",
          "Row slots offered by decode passes: actor.max_batch_rows per pass (static batching: "
          "the batch's rows per step). Slot utilisation = rlvr_actor_row_steps_total / this.")),
      row_steps(UnlabelledCounter(r, "rlvr_actor_row_steps_total",
                                  "Useful row-steps: rows still generating fed through a decode "
                                  "pass.")),
      rows_running(UnlabelledGauge(r, "rlvr_actor_rows_running",
                                   "Rows holding a slot of the continuous-batching engine.")),
      rows_waiting(
          UnlabelledGauge(r, "rlvr_actor_rows_waiting",
                          "Rows of the engine's groups waiting for a slot or for KV cache room.")),
      kv_cache_used_bytes(
          UnlabelledGauge(r, "rlvr_actor_kv_cache_used_bytes", "KV pool blocks in use, in bytes.")),
      kv_cache_capacity_bytes(
          UnlabelledGauge(r, "rlvr_actor_kv_cache_capacity_bytes",
                          "KV pool size in bytes (static batching: the last batch's cache).")),
      kv_cache_preemptions(UnlabelledCounter(
          r, "rlvr_actor_kv_cache_preemptions_total",
          "Rows preempted for want of KV blocks (their cache is recomputed on re-admission).")),
      prefill_seconds(UnlabelledCounter(r, "rlvr_actor_prefill_seconds_total",
                                        "Wall time of prompt passes (forward and sampling).")),
      decode_seconds(UnlabelledCounter(r, "rlvr_actor_decode_seconds_total",
                                       "Wall time of one-token decode passes (forward and "
                                       "sampling).")),
      prefill_tokens(UnlabelledCounter(r, "rlvr_actor_prefill_tokens_total",
                                       "Prompt positions computed by prompt passes.")),
      prefill_tokens_reused(UnlabelledCounter(
          r, "rlvr_actor_prefill_tokens_reused_total",
          "Prompt positions rows took from their group's one prefill instead of computing.")) {}

}  // namespace rlvr::actor
