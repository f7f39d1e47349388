#include "common/policy/logprobs.h"

#include <algorithm>
#include <utility>

namespace rlvr::policy {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Log-softmax runs in float32, or float64 for a float64 model.
torch::ScalarType ComputeType(torch::ScalarType t) {
  return t == torch::kFloat64 ? torch::kFloat64 : torch::kFloat32;
}

// `weight` in the dtype of the hidden states (mixed precision: float32
// parameters, bfloat16 hidden states; cast once per pass, not per chunk).
torch::Tensor WeightLike(const torch::Tensor& weight, const torch::Tensor& hidden) {
  return weight.scalar_type() == hidden.scalar_type() ? weight : weight.to(hidden.scalar_type());
}

// Logits of `rows` in the compute dtype: the only [rows, V] tensors that
// exist at any time.
torch::Tensor ChunkLogits(const torch::Tensor& rows, const torch::Tensor& weight,
                          torch::ScalarType compute) {
  return torch::mm(rows, weight.t()).to(compute);
}

// log softmax(hidden x weight^T) at the targets, chunk by chunk. Saves only
// its inputs and the per-row log-sum-exp; backward recomputes each chunk's
// logits: d logp[m] / d logits[m, j] = [j == target[m]] - softmax[m, j].
class ChunkedLogProbFunction : public torch::autograd::Function<ChunkedLogProbFunction> {
 public:
  static variable_list forward(AutogradContext* ctx, torch::Tensor hidden, torch::Tensor weight,
                               torch::Tensor targets, int64_t chunk_rows, bool with_entropy) {
    const int64_t m = hidden.size(0);
    const torch::ScalarType compute = ComputeType(hidden.scalar_type());
    const auto opts = hidden.options().dtype(compute);
    torch::Tensor logp = torch::empty({m}, opts);
    torch::Tensor lse = torch::empty({m}, opts);
    torch::Tensor entropy = torch::empty({with_entropy ? m : 0}, opts);
    const torch::Tensor w = WeightLike(weight, hidden);
    for (int64_t begin = 0; begin < m; begin += chunk_rows) {
      const int64_t n = std::min(chunk_rows, m - begin);
      torch::Tensor logits = ChunkLogits(hidden.narrow(0, begin, n), w, compute);
      torch::Tensor chunk_lse = logits.logsumexp(-1);
      lse.narrow(0, begin, n).copy_(chunk_lse);
      torch::Tensor picked = logits.gather(1, targets.narrow(0, begin, n).unsqueeze(1)).squeeze(1);
      logp.narrow(0, begin, n).copy_(picked - chunk_lse);
      if (with_entropy) {
        torch::Tensor lp = logits.sub_(chunk_lse.unsqueeze(1));  // log-softmax, in place.
        entropy.narrow(0, begin, n).copy_(-(lp.exp() * lp).sum(-1));
      }
    }
    ctx->save_for_backward({hidden, weight, targets, lse});
    ctx->saved_data["chunk_rows"] = chunk_rows;
    ctx->saved_data["hidden_grad"] = hidden.requires_grad();
    ctx->saved_data["weight_grad"] = weight.requires_grad();
    ctx->mark_non_differentiable({entropy});
    return {logp, entropy};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const torch::Tensor& hidden = saved[0];
    const torch::Tensor& weight = saved[1];
    const torch::Tensor& targets = saved[2];
    const torch::Tensor& lse = saved[3];
    const int64_t chunk_rows = ctx->saved_data["chunk_rows"].toInt();
    const torch::Tensor grad = grad_outputs[0];  // [M]; zeros when unused (materialised).
    const int64_t m = hidden.size(0);
    const torch::ScalarType compute = lse.scalar_type();
    const torch::Tensor w = WeightLike(weight, hidden);
    torch::Tensor grad_hidden, grad_weight;
    if (ctx->saved_data["hidden_grad"].toBool()) grad_hidden = torch::empty_like(hidden);
    if (ctx->saved_data["weight_grad"].toBool()) {
      grad_weight = torch::zeros(weight.sizes(), weight.options().dtype(compute));
    }
    for (int64_t begin = 0; begin < m; begin += chunk_rows) {
      const int64_t n = std::min(chunk_rows, m - begin);
      torch::Tensor rows = hidden.narrow(0, begin, n);
      torch::Tensor g = grad.narrow(0, begin, n).to(compute).unsqueeze(1);  // [n, 1]
      // d logits = g * (onehot(target) - softmax), built in the logits' memory.
      torch::Tensor dlogits = ChunkLogits(rows, w, compute);
      dlogits.sub_(lse.narrow(0, begin, n).unsqueeze(1)).exp_().mul_(-g);
      dlogits.scatter_add_(1, targets.narrow(0, begin, n).unsqueeze(1), g);
      if (grad_hidden.defined()) {
        grad_hidden.narrow(0, begin, n).copy_(torch::mm(dlogits.to(w.scalar_type()), w));
      }
      if (grad_weight.defined()) grad_weight.addmm_(dlogits.t(), rows.to(compute));
    }
    if (grad_weight.defined()) grad_weight = grad_weight.to(weight.scalar_type());
    return {grad_hidden, grad_weight, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

std::pair<torch::Tensor, torch::Tensor> ChunkedTokenLogProbs(const torch::Tensor& hidden,
                                                             const torch::Tensor& weight,
                                                             const torch::Tensor& targets,
                                                             int64_t chunk_rows,
                                                             bool with_entropy) {
  TORCH_CHECK(hidden.dim() == 2 && weight.dim() == 2 && hidden.size(1) == weight.size(1),
              "hidden [M, D] and weight [V, D] expected");
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == hidden.size(0) &&
                  targets.scalar_type() == torch::kInt64,
              "targets must be [M] int64");
  TORCH_CHECK(chunk_rows >= 1, "chunk_rows must be >= 1");
  variable_list out =
      ChunkedLogProbFunction::apply(hidden, weight, targets, chunk_rows, with_entropy);
  return {out[0], with_entropy ? out[1] : torch::Tensor()};
}

CompletionLogProbs ComputeCompletionLogProbs(
    Transformer& model, const std::vector<const std::vector<int>*>& prompts,
    const std::vector<const std::vector<int>*>& completions, bool with_entropy,
    int64_t chunk_rows) {
  TORCH_CHECK(prompts.size() == completions.size(), "prompts and completions differ in count");
  TORCH_CHECK(chunk_rows >= 0, "chunk_rows must be >= 0");
  const int64_t n = static_cast<int64_t>(prompts.size());
  int64_t max_len = 1;
  int64_t t_max = 0;
  int64_t total = 0;  // Completion tokens in all rows.
  for (int64_t r = 0; r < n; ++r) {
    TORCH_CHECK(prompts[r] != nullptr && completions[r] != nullptr, "null row");
    TORCH_CHECK(!prompts[r]->empty(), "prompt ", r, " is empty");
    const int64_t c = static_cast<int64_t>(completions[r]->size());
    max_len = std::max<int64_t>(max_len, prompts[r]->size() + c);
    t_max = std::max(t_max, c);
    total += c;
  }
  const torch::ScalarType compute = ComputeType(model->OutputWeight().scalar_type());
  const torch::Device device = model->OutputWeight().device();
  const auto out_opts = torch::TensorOptions().dtype(compute).device(device);
  CompletionLogProbs out;
  if (n == 0 || t_max == 0) {
    out.logprobs = torch::zeros({n, t_max}, out_opts);
    out.mask = torch::zeros({n, t_max}, torch::TensorOptions().device(device));
    if (with_entropy) out.entropy = torch::zeros({n, t_max}, out_opts);
    return out;
  }
  // Right-padded rows: prompt, completion, pad. Completion token t of row r
  // is predicted by the hidden state at position len(prompt)-1+t; those
  // `total` states are gathered (source) and their log-probs scattered to
  // column t of row r (dest).
  torch::Tensor tokens = torch::zeros({n, max_len}, torch::kInt64);
  torch::Tensor source = torch::empty({total}, torch::kInt64);
  torch::Tensor dest = torch::empty({total}, torch::kInt64);
  torch::Tensor targets = torch::empty({total}, torch::kInt64);
  torch::Tensor mask = torch::zeros({n, t_max}, torch::kFloat32);
  auto tok = tokens.accessor<int64_t, 2>();
  auto src = source.accessor<int64_t, 1>();
  auto dst = dest.accessor<int64_t, 1>();
  auto tgt = targets.accessor<int64_t, 1>();
  auto msk = mask.accessor<float, 2>();
  int64_t k = 0;
  for (int64_t r = 0; r < n; ++r) {
    const auto& p = *prompts[r];
    const auto& c = *completions[r];
    const int64_t pl = static_cast<int64_t>(p.size());
    for (int64_t j = 0; j < pl; ++j) tok[r][j] = p[j];
    for (int64_t t = 0; t < static_cast<int64_t>(c.size()); ++t, ++k) {
      tok[r][pl + t] = c[t];
      src[k] = r * max_len + pl - 1 + t;
      dst[k] = r * t_max + t;
      tgt[k] = c[t];
      msk[r][t] = 1.0f;
    }
  }
  const torch::Tensor& weight = model->OutputWeight();
  torch::Tensor hidden = model->Hidden(tokens);  // [N, L, D], on the model's device
  if (!hidden.is_cpu()) {
    source = source.to(device);
    dest = dest.to(device);
    targets = targets.to(device);
    mask = mask.to(device);
  }
  torch::Tensor rows = hidden.reshape({n * max_len, hidden.size(-1)}).index_select(0, source);
  if (chunk_rows == 0) {
    const int64_t row_bytes = weight.size(0) * static_cast<int64_t>(torch::elementSize(compute));
    chunk_rows = std::max<int64_t>(1, kLogitChunkBytes / row_bytes);
  }
  auto [logp, entropy] = ChunkedTokenLogProbs(rows, weight, targets, chunk_rows, with_entropy);
  out.logprobs = torch::zeros({n * t_max}, out_opts).scatter(0, dest, logp).view({n, t_max});
  out.mask = mask;
  if (with_entropy) {
    out.entropy = torch::zeros({n * t_max}, out_opts).scatter(0, dest, entropy).view({n, t_max});
  }
  return out;
}

}  // namespace rlvr::policy
