#include "learner/core/diagnostics.h"

#include <algorithm>

#include "learner/core/estimator.h"

namespace rlvr::learner {

int CommonPrefixLength(const std::vector<const std::vector<int>*>& completions) {
  if (completions.size() < 2) return 0;
  size_t len = completions[0]->size();
  for (const std::vector<int>* c : completions) len = std::min(len, c->size());
  for (size_t t = 0; t < len; ++t) {
    const int token = (*completions[0])[t];
    for (const std::vector<int>* c : completions) {
      if ((*c)[t] != token) return static_cast<int>(t);
    }
  }
  return static_cast<int>(len);
}

CancellationSums SharedPrefixCancellation(const torch::Tensor& coeff,
                                          const torch::Tensor& group_ids, int64_t num_groups,
                                          const std::vector<int64_t>& shared_len) {
  CancellationSums sums;
  TORCH_CHECK(static_cast<int64_t>(shared_len.size()) == num_groups, "one shared length per group");
  int64_t max_len = 0;
  for (int64_t l : shared_len) {
    sums.cells += l;
    max_len = std::max(max_len, l);
  }
  if (max_len == 0) return sums;
  torch::NoGradGuard no_grad;
  const int64_t t = std::min<int64_t>(max_len, coeff.size(1));
  torch::Tensor c = coeff.detach().narrow(1, 0, t);
  torch::Tensor len = torch::tensor(shared_len, torch::kInt64).index_select(0, group_ids);
  torch::Tensor in_cell =
      (torch::arange(t, torch::kInt64).unsqueeze(0) < len.unsqueeze(1)).to(c.scalar_type());
  torch::Tensor masked = c * in_cell;
  sums.net = GroupSum(masked, group_ids, num_groups).abs().sum().item<double>();
  sums.abs = masked.abs().sum().item<double>();
  return sums;
}

}  // namespace rlvr::learner
