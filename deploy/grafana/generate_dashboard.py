#!/usr/bin/env python3
"""Writes deploy/grafana/rlvr-dashboard.json (the Grafana dashboard for rlvr).

The JSON is committed; this script is its source. The deploy_dashboard_fresh
test fails when the two differ, so edit here and re-run:
    python3 deploy/grafana/generate_dashboard.py
Every query uses only the metrics of the learner/actor contract
(deploy/checks/metrics-contract.txt) and Prometheus' `up`; the deploy tests
type-check the JSON against @grafana/schema and evaluate every query against a
live Prometheus scraping a real learner and actor.
"""
import json
import os
import sys

DS = {"type": "prometheus", "uid": "${datasource}"}
RATE = "$__rate_interval"
# One run = one namespace (the ServiceMonitor, prometheus-k8s.yml and the
# file_sd targets of prometheus.yml all set `namespace`); the `namespace`
# variable picks the run, so two runs in one Prometheus never merge.
RUN = 'namespace="$namespace"'
LEARNER = f'job="rlvr-learner", {RUN}'
ACTOR = f'job="rlvr-actor", {RUN}'
BOTH = f'job=~"rlvr-learner|rlvr-actor", {RUN}'


class Layout:
    """Places panels left to right on Grafana's 24-column grid."""

    def __init__(self):
        self.x = 0
        self.y = 0
        self.row_h = 0
        self.next_id = 1

    def row(self, title):
        if self.x:
            self.y += self.row_h
        panel = {"type": "row", "id": self.next_id, "title": title, "collapsed": False,
                 "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}, "panels": []}
        self.next_id += 1
        self.x, self.y, self.row_h = 0, self.y + 1, 0
        return panel

    def place(self, w, h):
        if self.x + w > 24:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        pos = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.row_h = max(self.row_h, h)
        pid = self.next_id
        self.next_id += 1
        return pid, pos


def target(ref, expr, legend, fmt=None):
    t = {"refId": ref, "datasource": DS, "expr": expr, "legendFormat": legend, "range": True,
         "instant": False, "editorMode": "code"}
    if fmt:
        t["format"] = fmt
    return t


def targets(*queries):
    return [target(chr(ord("A") + i), q[0], q[1], *q[2:]) for i, q in enumerate(queries)]


def timeseries(layout, title, description, queries, unit="short", w=8, h=8, min_=None, max_=None):
    pid, pos = layout.place(w, h)
    defaults = {"unit": unit, "custom": {"drawStyle": "line", "lineWidth": 1, "fillOpacity": 10,
                                          "showPoints": "never", "spanNulls": True}}
    if min_ is not None:
        defaults["min"] = min_
    if max_ is not None:
        defaults["max"] = max_
    return {
        "type": "timeseries", "id": pid, "title": title, "description": description,
        "datasource": DS, "gridPos": pos, "targets": targets(*queries),
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {"legend": {"showLegend": True, "displayMode": "list", "placement": "bottom",
                               "calcs": ["lastNotNull"]},
                    "tooltip": {"mode": "multi", "sort": "none"}},
    }


def stat(layout, title, description, queries, unit="short", w=4, h=4, thresholds=None,
         no_value=None, text_mode="auto"):
    pid, pos = layout.place(w, h)
    steps = thresholds or [{"color": "green", "value": None}]
    defaults = {"unit": unit, "thresholds": {"mode": "absolute", "steps": steps}}
    if no_value is not None:
        defaults["noValue"] = no_value
    return {
        "type": "stat", "id": pid, "title": title, "description": description,
        "datasource": DS, "gridPos": pos, "targets": targets(*queries),
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "orientation": "auto", "colorMode": "value", "graphMode": "area",
                    "justifyMode": "auto", "textMode": text_mode, "wideLayout": True,
                    "showPercentChange": False, "percentChangeColorMode": "standard"},
    }


