#include "common/policy/model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "common/policy/decode_kernels.h"
#include "common/policy/logprobs.h"
#include "common/policy/sampler.h"

namespace rlvr::policy {
namespace {

constexpr int kVocab = 20;

Transformer TinyModel(uint64_t seed, double init_std = 0.3) {
  ModelConfig c;
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.d_ff = 48;
  c.max_seq_len = 64;
  c.init_std = init_std;
  auto m = CreateTransformer(c, kVocab, seed);
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

std::vector<const std::vector<int>*> Ptrs(const std::vector<std::vector<int>>& v) {
  std::vector<const std::vector<int>*> out;
  for (const auto& x : v) out.push_back(&x);
  return out;
}

const std::vector<std::vector<int>> kPrompts = {
    {1, 5, 7}, {1, 3, 3, 9, 12, 4}, {1, 2}, {1, 8, 8, 8, 6, 5, 4, 3, 2}};

// The init draws from a generator of its own: the process-wide torch RNG is
// neither read nor advanced, and a seed gives the weights that seeding the
// default generator with it gave (the first parameter drawn is the
// embedding: randn * init_std).
TEST(TransformerTest, InitIsItsOwnSeededGenerator) {
  torch::manual_seed(99);
  const torch::Tensor expected_draw = torch::rand({8});
  torch::manual_seed(99);
  Transformer a = TinyModel(7);
  EXPECT_TRUE(torch::equal(torch::rand({8}), expected_draw)) << "init advanced the global RNG";
  torch::manual_seed(12345);  // Whatever state the process is in.
  Transformer b = TinyModel(7);
  const auto pa = a->named_parameters();
  const auto pb = b->named_parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(torch::equal(pa[i].value(), pb[i].value())) << pa[i].key();
  }
  torch::manual_seed(7);
  const torch::Tensor embed = pa[0].value();
  EXPECT_TRUE(torch::equal(embed, torch::randn(embed.sizes()) * 0.3)) << pa[0].key();
  EXPECT_FALSE(torch::equal(TinyModel(8)->named_parameters()[0].value(), embed));
}

TEST(TransformerTest, ForwardIsCausalAndShaped) {
  torch::set_num_threads(1);
  Transformer m = TinyModel(1);
  torch::NoGradGuard ng;
  torch::Tensor a = torch::tensor({{1, 4, 6, 2, 9}}, torch::kInt64);
  torch::Tensor b = a.clone();
  b[0][4] = 11;
  torch::Tensor la = m->forward(a), lb = m->forward(b);
  ASSERT_EQ(la.sizes(), (std::vector<int64_t>{1, 5, kVocab}));
  EXPECT_EQ(la.scalar_type(), torch::kFloat32);
  EXPECT_TRUE(torch::equal(la.narrow(1, 0, 4), lb.narrow(1, 0, 4)));
  EXPECT_FALSE(torch::allclose(la.narrow(1, 4, 1), lb.narrow(1, 4, 1)));
  EXPECT_THROW(m->forward(torch::tensor({{1, kVocab}}, torch::kInt64)), c10::Error);
  EXPECT_FALSE(CreateTransformer(ModelConfig{.d_model = 30, .n_heads = 4}, kVocab, 1).ok());
}

TEST(TransformerTest, DecodeLogProbsMatchTrainingForward) {
  torch::set_num_threads(1);
  Transformer m = TinyModel(2);
  SamplingOptions opt;
  opt.temperature = 1.0;
  opt.max_new_tokens = 12;
  std::vector<uint64_t> seeds = {11, 12, 13, 14};
  auto samples = Generate(m, Ptrs(kPrompts), seeds, opt);
  ASSERT_EQ(samples.size(), kPrompts.size());
  std::vector<std::vector<int>> completions;
  for (const auto& s : samples) {
    ASSERT_EQ(s.tokens.size(), 12u);
    ASSERT_EQ(s.logprobs.size(), 12u);
    completions.push_back(s.tokens);
  }
  CompletionLogProbs lp = ComputeCompletionLogProbs(m, Ptrs(kPrompts), Ptrs(completions), true);
  ASSERT_EQ(lp.logprobs.sizes(), (std::vector<int64_t>{4, 12}));
  float max_diff = 0;
  for (size_t r = 0; r < samples.size(); ++r) {
    for (size_t t = 0; t < 12; ++t) {
      max_diff =
          std::max(max_diff, std::abs(lp.logprobs[r][t].item<float>() - samples[r].logprobs[t]));
      EXPECT_GT(lp.entropy[r][t].item<float>(), 0.0f);
    }
  }
  EXPECT_LT(max_diff, 1e-5f);
  EXPECT_TRUE(lp.logprobs.requires_grad());
  EXPECT_FALSE(lp.entropy.requires_grad());

  // The recompute path samples the same tokens.
  auto again = GenerateWithoutCache(m, Ptrs(kPrompts), seeds, opt);
  for (size_t r = 0; r < samples.size(); ++r) {
    EXPECT_EQ(again[r].tokens, samples[r].tokens) << "row " << r;
    for (size_t t = 0; t < 12; ++t) EXPECT_NEAR(again[r].logprobs[t], samples[r].logprobs[t], 1e-5);
  }
}

// The HF layouts (GQA, explicit head_dim, biases, q/k norms, untied head,
// llama3 RoPE): cached decoding (fused loops and, with a RoPE table shorter
// than the sequences, the tensor-op path) against the training forward.
ModelConfig HfTiny(const std::string& arch) {
  ModelConfig c;
  c.arch = arch;
  c.d_model = 24;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 8;  // != d_model / n_heads.
  c.d_ff = 40;
  c.max_seq_len = 64;
  c.init_std = 0.3;
  c.qkv_bias = arch != "qwen3";
  c.o_bias = arch == "llama";
  c.mlp_bias = arch == "llama";
  c.qk_norm = arch == "qwen3";
  c.tie_embeddings = arch == "qwen2";
  if (arch == "llama") {
    c.rope_scaling = "llama3";
    c.rope_original_max_position = 16;
  }
  return c;
}

TEST(TransformerTest, HfArchitecturesDecodeMatchesTrainingForward) {
  torch::set_num_threads(1);
  for (const std::string arch : {"llama", "qwen2", "qwen3"}) {
    for (int rope_rows : {64, 6}) {
      ModelConfig c = HfTiny(arch);
      c.max_seq_len = rope_rows;
      auto m = CreateTransformer(c, kVocab, 4);
      ASSERT_TRUE(m.ok()) << m.status();
      {
        // Biases are zero-initialised; make them matter.
        torch::NoGradGuard ng;
        for (auto& p : (*m)->named_parameters()) {
          if (p.key().find("bias") != std::string::npos) p.value().normal_(0, 0.3);
        }
      }
      SamplingOptions opt;
      opt.max_new_tokens = 10;
      std::vector<uint64_t> seeds = {1, 2, 3, 4};
      auto samples = Generate(*m, Ptrs(kPrompts), seeds, opt);
      std::vector<std::vector<int>> completions;
      for (const auto& s : samples) completions.push_back(s.tokens);
      CompletionLogProbs lp =
          ComputeCompletionLogProbs(*m, Ptrs(kPrompts), Ptrs(completions), false);
      float max_diff = 0;
      for (size_t r = 0; r < samples.size(); ++r) {
        for (size_t t = 0; t < samples[r].tokens.size(); ++t) {
          max_diff = std::max(max_diff,
                              std::abs(lp.logprobs[r][t].item<float>() - samples[r].logprobs[t]));
        }
      }
      EXPECT_LT(max_diff, 1e-5f) << arch << " rope rows " << rope_rows;
      auto again = GenerateWithoutCache(*m, Ptrs(kPrompts), seeds, opt);
      for (size_t r = 0; r < samples.size(); ++r) {
        EXPECT_EQ(again[r].tokens, samples[r].tokens) << arch << " row " << r;
      }
    }
  }
}

TEST(TransformerTest, HfConfigsAreValidated) {
  ModelConfig c = HfTiny("qwen3");
  c.n_kv_heads = 3;  // Does not divide n_heads.
  EXPECT_FALSE(CreateTransformer(c, kVocab, 1).ok());
  c = HfTiny("qwen3");
  c.vocab_size = kVocab + 1;  // Differs from the vocabulary given.
  EXPECT_FALSE(CreateTransformer(c, kVocab, 1).ok());
  ModelConfig builtin;
  builtin.qk_norm = true;  // The built-in layout has no q/k norms.
  EXPECT_FALSE(CreateTransformer(builtin, kVocab, 1).ok());
}

TEST(TransformerTest, LogProbsMaskRaggedCompletions) {
  Transformer m = TinyModel(3);
  std::vector<std::vector<int>> prompts = {{1, 2, 3}, {1}};
  std::vector<std::vector<int>> completions = {{4}, {5, 6, 7}};
  CompletionLogProbs lp = ComputeCompletionLogProbs(m, Ptrs(prompts), Ptrs(completions), false);
  ASSERT_EQ(lp.mask.sizes(), (std::vector<int64_t>{2, 3}));
  EXPECT_TRUE(torch::equal(lp.mask, torch::tensor({{1.f, 0.f, 0.f}, {1.f, 1.f, 1.f}})));
  EXPECT_EQ(lp.logprobs[0][1].item<float>(), 0.0f);
  // Row 0 alone gives the same value: padding does not leak.
  CompletionLogProbs alone = ComputeCompletionLogProbs(m, {&prompts[0]}, {&completions[0]}, false);
  EXPECT_NEAR(alone.logprobs[0][0].item<float>(), lp.logprobs[0][0].item<float>(), 1e-6);
  EXPECT_LT(lp.logprobs[1][2].item<float>(), 0.0f);
}

TEST(TransformerTest, GradientMatchesFiniteDifferencesInFloat64) {
  Transformer m = TinyModel(4, 0.5);
  m->to(torch::kFloat64);
  std::vector<std::vector<int>> prompts = {{1, 4, 9}, {1, 7}};
  std::vector<std::vector<int>> completions = {{3, 5, 2}, {8, 2}};
  auto loss_fn = [&]() {
    CompletionLogProbs lp = ComputeCompletionLogProbs(m, Ptrs(prompts), Ptrs(completions), false);
    return -(lp.logprobs * torch::tensor({0.7, -1.3, 0.4}, torch::kFloat64)).sum();
  };
  m->zero_grad();
  loss_fn().backward();
  auto params = m->named_parameters();
  const std::vector<std::pair<std::string, std::vector<int64_t>>> probes = {
      {"embed", {3, 1}},
      {"embed", {9, 30}},
      {"layers.0.qkv", {5, 2}},
      {"layers.0.qkv", {40, 7}},
      {"layers.1.qkv", {70, 0}},
      {"layers.0.out", {1, 1}},
      {"layers.1.gate_up", {60, 3}},
      {"layers.1.down", {2, 47}},
      {"layers.0.attn_norm", {4}},
      {"final_norm", {0}},
  };
  for (const auto& [name, index] : probes) {
    torch::Tensor p = params[name];
    std::vector<at::indexing::TensorIndex> idx(index.begin(), index.end());
    const double analytic = p.grad().index(idx).item<double>();
    const double h = 1e-6;
    torch::NoGradGuard ng;
    const double orig = p.index(idx).item<double>();
    p.index_put_(idx, orig + h);
    const double up = loss_fn().item<double>();
    p.index_put_(idx, orig - h);
    const double down = loss_fn().item<double>();
    p.index_put_(idx, orig);
    const double numeric = (up - down) / (2 * h);
    EXPECT_NEAR(analytic, numeric, 1e-6 + 1e-5 * std::abs(numeric)) << name;
  }
}

TEST(SamplerTest, SeededSamplingIsReproducibleAndRowIndependent) {
  torch::set_num_threads(1);
  Transformer m = TinyModel(5);
  SamplingOptions opt;
  opt.max_new_tokens = 10;
  opt.top_k = 8;
  opt.top_p = 0.95;
  std::vector<uint64_t> seeds = {1, 2, 3, 4};
  auto a = Generate(m, Ptrs(kPrompts), seeds, opt);
  auto b = Generate(m, Ptrs(kPrompts), seeds, opt);
  for (size_t r = 0; r < a.size(); ++r) {
    EXPECT_EQ(a[r].tokens, b[r].tokens);
    EXPECT_EQ(a[r].logprobs, b[r].logprobs);
  }
  // Each row alone (and in another batch order) gives its batched result.
  for (size_t r = 0; r < kPrompts.size(); ++r) {
    auto alone = Generate(m, {&kPrompts[r]}, {seeds[r]}, opt);
    EXPECT_EQ(alone[0].tokens, a[r].tokens) << "row " << r;
    for (size_t t = 0; t < alone[0].logprobs.size(); ++t) {
      EXPECT_NEAR(alone[0].logprobs[t], a[r].logprobs[t], 1e-5);
    }
  }
  auto swapped = Generate(m, {&kPrompts[3], &kPrompts[0]}, {seeds[3], seeds[0]}, opt);
  EXPECT_EQ(swapped[0].tokens, a[3].tokens);
  EXPECT_EQ(swapped[1].tokens, a[0].tokens);
  // Different seeds for the same prompt give different completions.
  std::vector<const std::vector<int>*> same(8, &kPrompts[0]);
  auto g = Generate(m, same, {1, 2, 3, 4, 5, 6, 7, 8}, opt);
  int distinct = 0;
  for (size_t i = 1; i < g.size(); ++i) distinct += g[i].tokens != g[0].tokens;
  EXPECT_GT(distinct, 0);
}

// The fused decode loops against the same math written with tensor ops.
TEST(DecodeKernelsTest, MatchTensorOpReference) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(3);
  torch::Tensor x = torch::randn({5, 12});
  torch::Tensor w = torch::randn({12});
  torch::Tensor want = x * torch::rsqrt(x.pow(2).mean(-1, true) + 1e-6) * w;
  EXPECT_TRUE(torch::allclose(RmsNormRows(x, w, 1e-6), want, 1e-5, 1e-6));

