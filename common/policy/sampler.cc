#include "common/policy/sampler.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>

#include "common/base/splitmix.h"

namespace rlvr::policy {
namespace {

// Decode steps whose largest product (rows x d_model x d_ff multiply-adds)
// is below this run on the calling thread alone: forking and joining
// OpenMP's (and OpenBLAS's) workers costs more than such a step. Measured
// (bench/policy_bench.cc, 2 threads): batch-1 decode of the default model
// (49K) ran at half the single-thread speed with two threads, while the
// d_model 512 model at batch 1 (786K) gained 1.5x from the second thread.
constexpr int64_t kParallelDecodeMacs = int64_t{1} << 19;

// Lowers this thread's OpenMP thread count (which ATen's parallel_for and
// OpenBLAS's OpenMP build both follow for calls from this thread) to one for
// its lifetime, when `single` is true. Thread-local: other threads are not
// affected.
class SingleThreadScope {
 public:
  explicit SingleThreadScope(bool single) : saved_(single ? omp_get_max_threads() : 0) {
    if (saved_ > 1) omp_set_num_threads(1);
  }
  ~SingleThreadScope() {
    if (saved_ > 1) omp_set_num_threads(saved_);
  }
  SingleThreadScope(const SingleThreadScope&) = delete;
  SingleThreadScope& operator=(const SingleThreadScope&) = delete;

 private:
  const int saved_;
};

struct Prepared {
  int64_t batch = 0;
  int64_t max_prompt = 0;
  int max_new_tokens = 0;  // Largest over the rows.
  std::vector<int64_t> lengths;
  torch::Tensor tokens;     // [B, max_prompt] left-padded with 0.
  torch::Tensor positions;  // [B, max_prompt]: j - pad, clamped at 0.
  torch::Tensor pad_bias;   // [B, 1, 1, max_prompt]: mask value on pad keys.
};

constexpr double kMaskValue = -1e9;  // As in model.cc.

Prepared Prepare(const std::vector<const std::vector<int>*>& prompts,
                 const std::vector<uint64_t>& seeds, const std::vector<SamplingOptions>& options,
                 int vocab) {
  TORCH_CHECK(prompts.size() == seeds.size(), "need one seed per prompt");
  TORCH_CHECK(prompts.size() == options.size(), "need one set of options per prompt");
  Prepared p;
  for (const SamplingOptions& o : options) {
    TORCH_CHECK(o.max_new_tokens >= 0, "max_new_tokens must be >= 0");
    p.max_new_tokens = std::max(p.max_new_tokens, o.max_new_tokens);
  }
  p.batch = static_cast<int64_t>(prompts.size());
  for (const auto* prompt : prompts) {
    TORCH_CHECK(prompt != nullptr && !prompt->empty(), "prompts must be non-empty");
    for (int id : *prompt) TORCH_CHECK(id >= 0 && id < vocab, "prompt token out of vocabulary");
    p.lengths.push_back(static_cast<int64_t>(prompt->size()));
    p.max_prompt = std::max<int64_t>(p.max_prompt, prompt->size());
  }
  p.tokens = torch::zeros({p.batch, p.max_prompt}, torch::kInt64);
  p.positions = torch::zeros({p.batch, p.max_prompt}, torch::kInt64);
  p.pad_bias = torch::zeros({p.batch, 1, 1, p.max_prompt}, torch::kFloat64);
  auto tok = p.tokens.accessor<int64_t, 2>();
  auto pos = p.positions.accessor<int64_t, 2>();
  auto bias = p.pad_bias.accessor<double, 4>();
  for (int64_t r = 0; r < p.batch; ++r) {
    const int64_t pad = p.max_prompt - p.lengths[r];
    for (int64_t j = 0; j < p.max_prompt; ++j) {
      if (j < pad) {
        bias[r][0][0][j] = kMaskValue;
      } else {
        tok[r][j] = (*prompts[r])[j - pad];
        pos[r][j] = j - pad;
      }
    }
  }
  return p;
}

// Chooses the next token of every row still generating from logits [B, V]
// and appends it; returns true when every row has finished. A plain loop
// over the rows: at decode time B x V is small, and a dozen tensor ops per
// step would cost more than the arithmetic.
bool ChooseAndRecord(const torch::Tensor& logits_in, const std::vector<uint64_t>& seeds,
                     const std::vector<SamplingOptions>& options, std::vector<Sample>* samples,
                     std::vector<char>* done) {
  torch::Tensor logits = logits_in.to(torch::kCPU, torch::kFloat32).contiguous();
  const int v = static_cast<int>(logits.size(1));
  const float* l = logits.data_ptr<float>();
  std::vector<double> scratch;
  bool all_done = true;
  for (size_t r = 0; r < samples->size(); ++r) {
    if ((*done)[r]) continue;
    (*done)[r] = SampleNext(l + r * v, v, seeds[r], options[r], options[r].max_new_tokens,
                            &(*samples)[r], &scratch);
    all_done = all_done && (*done)[r];
  }
  return all_done;
}

}  // namespace

TokenChoice ChooseToken(const float* logits, int vocab, double u, const SamplingOptions& options,
                        std::vector<double>* scratch) {
  TORCH_CHECK(vocab >= 1, "vocabulary must be non-empty");
  // log pi(token) under the unmodified policy: logits - logsumexp(logits).
  const float* max_it = std::max_element(logits, logits + vocab);  // First maximum: lowest id.
  const double max_logit = *max_it;
  double z = 0;
  for (int j = 0; j < vocab; ++j) z += std::exp(double(logits[j]) - max_logit);
  const double log_z = max_logit + std::log(z);
  auto choice = [&](int token) { return TokenChoice{token, float(double(logits[token]) - log_z)}; };
  if (options.greedy || options.temperature <= 0) return choice(static_cast<int>(max_it - logits));

  // Tempered, top-k-truncated weights (unnormalised), then top-p on them.
  std::vector<double>& w = *scratch;
  w.assign(logits, logits + vocab);
  const double inv_t = 1.0 / options.temperature;
  for (double& x : w) x = (x - max_logit) * inv_t;  // <= 0; the maximum maps to 0.
  if (options.top_k > 0 && options.top_k < vocab) {
    std::vector<double> sorted(w);
    std::nth_element(sorted.begin(), sorted.begin() + (options.top_k - 1), sorted.end(),
                     std::greater<double>());
    const double kth = sorted[options.top_k - 1];
    for (double& x : w) x = x < kth ? -std::numeric_limits<double>::infinity() : x;
  }
  double total = 0;
  for (double& x : w) {
    x = std::exp(x);
    total += x;
  }
  if (options.top_p < 1.0) {
    // Keep the most likely tokens while the mass before them is < top_p (the
    // first always); sample among them in order of decreasing probability.
    std::vector<int> order(vocab);
    for (int j = 0; j < vocab; ++j) order[j] = j;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return w[a] > w[b]; });
    double before = 0;
    int kept = 0;
    while (kept < vocab && before < options.top_p * total) before += w[order[kept++]];
    const double target = u * before;
    double cdf = 0;
    for (int i = 0; i < kept; ++i) {
      cdf += w[order[i]];
      if (cdf >= target) return choice(order[i]);
    }
    return choice(order[kept - 1]);
  }
  const double target = u * total;
  double cdf = 0;
  int last_positive = 0;
  for (int j = 0; j < vocab; ++j) {
    if (w[j] <= 0) continue;
    cdf += w[j];
    last_positive = j;
    if (cdf >= target) return choice(j);
  }
  return choice(last_positive);  // Rounding: target within an ulp of the total.
}

