// The learning-rate schedule shared by pretraining and the RL trainer: linear
// warm-up, then constant or cosine decay to a floor. Pure; thread-safe.
#ifndef RLVR_COMMON_BASE_LR_SCHEDULE_H_
#define RLVR_COMMON_BASE_LR_SCHEDULE_H_

#include <algorithm>
#include <cmath>

namespace rlvr {

struct LrSchedule {
  double peak = 1e-3;         // LR after warm-up.
  int warmup_steps = 0;       // Linear ramp: step s < warmup gets peak * (s + 1) / warmup.
  bool cosine = false;        // false: constant peak after warm-up.
  double total_steps = 1;     // cosine: the step at which the floor is reached.
  double min_lr_ratio = 0.1;  // cosine: floor as a fraction of peak.

  // The LR of 0-based optimizer step `step`. Past total_steps it stays at the floor.
  double At(double step) const {
    if (warmup_steps > 0 && step < warmup_steps) return peak * (step + 1) / warmup_steps;
    if (!cosine) return peak;
    const double span = std::max(1.0, total_steps - warmup_steps);
    const double progress = std::clamp((step - warmup_steps) / span, 0.0, 1.0);
    return peak * (min_lr_ratio + (1 - min_lr_ratio) * 0.5 * (1 + std::cos(M_PI * progress)));
  }
};

}  // namespace rlvr

#endif  // RLVR_COMMON_BASE_LR_SCHEDULE_H_
