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
#include "common/config/run_config.h"
#include "common/tasks/task.h"
#include "common/tokenizer/tokenizer.h"

namespace rlvr::policy {

class Transformer;  // model.h

struct PretrainProgress {
  int step = 0;            // Optimizer steps done.
  int total_steps = 0;     // config.steps.
  double loss = 0.0;       // Mean token NLL of the last step's batch.
  double lr = 0.0;         // Learning rate used by the last step.
  double grad_norm = 0.0;  // Global grad norm before clipping.
  double elapsed_s = 0.0;  // Since Pretrain started.
  // Greedy accuracy on the validation prompts if checked at this step, else -1.
  double validation_accuracy = -1.0;
};

struct PretrainOptions {
  PretrainConfig config;   // Steps, batch, LR schedule, data_fraction, seed.
  int threads = 1;         // torch::set_num_threads for the run.
  int log_every = 25;      // on_progress every this many steps (and at the last).
  int max_new_tokens = 8;  // Completion cap of the validation check's greedy decoding.
  // Called from the calling thread; may be empty.
  std::function<void(const PretrainProgress&)> on_progress;
};

struct PretrainResult {
  int steps = 0;            // Optimizer steps done.
  int examples = 0;         // Distinct training prompts used (data_fraction of train()).
  double final_loss = 0.0;  // Loss of the last step.
  double seconds = 0.0;     // Wall time.
  // With config.stop_accuracy > 0: whether it was reached before config.steps,
  // and the last validation accuracy measured (-1 when never checked).
  bool reached_stop_accuracy = false;
  double validation_accuracy = -1.0;
};

// Trains `model` on the first ceil(data_fraction * |train|) training prompts
// (each batch drawn by a shuffle seeded by config.seed). With
// config.stop_accuracy > 0 the last config.validation_prompts training
// prompts are held out of that set, the greedy accuracy on them is checked
// every config.validate_every steps, and training stops at the first check
// that reaches stop_accuracy (the last step is always checked). Does not
// write files. Deterministic for a given config, thread count and machine.
// Errors: an unencodable prompt, no training data, validation_prompts not
// below the training split's size, a torch error (Internal).
absl::StatusOr<PretrainResult> Pretrain(Transformer& model, const Tokenizer& tokenizer,
                                        const Task& task, const PretrainOptions& options);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_PRETRAIN_H_
