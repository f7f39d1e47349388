// The learning-rate schedule of RL training, shared by the trainer and the
// offline loop: `optim`'s warm-up, then constant or cosine decay over the run's
// optimizer steps (total_updates x mini_batches x epochs). Pure.
#ifndef RLVR_LEARNER_CORE_RL_SCHEDULE_H_
#define RLVR_LEARNER_CORE_RL_SCHEDULE_H_

#include <algorithm>

#include "common/base/lr_schedule.h"
#include "common/config/run_config.h"

namespace rlvr::learner {

inline LrSchedule RlLrSchedule(const OptimConfig& optim, const BatchingConfig& batching,
                               int total_updates) {
  LrSchedule s;
  s.peak = optim.lr;
  s.warmup_steps = optim.warmup_steps;
  s.cosine = optim.schedule == "cosine";
  s.total_steps = static_cast<double>(std::max(1, total_updates)) *
                  std::max(1, batching.mini_batches) * std::max(1, batching.epochs);
  s.min_lr_ratio = optim.min_lr_ratio;
  return s;
}

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_RL_SCHEDULE_H_
