#include "common/policy/logprobs.h"

#include <algorithm>

namespace rlvr::policy {

CompletionLogProbs ComputeCompletionLogProbs(Transformer& model,
                                             const std::vector<const std::vector<int>*>& prompts,
                                             const std::vector<const std::vector<int>*>& completions,
                                             bool with_entropy) {
  TORCH_CHECK(prompts.size() == completions.size(), "prompts and completions differ in count");
  const int64_t n = static_cast<int64_t>(prompts.size());
  int64_t max_len = 1;
  int64_t t_max = 0;
  for (int64_t r = 0; r < n; ++r) {
    TORCH_CHECK(prompts[r] != nullptr && completions[r] != nullptr, "null row");
    TORCH_CHECK(!prompts[r]->empty(), "prompt ", r, " is empty");
    const int64_t c = static_cast<int64_t>(completions[r]->size());
    max_len = std::max<int64_t>(max_len, prompts[r]->size() + c);
    t_max = std::max(t_max, c);
  }
  const auto dtype = model->parameters().front().scalar_type();
  CompletionLogProbs out;
  if (n == 0 || t_max == 0) {
    out.logprobs = torch::zeros({n, t_max}, torch::TensorOptions().dtype(dtype));
    out.mask = torch::zeros({n, t_max});
    if (with_entropy) out.entropy = torch::zeros({n, t_max}, torch::TensorOptions().dtype(dtype));
    return out;
  }
  // Right-padded rows: prompt, completion, pad. Column t of row r reads the
  // logits at position len(prompt)-1+t, which predict completion[t].
  torch::Tensor tokens = torch::zeros({n, max_len}, torch::kInt64);
  torch::Tensor index = torch::zeros({n, t_max}, torch::kInt64);
  torch::Tensor targets = torch::zeros({n, t_max}, torch::kInt64);
  torch::Tensor mask = torch::zeros({n, t_max}, torch::kFloat32);
  auto tok = tokens.accessor<int64_t, 2>();
  auto idx = index.accessor<int64_t, 2>();
  auto tgt = targets.accessor<int64_t, 2>();
  auto msk = mask.accessor<float, 2>();
  for (int64_t r = 0; r < n; ++r) {
    const auto& p = *prompts[r];
    const auto& c = *completions[r];
    const int64_t pl = static_cast<int64_t>(p.size());
    for (int64_t j = 0; j < pl; ++j) tok[r][j] = p[j];
    for (int64_t t = 0; t < static_cast<int64_t>(c.size()); ++t) {
      tok[r][pl + t] = c[t];
      idx[r][t] = pl - 1 + t;
      tgt[r][t] = c[t];
      msk[r][t] = 1.0f;
    }
  }
  torch::Tensor logits = model->forward(tokens);  // [N, L, V]
  const int64_t v = logits.size(-1);
  torch::Tensor picked = logits.gather(1, index.unsqueeze(-1).expand({n, t_max, v}));
  torch::Tensor logp = torch::log_softmax(picked, -1);
  torch::Tensor typed_mask = mask.to(logp.scalar_type());
  out.logprobs = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1) * typed_mask;
  out.mask = mask;
  if (with_entropy) {
    torch::NoGradGuard no_grad;
    torch::Tensor lp = logp.detach();
    out.entropy = -(lp.exp() * lp).sum(-1) * typed_mask;
  }
  return out;
}

}  // namespace rlvr::policy
