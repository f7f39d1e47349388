// DFPO's in-group weight transform, exposed for its tests (dfpo.cc is the
// estimator; docs/algorithms.md "dfpo").
//
// Thread-compatible: a pure function.
#ifndef RLVR_LEARNER_CORE_ESTIMATORS_DFPO_H_
#define RLVR_LEARNER_CORE_ESTIMATORS_DFPO_H_

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace rlvr::learner {

// DFPO's in-group weight transform (differentiable; the estimator calls it on
// detached values, which is the stop-gradient of ALGORITHMS.md):
//   "min_replace":    w~_i = min_{j in g(i)} c_j                 (Eq. 17)
//   "adv_orthogonal": w~ = c - (A.c / |A|^2) A, per group         (Eq. 18)
// A group with |A|^2 <= 1e-24 keeps c under adv_orthogonal (no NaN).
// `c`, `advantages`: [N]; `group_ids`: [N] int64 in [0, num_groups).
torch::Tensor DfpoTransform(const torch::Tensor& c, const torch::Tensor& advantages,
                            const torch::Tensor& group_ids, int64_t num_groups,
                            const std::string& transform);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_ESTIMATORS_DFPO_H_
