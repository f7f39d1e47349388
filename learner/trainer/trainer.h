// The learner's data-parallel trainer: turns the complete groups of one
// update into a new policy version.
//
// Per update (RunUpdate), on every rank in lockstep:
//   1. rank 0 plans the update (learner::PlanUpdate: dynamic sampling, reward
//      balancing, query-preserved mini-batches, per-step normaliser Z) and
//      broadcasts the plan and the groups in a compact binary message (plus,
//      on the first update after Create or Resume, its full training state:
//      weights, optimizer state, counters); the other ranks receive them;
//   2. with loss.old_logprobs == "recompute" and more than one optimizer step,
//      the old log-probs are computed once (no grad) before the first step, so
//      every step's ratio is taken against the policy at the start of the
//      update (with one step they equal the detached current log-probs);
//   3. per optimizer step: zero grads, AccumulateStepGradients on this rank's
//      ShardStep, all-reduce (sum) of the flattened gradients, global-norm
//      clip (optim.grad_clip), LR from the schedule, AdamW step;
//   4. diagnostics are merged across ranks (all-reduce of raw sums, max for
//      ratio_max); step and version advance by one.
// Because Z is fixed per step before sharding and gradients are summed, the
// update does not depend on the world size beyond float tolerance.
//
// LR schedule: linear warm-up over optim.warmup_steps optimizer steps, then
// constant or cosine down to optim.min_lr_ratio x lr at optimizer step
// total_updates x batching.mini_batches x batching.epochs.
//
// Lifecycle (every rank): Create (rendezvous) -> Resume (rank 0 loads the
// latest complete checkpoint; other ranks return "" and receive the state
// with their first update) -> RunUpdate ... until UpdateResult.stop. Rank 0
// passes the update's groups; ranks > 0 pass {} and loop on RunUpdate until
// it returns stop == true. Rank 0 ends the job by passing stop_after = true
// (groups may then be empty: an empty update trains nothing and leaves step
// and version unchanged). A rank > 0 waits up to options.idle_timeout for
// rank 0's next update (rank 0 may wait long for rollouts); every other
// collective is bounded by learner.collective_timeout_s.
//
// Checkpoints: SaveCheckpoint is rank 0 only and involves no collective (the
// state is identical on every rank); on other ranks it is a no-op. A
// checkpoint holds the weights (policy::SerializeWeights), the AdamW state,
// step, version, the LR-schedule position, the torch RNG state and the
// ingest side's opaque bytes; see checkpointer.h for the on-disk format.
//
// Failure: any error (a peer's timeout, bad groups, a LibTorch exception) is
// returned as a Status; after a failed collective the trainer is unusable
// (the ranks are out of step) and the process should exit. If RunUpdate fails
// before the optimizer steps, parameters are unchanged.
//
// Thread safety: not thread-safe. One thread owns the Trainer and calls all
// its methods.
#ifndef RLVR_LEARNER_TRAINER_TRAINER_H_
#define RLVR_LEARNER_TRAINER_TRAINER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/config/run_config.h"
#include "learner/core/group.h"
#include "learner/diagnostics/update_diagnostics.h"

namespace rlvr::policy {
class Transformer;
}  // namespace rlvr::policy

