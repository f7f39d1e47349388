// The chunked log-prob path against the straightforward one (full logits,
// log_softmax, gather): values, entropy and every parameter's gradient.
#include "common/policy/logprobs.h"

#include <gtest/gtest.h>

#include <vector>

namespace rlvr::policy {
namespace {

constexpr int kVocab = 37;

Transformer Model(torch::ScalarType dtype) {
  ModelConfig c;
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.d_ff = 40;
  c.max_seq_len = 64;
  c.init_std = 0.3;
  auto m = CreateTransformer(c, kVocab, 5);
  EXPECT_TRUE(m.ok()) << m.status();
  (*m)->to(dtype);
  return *m;
}

std::vector<const std::vector<int>*> Ptrs(const std::vector<std::vector<int>>& v) {
  std::vector<const std::vector<int>*> out;
  for (const auto& x : v) out.push_back(&x);
  return out;
}

// Unequal prompt and completion lengths, one empty completion.
const std::vector<std::vector<int>> kPrompts = {{1, 5, 7}, {1, 3, 3, 9, 12, 4}, {1}, {1, 8, 8, 6}};
const std::vector<std::vector<int>> kCompletions = {
    {4, 4, 30, 2}, {7}, {9, 10, 11, 12, 13, 14, 36, 0}, {}};

// The reference: logits for every position, then log_softmax and gather.
CompletionLogProbs Unchunked(Transformer& m) {
  const int64_t n = kPrompts.size();
  int64_t len = 0, t_max = 0;
  for (int64_t r = 0; r < n; ++r) {
    len = std::max<int64_t>(len, kPrompts[r].size() + kCompletions[r].size());
    t_max = std::max<int64_t>(t_max, kCompletions[r].size());
  }
  torch::Tensor tokens = torch::zeros({n, len}, torch::kInt64);
  for (int64_t r = 0; r < n; ++r) {
    int64_t j = 0;
    for (int t : kPrompts[r]) tokens[r][j++] = t;
    for (int t : kCompletions[r]) tokens[r][j++] = t;
  }
  torch::Tensor logp = torch::log_softmax(m->forward(tokens), -1);  // [N, L, V]
  CompletionLogProbs out;
  std::vector<torch::Tensor> lp_rows, ent_rows;
  for (int64_t r = 0; r < n; ++r) {
    const int64_t pl = kPrompts[r].size();
    const int64_t c = kCompletions[r].size();
    std::vector<torch::Tensor> lp, ent;
    for (int64_t t = 0; t < t_max; ++t) {
      if (t < c) {
        torch::Tensor row = logp[r][pl - 1 + t];
        lp.push_back(row[kCompletions[r][t]]);
        ent.push_back(-(row.exp() * row).sum().detach());
      } else {
        lp.push_back(torch::zeros({}, logp.options()));
        ent.push_back(torch::zeros({}, logp.options()));
      }
    }
    lp_rows.push_back(torch::stack(lp));
    ent_rows.push_back(torch::stack(ent));
  }
  out.logprobs = torch::stack(lp_rows);
  out.entropy = torch::stack(ent_rows);
  return out;
}

// Gradients of sum(coef * logprobs) for every parameter, by name.
std::vector<torch::Tensor> Grads(Transformer& m, const torch::Tensor& logprobs) {
  m->zero_grad();
  torch::Tensor coef =
      torch::linspace(-1.0, 2.0, logprobs.numel(), logprobs.options()).view(logprobs.sizes());
  (logprobs * coef).sum().backward();
  std::vector<torch::Tensor> out;
  for (const auto& p : m->parameters()) out.push_back(p.grad().clone());
  return out;
}

void ExpectMatches(torch::ScalarType dtype, double tol) {
  Transformer m = Model(dtype);
  CompletionLogProbs ref = Unchunked(m);
  std::vector<torch::Tensor> ref_grads = Grads(m, ref.logprobs);
  for (int64_t chunk : {1, 3, 5, 0}) {
    SCOPED_TRACE(testing::Message() << "chunk_rows " << chunk);
    CompletionLogProbs lp =
        ComputeCompletionLogProbs(m, Ptrs(kPrompts), Ptrs(kCompletions), true, chunk);
    ASSERT_EQ(lp.logprobs.sizes(), ref.logprobs.sizes());
    EXPECT_EQ(lp.logprobs.scalar_type(), dtype);
    EXPECT_TRUE(torch::allclose(lp.logprobs, ref.logprobs, tol, tol))
        << (lp.logprobs - ref.logprobs).abs().max();
    EXPECT_TRUE(torch::allclose(lp.entropy, ref.entropy, tol, tol))
        << (lp.entropy - ref.entropy).abs().max();
    EXPECT_FALSE(lp.entropy.requires_grad());
    EXPECT_EQ(lp.mask.sum().item<float>(), 13.0f);
    std::vector<torch::Tensor> grads = Grads(m, lp.logprobs);
    ASSERT_EQ(grads.size(), ref_grads.size());
    for (size_t i = 0; i < grads.size(); ++i) {
      EXPECT_TRUE(torch::allclose(grads[i], ref_grads[i], tol, tol))
          << "parameter " << i << " max diff " << (grads[i] - ref_grads[i]).abs().max();
    }
  }
}

TEST(ChunkedLogProbsTest, MatchesFullLogitsAndGradientsFloat64) {
  torch::set_num_threads(1);
  ExpectMatches(torch::kFloat64, 1e-10);
}

TEST(ChunkedLogProbsTest, MatchesFullLogitsAndGradientsFloat32) {
  torch::set_num_threads(1);
  ExpectMatches(torch::kFloat32, 2e-5);
}

TEST(ChunkedLogProbsTest, OnlyHiddenOrOnlyWeightMayRequireGrad) {
  torch::manual_seed(3);
  torch::Tensor hidden = torch::randn({7, 6}, torch::kFloat64).requires_grad_();
  torch::Tensor weight = torch::randn({11, 6}, torch::kFloat64);
  torch::Tensor targets = torch::randint(0, 11, {7}, torch::kInt64);
  auto [lp, ent] = ChunkedTokenLogProbs(hidden, weight, targets, 2, false);
  EXPECT_FALSE(ent.defined());
  lp.sum().backward();
  torch::Tensor h2 = hidden.detach().clone().requires_grad_();
  torch::log_softmax(torch::mm(h2, weight.t()), -1)
      .gather(1, targets.unsqueeze(1))
      .sum()
      .backward();
  EXPECT_TRUE(torch::allclose(hidden.grad(), h2.grad(), 1e-12, 1e-12));
  EXPECT_THROW(ChunkedTokenLogProbs(hidden, weight, targets, 0, false), c10::Error);
  EXPECT_THROW(ChunkedTokenLogProbs(hidden, weight.narrow(1, 0, 5), targets, 1, false), c10::Error);
}

}  // namespace
}  // namespace rlvr::policy
