// The actor's Prometheus metrics, registered once per Actor in the registry
// it is given. Internal to actor/ (the public surface is ActorStats).
//
// Thread safety: prometheus-cpp metrics are thread-safe.
#ifndef RLVR_ACTOR_ACTOR_METRICS_H_
#define RLVR_ACTOR_ACTOR_METRICS_H_

#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace rlvr::actor {

struct ActorMetrics {
  explicit ActorMetrics(prometheus::Registry& registry);

  prometheus::Counter& tokens;
  prometheus::Counter& groups_sent;
  prometheus::Counter& groups_rejected;
  prometheus::Counter& reconnects;
  prometheus::Counter& weight_sync_failures;
  prometheus::Histogram& generation_seconds;
  prometheus::Histogram& weight_sync_seconds;
  prometheus::Gauge& policy_version;
  prometheus::Gauge& reward_mean;
  prometheus::Gauge& leases_in_flight;
  prometheus::Gauge& session_up;
  // Generation (both engines; docs/actor.md, Observability).
  prometheus::Counter& slot_steps;
  prometheus::Counter& row_steps;
  prometheus::Gauge& rows_running;
  prometheus::Gauge& rows_waiting;
  prometheus::Gauge& kv_cache_used_bytes;
  prometheus::Gauge& kv_cache_capacity_bytes;
  prometheus::Counter& kv_cache_preemptions;
  prometheus::Counter& prefill_seconds;
  prometheus::Counter& decode_seconds;
  prometheus::Counter& prefill_tokens;
  prometheus::Counter& prefill_tokens_reused;
};

}  // namespace rlvr::actor

#endif  // RLVR_ACTOR_ACTOR_METRICS_H_