def heatmap(layout, title, description, queries, w=8, h=8):
    pid, pos = layout.place(w, h)
    return {
        "type": "heatmap", "id": pid, "title": title, "description": description,
        "datasource": DS, "gridPos": pos, "targets": targets(*queries),
        "fieldConfig": {"defaults": {"custom": {"hideFrom": {"legend": False, "tooltip": False,
                                                               "viz": False}}},
                        "overrides": []},
        "options": {"calculate": False, "yAxis": {"axisPlacement": "left", "unit": "short"},
                    "rowsFrame": {"layout": "le"},
                    "color": {"mode": "scheme", "scheme": "Oranges", "scale": "exponential",
                              "exponent": 0.5, "fill": "dark-orange", "reverse": False, "steps": 64},
                    "cellGap": 1, "exemplars": {"color": "rgba(255,0,255,0.7)"},
                    "filterValues": {"le": 1e-9}, "legend": {"show": True},
                    "tooltip": {"mode": "single", "yHistogram": False, "showColorScale": False},
                    "showValue": "auto"},
    }


def quantiles(metric, job, scale=""):
    return [(f'histogram_quantile({q}, sum by (le) (rate({metric}_bucket{{{job}}}[{RATE}]))){scale}',
             f"p{int(q * 100)}") for q in (0.5, 0.9)]


