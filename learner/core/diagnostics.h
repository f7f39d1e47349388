// Diagnostics computed alongside the loss that are not part of an estimator:
// the cancellation residual on shared-prefix tokens (docs/algorithms.md).
//
// Thread-compatible: pure functions.
#ifndef RLVR_LEARNER_CORE_DIAGNOSTICS_H_
#define RLVR_LEARNER_CORE_DIAGNOSTICS_H_

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace rlvr::learner {

// Length of the longest token prefix shared by every completion (0 for fewer
// than two completions). All completions of a group follow the same prompt, so
// position t < CommonPrefixLength has the identical context (prompt + o_<t)
// and the identical token in every rollout: a shared cell.
int CommonPrefixLength(const std::vector<const std::vector<int>*>& completions);

// Sums for the cancellation residual over shared cells:
//   net = sum_cells |sum_{i in g} coeff[i,t]|,  abs = sum_cells sum_{i in g} |coeff[i,t]|
// where the cells are (group g, position t < shared_len[g]), and coeff[i,t]
// = d loss / d lp_new[i,t]. residual = net / abs (0 when abs = 0).
struct CancellationSums {
  double net = 0.0;
  double abs = 0.0;
  int64_t cells = 0;  // Shared (group, position) cells seen.
};

// coeff: [N,T]; group_ids: [N] int64 in [0, num_groups); shared_len: one per
// group (entries <= T).
CancellationSums SharedPrefixCancellation(const torch::Tensor& coeff,
                                          const torch::Tensor& group_ids, int64_t num_groups,
                                          const std::vector<int64_t>& shared_len);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_DIAGNOSTICS_H_