  const int64_t b = 2, s = 3, h = 2, dh = 4, cap = 8, past = 2;
  torch::Tensor qkv = torch::randn({b * s, 3 * h * dh});
  torch::Tensor positions = torch::tensor({2, 3, 4, 0, 1, 5}, torch::kInt64).view({b, s});
  torch::Tensor inv_freq = torch::tensor({1.0, 0.01}, torch::kFloat64);
  torch::Tensor angles = torch::arange(16, torch::kFloat64).unsqueeze(-1) * inv_freq;
  torch::Tensor table = torch::cat({angles.cos(), angles.sin()}, -1);
  torch::Tensor keys = torch::zeros({b, h, cap, dh}), values = torch::zeros({b, h, cap, dh});
  torch::Tensor q = RotateIntoCache(qkv, positions, table, h, past, 0.5, keys, values);

  torch::Tensor parts = qkv.view({b, s, 3, h, dh}).permute({2, 0, 3, 1, 4});  // [3,B,H,S,Dh]
  torch::Tensor a = positions.to(torch::kFloat64).unsqueeze(-1) * inv_freq;   // [B,S,2]
  torch::Tensor cos = a.cos().to(torch::kFloat32).unsqueeze(1),
                sin = a.sin().to(torch::kFloat32).unsqueeze(1);
  auto rope = [&](const torch::Tensor& t) {
    torch::Tensor t1 = t.narrow(-1, 0, dh / 2), t2 = t.narrow(-1, dh / 2, dh / 2);
    return torch::cat({t1 * cos - t2 * sin, t1 * sin + t2 * cos}, -1);
  };
  EXPECT_TRUE(torch::allclose(q, rope(parts[0]) * 0.5, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(keys.narrow(2, past, s), rope(parts[1]), 1e-5, 1e-6));
  EXPECT_TRUE(torch::equal(values.narrow(2, past, s), parts[2]));
  // Nothing outside [past, past + s) was written.
  EXPECT_EQ(keys.narrow(2, 0, past).abs().sum().item<float>(), 0.0f);
  EXPECT_EQ(values.narrow(2, past + s, cap - past - s).abs().sum().item<float>(), 0.0f);
  // Misuse is an error, not a silent wrong answer.
  torch::Tensor small = torch::zeros({b, h, 3, dh});
  EXPECT_THROW(RotateIntoCache(qkv, positions, table, h, past, 1.0, small, small), c10::Error);
  EXPECT_THROW(RmsNormRows(x.to(torch::kFloat64), w, 1e-6), c10::Error);
}

// Inverse-CDF sampling over an evenly spaced grid of uniforms reproduces the
// intended distribution up to the grid step, for every truncation mode.
TEST(SamplerTest, ChooseTokenFollowsTheTruncatedTemperedDistribution) {
  const std::vector<float> logits = {2.0f, 1.0f, 0.5f, -1.0f, 0.0f, 0.5f};
  const int v = static_cast<int>(logits.size());
  auto expected = [&](double temperature, int top_k, double top_p) {
    std::vector<double> p(v);
    double z = 0;
    for (int j = 0; j < v; ++j) z += p[j] = std::exp(logits[j] / temperature);
    for (double& x : p) x /= z;
    std::vector<int> order(v);
    for (int j = 0; j < v; ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return p[a] > p[b]; });
    std::vector<double> keep(v, 0.0);
    // top-k keeps every token tied with the k-th value (here 0.5 twice).
    const int k = top_k > 0 ? top_k : v;
    const double kth = p[order[k - 1]];
    double before = 0, kept_mass = 0;
    double mass_k = 0;
    for (int j = 0; j < v; ++j) mass_k += p[j] >= kth ? p[j] : 0.0;
    for (int i = 0; i < v; ++i) {
      const int j = order[i];
      if (p[j] < kth || before >= top_p * mass_k) continue;
      before += p[j];
      keep[j] = p[j];
      kept_mass += p[j];
    }
    for (double& x : keep) x /= kept_mass;
    return keep;
  };
  struct Case {
    double temperature;
    int top_k;
    double top_p;
  };
  std::vector<double> scratch;
  for (const Case& c : {Case{1.0, 0, 1.0}, Case{0.7, 0, 1.0}, Case{1.3, 3, 1.0}, Case{1.0, 0, 0.8},
                        Case{0.9, 4, 0.7}}) {
    SamplingOptions opt;
    opt.temperature = c.temperature;
    opt.top_k = c.top_k;
    opt.top_p = c.top_p;
    const int n = 20000;
    std::vector<double> freq(v, 0.0);
    for (int i = 0; i < n; ++i) {
      TokenChoice t = ChooseToken(logits.data(), v, (i + 0.5) / n, opt, &scratch);
      ASSERT_GE(t.token, 0);
      ASSERT_LT(t.token, v);
      freq[t.token] += 1.0 / n;
      // The recorded log-prob is the untempered, untruncated one.
      double z = 0;
      for (float x : logits) z += std::exp(double(x));
      EXPECT_NEAR(t.logprob, logits[t.token] - std::log(z), 1e-6);
    }
    const std::vector<double> want = expected(c.temperature, c.top_k, c.top_p);
    for (int j = 0; j < v; ++j) {
      EXPECT_NEAR(freq[j], want[j], 2.0 / n)
          << "token " << j << " T=" << c.temperature << " k=" << c.top_k << " p=" << c.top_p;
    }
  }
  SamplingOptions greedy;
  greedy.greedy = true;
  EXPECT_EQ(ChooseToken(logits.data(), v, 0.99, greedy, &scratch).token, 0);
  const std::vector<float> tie = {0.0f, 3.0f, 3.0f};
  EXPECT_EQ(ChooseToken(tie.data(), 3, 0.5, greedy, &scratch).token, 1);  // Lowest id wins ties.
}

TEST(SamplerTest, GreedyTopKTopPStopsAndLength) {
  Transformer m = TinyModel(6);
  SamplingOptions greedy;
  greedy.greedy = true;
  greedy.max_new_tokens = 6;
  auto g = Generate(m, Ptrs(kPrompts), {1, 2, 3, 4}, greedy);
  // Greedy tokens are the argmax of the training forward.
  std::vector<std::vector<int>> comps;
  for (const auto& s : g) comps.push_back(s.tokens);
  {
    torch::NoGradGuard ng;
    for (size_t r = 0; r < g.size(); ++r) {
      std::vector<int> seq = kPrompts[r];
      for (size_t t = 0; t < g[r].tokens.size(); ++t) {
        torch::Tensor logits = m->forward(torch::tensor(seq, torch::kInt64).unsqueeze(0));
        EXPECT_EQ(logits[0][-1].argmax().item<int64_t>(), g[r].tokens[t]);
        seq.push_back(g[r].tokens[t]);
      }
    }
  }
  SamplingOptions k1;
  k1.top_k = 1;
  k1.max_new_tokens = 6;
  SamplingOptions p0;
  p0.top_p = 1e-6;
  p0.max_new_tokens = 6;
  auto a = Generate(m, Ptrs(kPrompts), {9, 9, 9, 9}, k1);
  auto b = Generate(m, Ptrs(kPrompts), {5, 6, 7, 8}, p0);
  for (size_t r = 0; r < g.size(); ++r) {
    EXPECT_EQ(a[r].tokens, g[r].tokens);
    EXPECT_EQ(b[r].tokens, g[r].tokens);
    EXPECT_FALSE(g[r].stopped);
    EXPECT_EQ(g[r].tokens.size(), 6u);
  }
  SamplingOptions stop;
  stop.max_new_tokens = 7;
  for (int t = 0; t < kVocab; ++t) stop.stop_token_ids.push_back(t);
  auto s = Generate(m, Ptrs(kPrompts), {1, 2, 3, 4}, stop);
  for (const auto& x : s) {
    EXPECT_EQ(x.tokens.size(), 1u);
    EXPECT_TRUE(x.stopped);
  }
  // Stop at a specific token: everything before it is not a stop token.
  SamplingOptions one;
  one.max_new_tokens = 30;
  one.stop_token_ids = {7};
  auto o = Generate(m, Ptrs(kPrompts), {21, 22, 23, 24}, one);
  for (const auto& x : o) {
    for (size_t t = 0; t + 1 < x.tokens.size(); ++t) EXPECT_NE(x.tokens[t], 7);
    EXPECT_EQ(x.stopped, !x.tokens.empty() && x.tokens.back() == 7);
    if (!x.stopped) {
      EXPECT_EQ(x.tokens.size(), 30u);
    }
  }
  std::vector<int> bad = {1, kVocab + 3};
  EXPECT_THROW(Generate(m, {&bad}, {1}, greedy), c10::Error);
  EXPECT_THROW(Generate(m, {&kPrompts[0]}, {}, greedy), c10::Error);
}

}  // namespace
}  // namespace rlvr::policy
