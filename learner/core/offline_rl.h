// A single-process RL loop over the learning core, for quick estimator
// comparisons when the full system (`rlvr run`: actors, learner, gRPC) is too
// heavy for the machine: sample G completions per prompt with the current
// policy (policy::Generate), score them with the task's verifier, plan the
// update (PlanUpdate) and accumulate each optimizer step's gradient
// (AccumulateStepGradients) exactly as the trainer does, with the trainer's
// AdamW, LR schedule and grad clipping. Synchronous and on-policy (every
// update samples with the newest weights), like configs/chain.yaml's
// max_policy_lag 0. No checkpoints, no reference-policy KL (kl_coef must be 0).
//
// Writes into out_dir: metrics.jsonl (one line per update: step,
// step_seconds, every diagnostic with a JSON key in
// proto/rlvr/v1/diagnostics.proto, written as the learner writes them, and
// heldout_accuracy every eval.every updates and at the last) and summary.json
// (base_heldout_accuracy, final_heldout_accuracy, updates, seconds), the same
// files scripts/compare reads from an `rlvr run` directory.
//
// Thread safety: one call at a time per process (sets torch's thread count).
#ifndef RLVR_LEARNER_CORE_OFFLINE_RL_H_
#define RLVR_LEARNER_CORE_OFFLINE_RL_H_

#include <string>

#include "absl/status/status.h"
#include "common/config/run_config.h"

namespace rlvr::learner {

struct OfflineRlOptions {
  std::string out_dir;         // Created if missing.
  bool pretrain_only = false;  // Only make sure the base checkpoint exists.
};

// The base policy is read from config.pretrain.checkpoint, or pretrained
// (config.pretrain, validation with sampling.max_new_tokens) and saved there
// when the file does not exist. Uses config.{model, task, pretrain, sampling,
// learner.group_size, learner.groups_per_update, learner.seed, loss, batching,
// optim, eval, run.total_updates}.
absl::Status RunOfflineRl(const RunConfig& config, const OfflineRlOptions& options);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_OFFLINE_RL_H_