def build():
    L = Layout()
    panels = []
    red_at = lambda v: [{"color": "green", "value": None}, {"color": "red", "value": v}]

    panels.append(L.row("Overview"))
    panels.append(stat(L, "Learner step", "Optimizer updates done (rlvr_learner_step).",
                       [(f"max(rlvr_learner_step{{{LEARNER}}})", "step")]))
    panels.append(stat(L, "Policy version", "Current policy version broadcast to actors.",
                       [(f"max(rlvr_learner_policy_version{{{LEARNER}}})", "version")]))
    panels.append(stat(L, "Actors connected", "Actor sessions open on the learner.",
                       [(f"max(rlvr_learner_actors_connected{{{LEARNER}}})", "actors")],
                       thresholds=[{"color": "red", "value": None}, {"color": "green", "value": 1}]))
    # The timestamp is 0 until the first update: `> 0` leaves the panel empty
    # ("no update yet") instead of showing the age of the Unix epoch.
    panels.append(stat(L, "Since last update", "Seconds since the learner's last update "
                       "(alert RlvrLearnerNoStep at 600 s); empty before the first update.",
                       [(f"time() - max(rlvr_learner_last_step_timestamp_seconds{{{LEARNER}}} > 0)", "age")],
                       unit="s", thresholds=red_at(600), no_value="no update yet"))
    panels.append(stat(L, "Learner ranks", "Data-parallel world size of the learner.",
                       [(f"max(rlvr_learner_world_size{{{LEARNER}}})", "ranks")]))
    panels.append(stat(L, "Targets up", "Scraped rlvr processes that are up, of all scraped.",
                       [(f"sum(up{{{BOTH}}})", "up")]))
    # rlvr_learner_phase is 1 for the current phase: the series left after
    # `== 1` is named after it (served from the process's start, and by the
    # pretraining init container).
    panels.append(stat(L, "Learner phase", "What rank 0 does (rlvr_learner_phase): pretraining, "
                       "starting, rendezvous, resuming, training, evaluating, stopping.",
                       [(f"max by (phase) (rlvr_learner_phase{{{LEARNER}}}) == 1", "{{phase}}")],
                       w=8, no_value="no learner target", text_mode="name"))

    panels.append(L.row("Training progress"))
    panels.append(timeseries(L, "Reward", "Mean verifier reward of the last update's rollouts "
                             "(learner) and of each actor's recent groups.", [
                                 (f"max(rlvr_learner_reward_mean{{{LEARNER}}})", "learner (last update)"),
                                 (f"avg(rlvr_actor_reward_mean{{{ACTOR}}})", "actors (avg)")]))
    panels.append(timeseries(L, "Accuracy", "Training accuracy of the last update and greedy "
                             "held-out accuracy of the last evaluation.", [
                                 (f"max(rlvr_learner_accuracy{{{LEARNER}}})", "train"),
                                 (f"max(rlvr_learner_heldout_accuracy{{{LEARNER}}})", "held-out (greedy)")],
                             unit="percentunit", min_=0, max_=1))
    panels.append(timeseries(L, "Entropy", "Mean token entropy of the policy on trained "
                             "rollouts, nats (alert RlvrEntropyCollapse below 0.05).", [
                                 (f"max(rlvr_learner_entropy{{{LEARNER}}})", "entropy")], min_=0))
    panels.append(timeseries(L, "KL behaviour vs recomputed", "KL between the actors' behaviour "
                             "log-probs and the learner's recomputed ones: the off-policy mismatch.", [
                                 (f"max(rlvr_learner_kl_behaviour_recomputed{{{LEARNER}}})", "KL")]))
    panels.append(timeseries(L, "Behaviour weights", "Asynchronous runs (loss.behaviour_weight "
                             "truncated): mean per-token weight min(pi_prox / pi_behav, cap), near 1, "
                             "and the fraction of tokens truncated at the cap; both 0 when off.", [
                                 (f"max(rlvr_learner_behaviour_weight_mean{{{LEARNER}}})", "mean weight"),
                                 (f"max(rlvr_learner_behaviour_weight_truncated{{{LEARNER}}})",
                                  "truncated fraction")]))
    panels.append(timeseries(L, "Clip fraction and ratio", "Fraction of clipped tokens and the "
                             "importance ratio mean / max.", [
                                 (f"max(rlvr_learner_clip_fraction{{{LEARNER}}})", "clip fraction"),
                                 (f"max(rlvr_learner_ratio_mean{{{LEARNER}}})", "ratio mean"),
                                 (f"max(rlvr_learner_ratio_max{{{LEARNER}}})", "ratio max")]))
    panels.append(timeseries(L, "DFPO residuals", "Cancellation and orthogonality residuals of the "
                             "DFPO estimator (should stay near 0).", [
                                 (f"max(rlvr_learner_cancellation_residual{{{LEARNER}}})", "cancellation"),
                                 (f"max(rlvr_learner_orthogonality_residual{{{LEARNER}}})", "orthogonality")]))
    panels.append(timeseries(L, "Gradient norm", "Global gradient norm before clipping.", [
        (f"max(rlvr_learner_grad_norm{{{LEARNER}}})", "grad norm")]))
    panels.append(timeseries(L, "Rollout balance", "Positive / negative rollouts in the last update "
                             "and the fraction of zero-variance groups.", [
                                 (f"max(rlvr_learner_positive_rollouts{{{LEARNER}}})", "positive"),
                                 (f"max(rlvr_learner_negative_rollouts{{{LEARNER}}})", "negative")]))
    panels.append(timeseries(L, "Zero-variance groups", "Fraction of groups whose rollouts all got "
                             "the same reward (no learning signal).", [
                                 (f"max(rlvr_learner_zero_variance_fraction{{{LEARNER}}})", "zero variance")],
                             unit="percentunit", min_=0, max_=1))

    panels.append(L.row("Throughput"))
    panels.append(timeseries(L, "Tokens per second", "Completion tokens generated by all actors and "
                             "trained by the learner.", [
                                 (f"sum(rate(rlvr_actor_tokens_generated_total{{{ACTOR}}}[{RATE}]))", "generated"),
                                 (f"sum(rate(rlvr_learner_tokens_trained_total{{{LEARNER}}}[{RATE}]))", "trained")]))
    panels.append(timeseries(L, "Groups per second", "Groups sent by actors and accepted by the "
                             "learner.", [
                                 (f"sum(rate(rlvr_actor_groups_sent_total{{{ACTOR}}}[{RATE}]))", "sent"),
                                 (f"sum(rate(rlvr_learner_groups_accepted_total{{{LEARNER}}}[{RATE}]))", "accepted")]))
    panels.append(timeseries(L, "Update duration", "Seconds per learner update.",
                             quantiles("rlvr_learner_step_seconds", LEARNER), unit="s"))
    panels.append(timeseries(L, "Generation duration", "Seconds per actor generation batch "
                             "(static) or group, first row admitted to sent (continuous).",
                             quantiles("rlvr_actor_generation_seconds", ACTOR), unit="s"))

    panels.append(L.row("Generation engine"))
    panels.append(timeseries(L, "Slot utilisation", "Useful row-steps over the row slots decode "
                             "passes offered (continuous batching: actor.max_batch_rows per pass; "
                             "static: the batch's rows, finished ones included).", [
                                 (f"sum(rate(rlvr_actor_row_steps_total{{{ACTOR}}}[{RATE}])) / "
                                  f"sum(rate(rlvr_actor_slot_steps_total{{{ACTOR}}}[{RATE}]))", "utilisation")],
                             unit="percentunit", min_=0, max_=1))
    panels.append(timeseries(L, "Rows running and waiting", "Rows holding a slot of the actors' "
                             "engines, and rows of their groups waiting for a slot or KV room.", [
                                 (f"sum(rlvr_actor_rows_running{{{ACTOR}}})", "running"),
                                 (f"sum(rlvr_actor_rows_waiting{{{ACTOR}}})", "waiting")]))
    panels.append(timeseries(L, "KV cache", "KV pool in use and its size over all actors; rows "
                             "preempted for want of blocks per second.", [
                                 (f"sum(rlvr_actor_kv_cache_used_bytes{{{ACTOR}}})", "used"),
                                 (f"sum(rlvr_actor_kv_cache_capacity_bytes{{{ACTOR}}})", "capacity"),
                                 (f"sum(rate(rlvr_actor_kv_cache_preemptions_total{{{ACTOR}}}[{RATE}]))",
                                  "preemptions/s")], unit="bytes"))
    panels.append(timeseries(L, "Prefill and decode time", "Fraction of actor wall time in prompt "
                             "passes and in one-token decode passes (summed over actors).", [
                                 (f"sum(rate(rlvr_actor_prefill_seconds_total{{{ACTOR}}}[{RATE}]))", "prefill"),
                                 (f"sum(rate(rlvr_actor_decode_seconds_total{{{ACTOR}}}[{RATE}]))", "decode")],
                             unit="percentunit", min_=0))
    panels.append(timeseries(L, "Prompt positions", "Prompt positions computed per second, and "
                             "those rows took from their group's one prefill instead.", [
                                 (f"sum(rate(rlvr_actor_prefill_tokens_total{{{ACTOR}}}[{RATE}]))", "computed"),
                                 (f"sum(rate(rlvr_actor_prefill_tokens_reused_total{{{ACTOR}}}[{RATE}]))", "reused")]))

    panels.append(L.row("Pipeline health"))
    panels.append(timeseries(L, "Rollout buffer fill", "Groups in the learner's buffer over its "
                             "capacity (credits).", [
                                 (f"max(rlvr_learner_buffer_groups{{{LEARNER}}}) / "
                                  f"max(rlvr_learner_buffer_capacity_groups{{{LEARNER}}})", "fill")],
                             unit="percentunit", min_=0, max_=1))
    panels.append(heatmap(L, "Staleness (policy versions)", "Distribution of the policy lag of "
                          "ingested groups.", [
                              (f"sum by (le) (increase(rlvr_learner_staleness_versions_bucket{{{LEARNER}}}[{RATE}]))",
                               "{{le}}", "heatmap")]))
    panels.append(timeseries(L, "Rejected groups by reason", "Groups the learner rejected, per "
                             "reason, and rejections seen by actors.", [
                                 (f"sum by (reason) (rate(rlvr_learner_groups_rejected_total{{{LEARNER}}}[{RATE}]))",
                                  "{{reason}}"),
                                 (f"sum(rate(rlvr_actor_groups_rejected_total{{{ACTOR}}}[{RATE}]))",
                                  "seen by actors")]))
    panels.append(timeseries(L, "Dropped groups by reason", "Accepted groups that did not reach a "
                             "batch: stale, zero variance, reward balance, trust region.", [
                                 (f"sum by (reason) (rate(rlvr_learner_groups_dropped_total{{{LEARNER}}}[{RATE}]))",
                                  "{{reason}}")]))
    panels.append(timeseries(L, "Leases", "Leases granted and re-issued per second (re-issue = "
                             "expired lease re-queued), outstanding and in flight on actors.", [
                                 (f"sum(rate(rlvr_learner_leases_granted_total{{{LEARNER}}}[{RATE}]))", "granted/s"),
                                 (f"sum(rate(rlvr_learner_leases_reissued_total{{{LEARNER}}}[{RATE}]))", "re-issued/s"),
                                 (f"max(rlvr_learner_leases_outstanding{{{LEARNER}}})", "outstanding"),
                                 (f"sum(rlvr_actor_leases_in_flight{{{ACTOR}}})", "in flight (actors)")]))
    panels.append(timeseries(L, "Actor sessions", "Sessions per the learner and per the actors; "
                             "reconnects per second.", [
                                 (f"max(rlvr_learner_actors_connected{{{LEARNER}}})", "connected (learner)"),
                                 (f"sum(rlvr_actor_session_up{{{ACTOR}}})", "session up (actors)"),
                                 (f"sum(rate(rlvr_actor_reconnects_total{{{ACTOR}}}[{RATE}]))", "reconnects/s")]))

    panels.append(L.row("Weight sync"))
    panels.append(timeseries(L, "Weight sync duration", "Actor time to fetch and load a new "
                             "version; learner time to serialize it.",
                             quantiles("rlvr_actor_weight_sync_seconds", ACTOR) +
                             [(f'histogram_quantile(0.9, sum by (le) (rate(rlvr_learner_weight_publish_seconds_bucket{{{LEARNER}}}[{RATE}])))',
                               "publish p90")], unit="s"))
    panels.append(timeseries(L, "Weight blob size", "Bytes of the last published weight blob.", [
        (f"max(rlvr_learner_weight_publish_bytes{{{LEARNER}}})", "bytes")], unit="bytes"))
    panels.append(timeseries(L, "Policy version per actor", "Each actor's loaded version against "
                             "the learner's current one.", [
                                 (f"rlvr_actor_policy_version{{{ACTOR}}}", "{{instance}}"),
                                 (f"max(rlvr_learner_policy_version{{{LEARNER}}})", "learner")]))
    panels.append(timeseries(L, "Watchers and sync failures", "WatchWeights streams open on the "
                             "learner; actor weight-sync failures per second.", [
                                 (f"max(rlvr_learner_weight_watchers{{{LEARNER}}})", "watchers"),
                                 (f"sum(rate(rlvr_actor_weight_sync_failures_total{{{ACTOR}}}[{RATE}]))", "failures/s")]))

    panels.append(L.row("Process health"))
    panels.append(timeseries(L, "Scrape up", "1 when Prometheus reaches the process.", [
        (f"up{{{BOTH}}}", "{{job}} {{instance}}")], min_=0, max_=1, w=12))
    panels.append(timeseries(L, "Checkpoint duration", "Seconds to write a checkpoint (rank 0).",
                             quantiles("rlvr_learner_checkpoint_seconds", LEARNER), unit="s", w=12))
    panels.append(timeseries(L, "Refused calls (auth)", "Calls refused for a missing or wrong "
                             "bearer token, per service and reason (misconfigured or foreign "
                             "clients).", [
                                 (f"sum by (service, reason) (rate(rlvr_auth_failures_total{{{BOTH}}}[{RATE}]))",
                                  "{{service}} {{reason}}")],
                             w=12))

    return {
        "uid": "rlvr-overview",
        "title": "rlvr: actor-learner RLVR",
        "description": "Training progress, throughput, pipeline and weight-sync health of an rlvr job.",
        "tags": ["rlvr"],
        "editable": True,
        "graphTooltip": 1,
        "schemaVersion": 39,
        "version": 1,
        "refresh": "30s",
        "time": {"from": "now-6h", "to": "now"},
        "timepicker": {},
        "fiscalYearStartMonth": 0,
        "links": [],
        "annotations": {"list": []},
        "templating": {"list": [{
            "name": "datasource", "label": "Prometheus", "type": "datasource",
            "query": "prometheus", "hide": 0, "multi": False, "includeAll": False,
            "current": {"text": "default", "value": "default"}, "options": [], "refresh": 1, "regex": "", "skipUrlSync": False,
        }, {
            # The run: its namespace, from the learner's and actors' `up`.
            "name": "namespace", "label": "Run (namespace)", "type": "query", "datasource": DS,
            "query": {"query": 'label_values(up{job=~"rlvr-learner|rlvr-actor"}, namespace)',
                      "refId": "namespace"},
            "hide": 0, "multi": False, "includeAll": False, "current": {"text": "", "value": ""},
            "options": [],
            "refresh": 2, "regex": "", "sort": 1, "skipUrlSync": False,
        }]},
        "panels": panels,
    }


def main():
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rlvr-dashboard.json")
    if len(sys.argv) > 1:
        out = sys.argv[1]
    with open(out, "w") as f:
        json.dump(build(), f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