namespace rlvr::learner {

class Communicator;
class UpdateMetrics;

struct TrainerOptions {
  ModelConfig model;        // Policy shape (must match base weights).
  LossConfig loss;          // Estimator and its knobs.
  BatchingConfig batching;  // Planner knobs (mini_batches, epochs, micro-batches...).
  OptimConfig optim;        // AdamW, clipping, LR schedule.
  LearnerConfig learner;    // threads, collective_timeout_s, keep_checkpoints, seed.
  int max_new_tokens = 8;   // sampling.max_new_tokens (the constant normaliser).
  int total_updates = 60;   // run.total_updates: length of the LR schedule in updates.
  int vocab_size = 0;       // Tokenizer vocabulary; 0 = the char tokenizer's.
  int rank = 0;             // This process's rank.
  int world_size = 1;       // Data-parallel ranks.
  std::string master_addr = "127.0.0.1";  // Rank 0's rendezvous host (MASTER_ADDR).
  int master_port = 0;           // Rendezvous port (MASTER_PORT); required when world_size > 1.
  std::string backend = "auto";  // Communicator: auto | gloo | nccl | local.
  // Directory of checkpoints (rank 0); "" disables SaveCheckpoint/Resume.
  std::string checkpoint_dir;
  // Base (pretrained) weights blob, read by rank 0 only; "" = random init
  // seeded by learner.seed. Also the frozen KL reference when loss.kl_coef > 0.
  std::string base_weights_path;
  // How long a rank > 0 waits for rank 0's next update message.
  absl::Duration idle_timeout = absl::Hours(24);

  // The sections of `config` this trainer uses (rank, world and paths are
  // left at their defaults).
  static TrainerOptions FromRunConfig(const RunConfig& config);
};

struct UpdateResult {
  uint64_t step = 0;     // Updates done after this one.
  uint64_t version = 0;  // Policy version after this one.
  // The update's diagnostics, merged over ranks and finalized (identical on
  // every rank): proto/rlvr/v1/diagnostics.proto.
  UpdateDiagnostics diagnostics;
  double step_seconds = 0.0;  // Wall time of RunUpdate on this rank.
  bool stop = false;          // Rank 0's stop_after: the job is ending.
  bool trained = false;       // False for an empty update (no groups).
};

class Trainer {
 public:
  // Parses options.loss once (ParsedEstimator::Parse: InvalidArgument naming
  // the key, e.g. an unregistered loss.estimator), then builds the model
  // (loading base_weights_path on rank 0), the optional KL reference, AdamW
  // and the communicator (rendezvous with the other ranks, bounded by
  // learner.collective_timeout_s). `metrics` may be null; rank 0 records
  // every update, the step, the world size and checkpoint times in it (it
  // registers nothing itself). `metrics` must outlive the Trainer.
  static absl::StatusOr<std::unique_ptr<Trainer>> Create(const TrainerOptions& options,
                                                         UpdateMetrics* metrics);
  ~Trainer();

  // One update (see the header comment). Rank 0 passes the groups (already
  // validated by the ingest side) and whether the job stops after it; ranks
  // > 0 pass {} and false and get both from rank 0.
  absl::StatusOr<UpdateResult> RunUpdate(std::vector<Group> groups, bool stop_after);

  uint64_t step() const;     // Updates done.
  uint64_t version() const;  // Current policy version.
  int rank() const;
  int world_size() const;

  // Rank 0: writes checkpoint ckpt-<step> with `ingest_state` (opaque bytes
  // from the ingest side: dataset cursor, outstanding leases), atomically,
  // keeping the newest learner.keep_checkpoints. Other ranks: no-op, OK.
  // FailedPrecondition if checkpoint_dir is empty.
  absl::Status SaveCheckpoint(const std::string& ingest_state);

  // Rank 0: loads the newest complete checkpoint, if any (corrupt or partial
  // ones are skipped with a warning), and returns its ingest_state ("" when
  // starting fresh or when checkpoint_dir is empty). Other ranks return ""
  // at once; they receive the state with their next update. Call once after
  // Create, before the first RunUpdate.
  absl::StatusOr<std::string> Resume();

  // The policy being trained (owned by the Trainer).
  policy::Transformer& model();

  // Current learning rate (of the next optimizer step).
  double current_lr() const;

 private:
  class Impl;
  explicit Trainer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The model weight blob (policy::SerializeWeights, tagged with the policy
// version) of one checkpoint directory written by SaveCheckpoint (a
// `ckpt-<step>` path), after verifying the checkpoint: what `rlvr score`,
// `rlvr export` and `rlvr eval` read. DataLoss/NotFound naming the part.
absl::StatusOr<std::string> ReadCheckpointWeights(const std::string& checkpoint_path);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_TRAINER_TRAINER_H_
