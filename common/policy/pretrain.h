// Supervised warm start of the base policy (`rlvr pretrain`): next-token
// cross-entropy on the completion (answer + EOS) of training prompts, with
// AdamW, linear warm-up then cosine decay, and global grad-norm clipping.
//
// Thread safety: trains `model` in place; nothing else may use it meanwhile.
// Torch-free header.
#ifndef RLVR_COMMON_POLICY_PRETRAIN_H_
#define RLVR_COMMON_POLICY_PRETRAIN_H_

#include <functional>

#include "absl/status/statusor.h"
#include "common/run_config.h"
#include "common/task.h"
#include "common/tokenizer.h"

namespace rlvr::policy {

class Transformer;  // model.h

struct PretrainProgress {
  int step = 0;             // Optimizer steps done.
  int total_steps = 0;      // config.steps.
  double loss = 0.0;        // Mean token NLL of the last step's batch.
  double lr = 0.0;          // Learning rate used by the last step.
  double grad_norm = 0.0;   // Global grad norm before clipping.
  double elapsed_s = 0.0;   // Since Pretrain started.
};

struct PretrainOptions {
  PretrainConfig config;  // Steps, batch, LR schedule, data_fraction, seed.
  int threads = 1;        // torch::set_num_threads for the run.
  int log_every = 25;     // on_progress every this many steps (and at the last).
  // Called from the calling thread; may be empty.
  std::function<void(const PretrainProgress&)> on_progress;
};

struct PretrainResult {
  int steps = 0;            // Optimizer steps done.
  int examples = 0;         // Distinct training prompts used (data_fraction of train()).
  double final_loss = 0.0;  // Loss of the last step.
  double seconds = 0.0;     // Wall time.
};

// Trains `model` on the first ceil(data_fraction * |train|) training prompts
// (each batch drawn by a shuffle seeded by config.seed). Does not write files.
// Errors: an unencodable prompt, no training data, a torch error (Internal).
absl::StatusOr<PretrainResult> Pretrain(Transformer& model, const Tokenizer& tokenizer,
                                        const Task& task, const PretrainOptions& options);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_PRETRAIN_H_
