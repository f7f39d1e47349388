// The continuous-batching engine against static batching (policy::Generate /
// GenerateRows) on the same prompts and seeds: tokens identical, behaviour
// log-probs equal within kLogprobTolerance, with completion lengths that
// differ 10x and more within a batch, fewer slots than rows (slots are
// refilled), a KV pool so small that rows are preempted, with and without
// prompt sharing, the fused CPU loops and the tensor-op path, and the
// Hugging Face architectures (GQA, biases, q/k norms, bfloat16 weights).
//
// Why a tolerance: the two compute the same function with different matrix
// shapes (one prompt instead of a padded batch; a varying number of rows per
// step) and different summation orders in attention, so their float32
// logits differ by rounding (observed max |difference| of log-probs below
// 2e-6 here; printed by each test). A token can only differ if a row's
// uniform draw falls within that rounding of a CDF boundary (probability
// ~1e-6 per token); the fixed seeds below do not.
#include "common/policy/engine.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>

#include "common/policy/hf_checkpoint.h"
#include "common/policy/model.h"
#include "common/policy/sampler.h"

namespace rlvr::policy {
namespace {

constexpr double kLogprobTolerance = 1e-4;
constexpr int kVocab = 50;

Transformer Model(uint64_t seed, int d = 32, int layers = 2, int heads = 4) {
  ModelConfig c;
  c.d_model = d;
  c.n_layers = layers;
  c.n_heads = heads;
  c.d_ff = 2 * d;
  c.max_seq_len = 256;
  c.init_std = 0.3;
  auto m = CreateTransformer(c, kVocab, seed);
  EXPECT_TRUE(m.ok()) << m.status();
  return *m;
}

// Groups with prompts of 1..13 tokens and forced row lengths from 4 to 48
// (12x) in every group.
std::vector<EngineGroup> Workload(int groups, int g_size, int vocab, uint64_t seed,
                                  const SamplingOptions& options, bool forced = true) {
  std::mt19937_64 rng(seed);
  std::vector<EngineGroup> out;
  for (int i = 0; i < groups; ++i) {
    EngineGroup g;
    g.id = 100 + i;
    const int p = 1 + static_cast<int>(rng() % 13);
    for (int t = 0; t < p; ++t) g.prompt.push_back(1 + static_cast<int>(rng() % (vocab - 1)));
    g.options = options;
    for (int r = 0; r < g_size; ++r) {
      g.seeds.push_back(rng());
      if (forced) {
        // The first row of each group short, the second long: 4 vs 48.
        const int len = r == 0 ? 4 : r == 1 ? 48 : 4 + static_cast<int>(rng() % 45);
        g.max_new_tokens.push_back(std::min(len, options.max_new_tokens));
      }
    }
    out.push_back(std::move(g));
  }
  return out;
}

// The static-batch reference: every row of every group in one GenerateRows.
std::vector<std::vector<Sample>> Static(Transformer& m, const std::vector<EngineGroup>& groups) {
  std::vector<const std::vector<int>*> prompts;
  std::vector<uint64_t> seeds;
  std::vector<SamplingOptions> options;
  for (const EngineGroup& g : groups) {
    for (size_t r = 0; r < g.seeds.size(); ++r) {
      prompts.push_back(&g.prompt);
      seeds.push_back(g.seeds[r]);
      SamplingOptions o = g.options;
      if (!g.max_new_tokens.empty()) o.max_new_tokens = g.max_new_tokens[r];
      options.push_back(o);
    }
  }
  std::vector<Sample> flat = GenerateRows(m, prompts, seeds, options);
  std::vector<std::vector<Sample>> out;
  size_t at = 0;
  for (const EngineGroup& g : groups) {
    out.emplace_back(flat.begin() + at, flat.begin() + at + g.seeds.size());
    at += g.seeds.size();
  }
  return out;
}

// Whether drawing token `step` of a row (prompt + `prefix`, `seed`,
// `options`) is a tie that float rounding may resolve either way: the
// float64 model `m64` puts the row's uniform within kTieMargin of a CDF
// boundary (greedy: the two best logits within kTieMargin), and the two
// tokens drawn are the two sides of it.
constexpr double kTieMargin = 1e-4;
bool IsRoundingTie(Transformer& m64, const std::vector<int>& prompt, const std::vector<int>& prefix,
                   uint64_t seed, const SamplingOptions& options, int a, int b) {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> ids(prompt.begin(), prompt.end());
  ids.insert(ids.end(), prefix.begin(), prefix.end());
  torch::Tensor logits = m64->forward(torch::tensor(ids, torch::kInt64).unsqueeze(0))
                             .select(1, static_cast<int64_t>(ids.size()) - 1)
                             .squeeze(0)
                             .to(torch::kFloat32)
                             .contiguous();
  const int v = static_cast<int>(logits.size(0));
  const float* l = logits.data_ptr<float>();
  std::vector<double> scratch;
  if (options.greedy || options.temperature <= 0) {
    return std::abs(double(l[a]) - l[b]) < kTieMargin;
  }
  const double u = RowUniform(seed, static_cast<int64_t>(prefix.size()));
  const int lo = ChooseToken(l, v, std::max(1e-12, u - kTieMargin), options, &scratch).token;
  const int hi = ChooseToken(l, v, std::min(1 - 1e-12, u + kTieMargin), options, &scratch).token;
  const int mid = ChooseToken(l, v, u, options, &scratch).token;
  auto near = [&](int t) { return t == lo || t == hi || t == mid; };
  return lo != hi && near(a) && near(b);
}

// Tokens equal and log-probs within `tol`, except for rows that part at a
// rounding tie (IsRoundingTie; compared up to it). Returns the largest
// log-prob difference; `ties` counts the rows that parted.
double ExpectSame(Transformer& m64, const std::vector<EngineGroup>& groups,
                  const std::vector<std::vector<Sample>>& want,
                  const std::vector<EngineResult>& got, int* ties = nullptr,
                  double tol = kLogprobTolerance) {
  double worst = 0;
  int parted = 0;
  EXPECT_EQ(want.size(), got.size());
  for (size_t i = 0; i < std::min(want.size(), got.size()); ++i) {
    EXPECT_EQ(want[i].size(), got[i].samples.size());
    for (size_t r = 0; r < std::min(want[i].size(), got[i].samples.size()); ++r) {
      const Sample& a = want[i][r];
      const Sample& b = got[i].samples[r];
      size_t same = 0;
      while (same < a.tokens.size() && same < b.tokens.size() && a.tokens[same] == b.tokens[same]) {
        ++same;
      }
      for (size_t t = 0; t < same; ++t) {
        worst = std::max(worst, std::abs(double(a.logprobs[t]) - b.logprobs[t]));
      }
      if (same == a.tokens.size() && same == b.tokens.size()) {
        EXPECT_EQ(a.stopped, b.stopped) << "group " << i << " row " << r;
        continue;
      }
      if (same == a.tokens.size() || same == b.tokens.size()) {
        ADD_FAILURE() << "group " << i << " row " << r
                      << ": one completion is a prefix of the other";
        continue;
      }
      SamplingOptions o = groups[i].options;
      const std::vector<int> prefix(a.tokens.begin(), a.tokens.begin() + same);
      EXPECT_TRUE(IsRoundingTie(m64, groups[i].prompt, prefix, groups[i].seeds[r], o,
                                a.tokens[same], b.tokens[same]))
          << "group " << i << " row " << r << " parts at token " << same << " (" << a.tokens[same]
          << " vs " << b.tokens[same] << ") without a rounding tie";
      ++parted;
    }
  }
  EXPECT_LT(worst, tol);
  if (ties != nullptr) *ties += parted;
  return worst;
}

// The same model in float64 (for IsRoundingTie).
Transformer Float64(Transformer& m) {
  auto copy = CreateTransformer(m->config(), m->vocab_size(), 0);
  EXPECT_TRUE(copy.ok());
  torch::NoGradGuard no_grad;
  auto src = m->named_parameters();
  auto dst = (*copy)->named_parameters();
  for (size_t i = 0; i < src.size(); ++i) dst[i].value().copy_(src[i].value());
  (*copy)->to(torch::kFloat64);
  return *copy;
}

EngineOptions Opts(int rows, int64_t kv_tokens, int bt = 4) {
  EngineOptions o;
  o.max_rows = rows;
  o.kv_cache_tokens = kv_tokens;
  o.block_tokens = bt;
  return o;
}

SamplingOptions Plain(int max_new) {
  SamplingOptions o;
  o.max_new_tokens = max_new;
  return o;
}

TEST(EngineTest, ContinuousEqualsStaticWithTenfoldLengthsAndRefilledSlots) {
  torch::set_num_threads(1);
  Transformer m = Model(1);
  Transformer m64 = Float64(m);
  auto groups = Workload(/*groups=*/6, /*g_size=*/4, kVocab, 7, Plain(48));
  const auto want = Static(m, groups);
  int ties = 0;
  for (int rows : {3, 8, 24}) {
    EngineStats st;
    auto got = GenerateContinuous(*m, Opts(rows, 4096), groups, &st);
    ASSERT_TRUE(got.ok()) << got.status();
    int parted = 0;
    const double worst = ExpectSame(m64, groups, want, *got, &parted);
    ties += parted;
    std::printf(
        "[engine] rows %d: max |logp diff| %.3g, %d of 24 rows parted at a rounding tie, %lld "
        "decode passes, %lld row-steps\n",
        rows, worst, parted, static_cast<long long>(st.decode_passes),
        static_cast<long long>(st.row_steps));
    // Every decode pass ran full except as the queue drained.
    EXPECT_GE(st.row_steps, 0);
    EXPECT_LE(st.row_steps, st.slot_steps);
    EXPECT_EQ(st.preemptions, 0);
    EXPECT_EQ(st.running_rows, 0);
    EXPECT_EQ(st.kv_blocks_used, 0);
  }
  // A tie is a draw within ~1e-5 of a CDF boundary: rare (here 1 row of 72).
  EXPECT_LE(ties, 3);
}

TEST(EngineTest, StopTokensTopKTopPAndGreedyRowsMatchStatic) {
  torch::set_num_threads(1);
  Transformer m = Model(2);
  SamplingOptions o = Plain(40);
  o.stop_token_ids = {3, 17};
  o.temperature = 0.8;
  o.top_k = 20;
  o.top_p = 0.9;
  auto groups = Workload(5, 3, kVocab, 11, o, /*forced=*/false);
  SamplingOptions greedy = Plain(30);
  greedy.greedy = true;
  greedy.stop_token_ids = {5};
  auto more = Workload(2, 2, kVocab, 12, greedy, /*forced=*/false);
  for (auto& g : more) g.id += 50;
  groups.insert(groups.end(), more.begin(), more.end());
  const auto want = Static(m, groups);
  Transformer m64 = Float64(m);
  int stopped = 0;
  for (const auto& g : want) {
    for (const auto& s : g) stopped += s.stopped ? 1 : 0;
  }
  EXPECT_GT(stopped, 0);
  auto got = GenerateContinuous(*m, Opts(4, 2048), groups);
  ASSERT_TRUE(got.ok()) << got.status();
  ExpectSame(m64, groups, want, *got);
}

TEST(EngineTest, ATinyPoolPreemptsAndStillMatchesStatic) {
  torch::set_num_threads(1);
  Transformer m = Model(3);
  Transformer m64 = Float64(m);
  auto groups = Workload(5, 4, kVocab, 21, Plain(48));
  const auto want = Static(m, groups);
  // Just enough for the longest row alone: ceil((13 + 48) / 4) + 1 = 17 blocks.
  EngineStats st;
  auto got = GenerateContinuous(*m, Opts(8, 17 * 4), groups, &st);
  ASSERT_TRUE(got.ok()) << got.status();
  const double worst = ExpectSame(m64, groups, want, *got);
  std::printf("[engine] tiny pool: %lld preemptions, peak %lld of %lld blocks, max diff %.3g\n",
              static_cast<long long>(st.preemptions), static_cast<long long>(st.kv_blocks_peak),
              static_cast<long long>(st.kv_blocks), worst);
  EXPECT_GT(st.preemptions, 0);
  EXPECT_LE(st.kv_blocks_peak, 17);
  EXPECT_EQ(st.kv_blocks, 17);
}

TEST(EngineTest, OnePrefillPerGroupSavesPromptWork) {
  torch::set_num_threads(1);
  Transformer m = Model(4);
  auto groups = Workload(4, 8, kVocab, 31, Plain(12));
  int64_t prompt_tokens = 0;
  for (const auto& g : groups) prompt_tokens += static_cast<int64_t>(g.prompt.size());
  EngineStats shared, own;
  EngineOptions o = Opts(32, 4096);
  auto a = GenerateContinuous(*m, o, groups, &shared);
  o.share_prompt = false;
  auto b = GenerateContinuous(*m, o, groups, &own);
  ASSERT_TRUE(a.ok() && b.ok());
  Transformer m64 = Float64(m);
  ExpectSame(m64, groups, Static(m, groups), *a);
  ExpectSame(m64, groups, Static(m, groups), *b);
  // 32 slots hold every row: each prompt is computed once, read by 8 rows.
  EXPECT_EQ(shared.prefill_tokens, prompt_tokens);
  EXPECT_EQ(shared.prefill_tokens_reused, 7 * prompt_tokens);
  EXPECT_EQ(own.prefill_tokens, 8 * prompt_tokens);
  EXPECT_EQ(own.prefill_tokens_reused, 0);
}

TEST(EngineTest, FusedLoopsAndTensorOpsAgree) {
  torch::set_num_threads(2);
  Transformer m = Model(5, 64, 2, 4);
  auto groups = Workload(4, 3, kVocab, 41, Plain(30));
  EngineOptions o = Opts(5, 1024, 8);
  auto fused = GenerateContinuous(*m, o, groups);
  o.fused_cpu_kernels = false;
  auto ops = GenerateContinuous(*m, o, groups);
  ASSERT_TRUE(fused.ok() && ops.ok());
  std::vector<std::vector<Sample>> want;
  for (auto& r : *fused) want.push_back(r.samples);
  Transformer m64 = Float64(m);
  ExpectSame(m64, groups, want, *ops);
  ExpectSame(m64, groups, Static(m, groups), *ops);
  torch::set_num_threads(1);
}

TEST(EngineTest, RefusesWhatCannotRunAndCancels) {
  Transformer m = Model(6);
  auto engine = Engine::Create(Opts(4, 40, 4), m->config(), kVocab, Placement());
  ASSERT_TRUE(engine.ok()) << engine.status();
  // 10 blocks: prompt 5 + 31 tokens needs ceil(36 / 4) + 1 = 10; 32 needs 11.
  EXPECT_TRUE((*engine)->RowFits(5, 31));
  EXPECT_FALSE((*engine)->RowFits(5, 32));
  EngineGroup g;
  g.id = 1;
  g.prompt = {1, 2, 3, 4, 5};
  g.options = Plain(32);
  g.seeds = {1, 2};
  absl::Status s = (*engine)->Add(g);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("kv_cache_tokens"), std::string::npos) << s.message();
  g.options = Plain(31);
  EXPECT_TRUE((*engine)->Add(g).ok());
  EXPECT_EQ((*engine)->Add(g).code(), absl::StatusCode::kInvalidArgument);  // Same id.
  EngineGroup bad = g;
  bad.id = 2;
  bad.prompt = {kVocab};
  EXPECT_EQ((*engine)->Add(bad).code(), absl::StatusCode::kInvalidArgument);
  bad.prompt = {};
  EXPECT_EQ((*engine)->Add(bad).code(), absl::StatusCode::kInvalidArgument);
  bad.prompt = {1};
  bad.max_new_tokens = {3};  // Two seeds, one length.
  EXPECT_EQ((*engine)->Add(bad).code(), absl::StatusCode::kInvalidArgument);
  // Cancel mid-generation frees everything.
  (*engine)->Step(*m);
  EXPECT_EQ((*engine)->running_rows(), 2);
  EXPECT_TRUE((*engine)->Cancel(1));
  EXPECT_FALSE((*engine)->Cancel(1));
  EXPECT_TRUE((*engine)->idle());
  EXPECT_EQ((*engine)->stats().kv_blocks_used, 0);
  EXPECT_TRUE((*engine)->Step(*m).empty());
}

TEST(EngineTest, GroupsAreReturnedAsSoonAsTheirRowsFinish) {
  torch::set_num_threads(1);
  Transformer m = Model(7);
  auto engine = Engine::Create(Opts(8, 4096), m->config(), kVocab, Placement());
  ASSERT_TRUE(engine.ok());
  EngineGroup short_group{1, {1, 2, 3}, Plain(3), {1, 2}, {}};
  EngineGroup long_group{2, {4, 5}, Plain(40), {3, 4}, {}};
  ASSERT_TRUE((*engine)->Add(long_group).ok());
  ASSERT_TRUE((*engine)->Add(short_group).ok());
  int step = 0;
  int short_done_at = -1, long_done_at = -1;
  while (!(*engine)->idle()) {
    ++step;
    for (const EngineResult& r : (*engine)->Step(*m))
      (r.id == 1 ? short_done_at : long_done_at) = step;
  }
  // Token 0 comes from the prompt pass, then one per step: 3 tokens in 2 steps.
  EXPECT_EQ(short_done_at, 2);
  EXPECT_EQ(long_done_at, 39);
}

// Hugging Face architectures: GQA with biases (qwen2), q/k norms and a
// head_dim that is not d_model / heads (qwen3), llama3 RoPE, bfloat16
// weights; a 151936 / 128256-token vocabulary.
class EngineHfTest : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineHfTest, ContinuousEqualsStatic) {
  torch::set_num_threads(1);
  const char* src = std::getenv("RLVR_SOURCE_DIR");
  const std::string dir = std::string(src != nullptr ? src : ".") + "/tests/data/hf/" + GetParam();
  auto model = LoadHfModel(dir, {});
  ASSERT_TRUE(model.ok()) << model.status();
  const int vocab = (*model)->vocab_size();
  auto groups = Workload(3, 3, vocab, 51, Plain(20));
  const auto want = Static(*model, groups);
  Transformer m64 = Float64(*model);
  for (bool fused : {true, false}) {
    EngineOptions o = Opts(4, 512, 4);
    o.fused_cpu_kernels = fused;
    auto got = GenerateContinuous(**model, o, groups);
    ASSERT_TRUE(got.ok()) << got.status();
    const double worst = ExpectSame(m64, groups, want, *got);
    std::printf("[engine-hf] %s fused=%d max |logp diff| %.3g\n", GetParam().c_str(), fused, worst);
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, EngineHfTest,
                         ::testing::Values("qwen2_f32_tied", "qwen3_f32_tied",
                                           "llama_f32_tied_rope_llama3", "llama_bf16_untied_bias"));

// bfloat16 arithmetic (the GPU's default compute dtype), here on the CPU:
// the tensor-op path. Its behaviour log-probs are the bfloat16 model's, so
// they are compared with the float32 forward of the same tokens within
// bfloat16's rounding (and static batching in bfloat16 parts from it at
// ties far more often than in float32: informational only).
TEST(EngineTest, BFloat16ComputeRunsTheTensorOpPath) {
  torch::set_num_threads(1);
  Transformer m = Model(8);
  Transformer f32 = Model(8);
  m->set_compute_dtype(torch::kBFloat16);
  auto groups = Workload(3, 2, kVocab, 61, Plain(10));
  auto got = GenerateContinuous(*m, Opts(3, 1024), groups);
  ASSERT_TRUE(got.ok()) << got.status();
  const auto want = Static(m, groups);
  torch::NoGradGuard no_grad;
  double worst = 0;
  int same = 0, total = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    for (size_t r = 0; r < groups[i].seeds.size(); ++r) {
      const Sample& s = (*got)[i].samples[r];
      std::vector<int64_t> ids(groups[i].prompt.begin(), groups[i].prompt.end());
      ids.insert(ids.end(), s.tokens.begin(), s.tokens.end());
      torch::Tensor lp = torch::log_softmax(
          f32->forward(torch::tensor(ids, torch::kInt64).unsqueeze(0)).squeeze(0), -1);
      const int64_t p = static_cast<int64_t>(groups[i].prompt.size());
      for (size_t t = 0; t < s.tokens.size(); ++t) {
        const double ref = lp[p - 1 + static_cast<int64_t>(t)][s.tokens[t]].item<double>();
        worst = std::max(worst, std::abs(ref - s.logprobs[t]));
      }
      same += s.tokens == want[i][r].tokens ? 1 : 0;
      ++total;
    }
  }
  std::printf(
      "[engine] bfloat16: max |logp - float32 forward| %.3g; %d of %d rows "
      "token-identical to static bfloat16\n",
      worst, same, total);
  EXPECT_GT(worst, 0.0) << "did not compute in bfloat16";
  EXPECT_LT(worst, 0.25);
}

}  // namespace
}  // namespace rlvr::policy
