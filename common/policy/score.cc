#include "common/policy/score.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/policy/logprobs.h"
#include "common/policy/model.h"

namespace rlvr::policy {

absl::StatusOr<SequenceScore> ScoreSequence(Transformer& model, const std::vector<int>& ids,
                                            int64_t chunk_rows) {
  if (ids.empty()) return absl::InvalidArgumentError("score: empty id sequence");
  const int vocab = model->vocab_size();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab) {
      return absl::InvalidArgumentError(absl::StrCat(
          "score: id ", ids[i], " at index ", i, " is outside the vocabulary [0, ", vocab, ")"));
    }
  }
  const int64_t n = static_cast<int64_t>(ids.size());
  const torch::Tensor& weight = model->OutputWeight();
  const torch::ScalarType compute =
      weight.scalar_type() == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
  if (chunk_rows <= 0) {
    chunk_rows = std::max<int64_t>(
        1, kLogitChunkBytes / (weight.size(0) * static_cast<int64_t>(torch::elementSize(compute))));
  }
  SequenceScore out;
  try {
    torch::NoGradGuard no_grad;
    std::vector<int64_t> ids64(ids.begin(), ids.end());
    torch::Tensor tokens = torch::tensor(ids64, torch::kInt64).unsqueeze(0);
    torch::Tensor hidden = model->Hidden(tokens)[0];  // [n, D], on the model's device
    // Mixed precision: the float32 output weight in the states' dtype.
    const torch::Tensor w = weight.to(hidden.scalar_type());
    torch::Tensor targets = torch::zeros({n}, torch::kInt64);
    if (n > 1) targets.narrow(0, 0, n - 1).copy_(tokens[0].narrow(0, 1, n - 1));
    targets = targets.to(hidden.device());
    torch::Tensor logp = torch::empty({n}, torch::TensorOptions().dtype(torch::kFloat64));
    torch::Tensor greedy = torch::empty({n}, torch::kInt64);
    for (int64_t begin = 0; begin < n; begin += chunk_rows) {
      const int64_t rows = std::min(chunk_rows, n - begin);
      torch::Tensor logits = torch::mm(hidden.narrow(0, begin, rows), w.t()).to(compute);
      torch::Tensor lsm = torch::log_softmax(logits, -1);
      logp.narrow(0, begin, rows)
          .copy_(lsm.gather(1, targets.narrow(0, begin, rows).unsqueeze(1)).squeeze(1));
      greedy.narrow(0, begin, rows).copy_(logits.argmax(-1));
    }
    auto lp = logp.accessor<double, 1>();
    auto gr = greedy.accessor<int64_t, 1>();
    out.logprobs.reserve(n - 1);
    for (int64_t i = 0; i + 1 < n; ++i) out.logprobs.push_back(lp[i]);
    out.greedy.reserve(n);
    for (int64_t i = 0; i < n; ++i) out.greedy.push_back(static_cast<int>(gr[i]));
  } catch (const c10::Error& e) {
    return absl::InvalidArgumentError(absl::StrCat("score: ", e.what_without_backtrace()));
  }
  return out;
}

}  // namespace rlvr::policy