double RowUniform(uint64_t seed, int64_t step) {
  uint64_t bits = SplitMix64(SplitMix64(seed) ^ SplitMix64(0x5851f42d4c957f2dULL + step));
  return (double(bits >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

bool SampleNext(const float* logits, int vocab, uint64_t seed, const SamplingOptions& options,
                int max_new_tokens, Sample* sample, std::vector<double>* scratch) {
  const int64_t step = static_cast<int64_t>(sample->tokens.size());
  const double u = options.greedy || options.temperature <= 0 ? 0.5 : RowUniform(seed, step);
  const TokenChoice t = ChooseToken(logits, vocab, u, options, scratch);
  sample->tokens.push_back(t.token);
  sample->logprobs.push_back(t.logprob);
  if (std::find(options.stop_token_ids.begin(), options.stop_token_ids.end(), t.token) !=
      options.stop_token_ids.end()) {
    sample->stopped = true;
    return true;
  }
  return static_cast<int>(sample->tokens.size()) >= max_new_tokens;
}

std::vector<Sample> Generate(Transformer& model,
                             const std::vector<const std::vector<int>*>& prompts,
                             const std::vector<uint64_t>& seeds, const SamplingOptions& options,
                             GenerateStats* stats) {
  return GenerateRows(model, prompts, seeds, std::vector<SamplingOptions>(prompts.size(), options),
                      stats);
}

std::vector<Sample> GenerateRows(Transformer& model,
                                 const std::vector<const std::vector<int>*>& prompts,
                                 const std::vector<uint64_t>& seeds,
                                 const std::vector<SamplingOptions>& options,
                                 GenerateStats* stats) {
  torch::NoGradGuard no_grad;
  Prepared p = Prepare(prompts, seeds, options, model->vocab_size());
  std::vector<Sample> samples(p.batch);
  if (p.batch == 0 || p.max_new_tokens == 0) return samples;
  std::vector<char> done(p.batch, 0);
  for (int64_t r = 0; r < p.batch; ++r) done[r] = options[r].max_new_tokens == 0;
  GenerateStats local;
  GenerateStats& st = stats != nullptr ? *stats : local;
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  KvCache cache = model->NewCache(p.batch, p.max_prompt + p.max_new_tokens);
  for (size_t i = 0; i < cache.keys.size(); ++i) {
    st.kv_cache_bytes += 2 * cache.keys[i].numel() * cache.keys[i].element_size();
  }
  cache.key_bias.narrow(3, 0, p.max_prompt).copy_(p.pad_bias);
  cache.has_key_bias =
      *std::min_element(p.lengths.begin(), p.lengths.end()) != p.max_prompt;  // Any left padding?
  // Prefill: only the last prompt position's logits are used, so only it is
  // projected ([B, V], not [B, P, V]: 15 GB for 128 rows of 200 tokens at a
  // 151936-token vocabulary).
  torch::Tensor last = model->HiddenWithPositions(p.tokens, p.positions, torch::Tensor(), &cache)
                           .select(1, p.max_prompt - 1);
  // (Under mixed precision the float32 output weight is cast to the states' dtype.)
  torch::Tensor logits = torch::mm(last, model->OutputWeight().to(last.scalar_type()).t());
  bool all_done = ChooseAndRecord(logits, seeds, options, &samples, &done);
  auto t1 = Clock::now();
  st.prefill_seconds += std::chrono::duration<double>(t1 - t0).count();
  st.prefill_tokens += p.batch * p.max_prompt;
  torch::Tensor next_pos = torch::tensor(p.lengths, torch::kInt64).unsqueeze(1);  // [B,1]
  const ModelConfig& c = model->config();
  SingleThreadScope small_steps(p.batch * c.d_model * c.d_ff < kParallelDecodeMacs);
  while (!all_done) {
    int64_t generating = 0;
    for (char d : done) generating += d ? 0 : 1;
    torch::Tensor chosen = torch::empty({p.batch, 1}, torch::kInt64);
    int64_t* c_ptr = chosen.data_ptr<int64_t>();
    for (int64_t r = 0; r < p.batch; ++r) {
      // A finished row keeps stepping (the batch is static); it is fed its
      // last token, whose output is discarded.
      c_ptr[r] = samples[r].tokens.empty() ? 0 : samples[r].tokens.back();
    }
    logits = model->ForwardWithPositions(chosen, next_pos, torch::Tensor(), &cache).select(1, 0);
    next_pos = next_pos + 1;
    all_done = ChooseAndRecord(logits, seeds, options, &samples, &done);
    ++st.decode_steps;
    st.row_steps += p.batch;
    st.useful_row_steps += generating;
  }
  st.decode_seconds += std::chrono::duration<double>(Clock::now() - t1).count();
  return samples;
}

std::vector<Sample> GenerateWithoutCache(Transformer& model,
                                         const std::vector<const std::vector<int>*>& prompts,
                                         const std::vector<uint64_t>& seeds,
                                         const SamplingOptions& options_in) {
  torch::NoGradGuard no_grad;
  const std::vector<SamplingOptions> options(prompts.size(), options_in);
  Prepared p = Prepare(prompts, seeds, options, model->vocab_size());
  std::vector<Sample> samples(p.batch);
  if (p.batch == 0 || p.max_new_tokens == 0) return samples;
  std::vector<char> done(p.batch, 0);
  torch::Tensor tokens = p.tokens;
  torch::Tensor positions = p.positions;
  torch::Tensor bias = p.pad_bias.to(model->OutputWeight().device(), model->compute_dtype());
  torch::Tensor next_pos = torch::tensor(p.lengths, torch::kInt64).unsqueeze(1);
  while (true) {
    torch::Tensor logits =
        model->ForwardWithPositions(tokens, positions, bias, nullptr).select(1, tokens.size(1) - 1);
    if (ChooseAndRecord(logits, seeds, options, &samples, &done)) break;
    torch::Tensor chosen = torch::empty({p.batch, 1}, torch::kInt64);
    for (int64_t r = 0; r < p.batch; ++r) chosen[r][0] = samples[r].tokens.back();
    tokens = torch::cat({tokens, chosen}, 1);
    positions = torch::cat({positions, next_pos}, 1);
    bias = torch::cat({bias, torch::zeros({p.batch, 1, 1, 1}, bias.options())}, 3);
    next_pos = next_pos + 1;
  }
  return samples;
}

}  // namespace rlvr::policy
