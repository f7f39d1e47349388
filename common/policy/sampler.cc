#include "common/policy/sampler.h"

#include <algorithm>
#include <limits>

#include "common/splitmix.h"

namespace rlvr::policy {
namespace {


// Uniform in (0, 1) for (seed, step): row r's stream depends only on its seed.
double Uniform(uint64_t seed, int64_t step) {
  uint64_t bits = SplitMix64(SplitMix64(seed) ^ SplitMix64(0x5851f42d4c957f2dULL + step));
  return (double(bits >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

struct Prepared {
  int64_t batch = 0;
  int64_t max_prompt = 0;
  std::vector<int64_t> lengths;
  torch::Tensor tokens;     // [B, max_prompt] left-padded with 0.
  torch::Tensor positions;  // [B, max_prompt]: j - pad, clamped at 0.
  torch::Tensor pad_bias;   // [B, 1, 1, max_prompt]: mask value on pad keys.
};

constexpr double kMaskValue = -1e9;  // As in model.cc.

Prepared Prepare(const std::vector<const std::vector<int>*>& prompts,
                 const std::vector<uint64_t>& seeds, const SamplingOptions& options, int vocab) {
  TORCH_CHECK(prompts.size() == seeds.size(), "need one seed per prompt");
  TORCH_CHECK(options.max_new_tokens >= 0, "max_new_tokens must be >= 0");
  Prepared p;
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

// Chooses the next token of every row from logits [B, V] and records its
// log-probability under the unmodified policy. Returns (tokens, logprobs) on
// the CPU.
std::pair<torch::Tensor, torch::Tensor> Choose(const torch::Tensor& logits_in,
                                               const std::vector<uint64_t>& seeds, int64_t step,
                                               const SamplingOptions& options) {
  torch::Tensor logits = logits_in.to(torch::kFloat32);
  torch::Tensor logp = torch::log_softmax(logits, -1);
  const int64_t b = logits.size(0);
  const int64_t v = logits.size(1);
  torch::Tensor chosen;
  if (options.greedy || options.temperature <= 0) {
    chosen = logits.argmax(-1);
  } else {
    torch::Tensor scaled = logits / options.temperature;
    if (options.top_k > 0 && options.top_k < v) {
      torch::Tensor kth = std::get<0>(scaled.topk(options.top_k, -1)).narrow(-1, options.top_k - 1, 1);
      scaled = scaled.masked_fill(scaled < kth, -std::numeric_limits<float>::infinity());
    }
    torch::Tensor probs = torch::softmax(scaled, -1);
    torch::Tensor order;  // Sorted order (top-p) or none.
    if (options.top_p < 1.0) {
      auto sorted = probs.sort(-1, /*descending=*/true);
      torch::Tensor sp = std::get<0>(sorted);
      order = std::get<1>(sorted);
      // Keep the smallest prefix whose mass reaches top_p (the first token always).
      torch::Tensor before = sp.cumsum(-1) - sp;
      probs = sp.masked_fill(before >= options.top_p, 0.0);
    }
    std::vector<double> u(b);
    for (int64_t r = 0; r < b; ++r) u[r] = Uniform(seeds[r], step);
    torch::Tensor cdf = probs.to(torch::kFloat64).cumsum(-1);
    torch::Tensor target =
        torch::tensor(u, torch::kFloat64).unsqueeze(1) * cdf.narrow(1, v - 1, 1);
    torch::Tensor pick = (cdf < target).sum(-1).clamp_max(v - 1);
    chosen = order.defined() ? order.gather(1, pick.unsqueeze(1)).squeeze(1) : pick;
  }
  chosen = chosen.to(torch::kInt64).contiguous();
  torch::Tensor chosen_lp = logp.gather(1, chosen.unsqueeze(1)).squeeze(1).contiguous();
  return {chosen, chosen_lp};
}

// Appends the step's choices; returns true when every row has finished.
bool Record(const torch::Tensor& chosen, const torch::Tensor& lp, const SamplingOptions& options,
            std::vector<Sample>* samples, std::vector<char>* done) {
  const int64_t* c = chosen.data_ptr<int64_t>();
  const float* l = lp.data_ptr<float>();
  bool all_done = true;
  for (size_t r = 0; r < samples->size(); ++r) {
    if ((*done)[r]) continue;
    Sample& s = (*samples)[r];
    s.tokens.push_back(static_cast<int>(c[r]));
    s.logprobs.push_back(l[r]);
    if (std::find(options.stop_token_ids.begin(), options.stop_token_ids.end(), c[r]) !=
        options.stop_token_ids.end()) {
      s.stopped = true;
      (*done)[r] = 1;
    } else if (static_cast<int>(s.tokens.size()) >= options.max_new_tokens) {
      (*done)[r] = 1;
    }
    all_done = all_done && (*done)[r];
  }
  return all_done;
}

}  // namespace

std::vector<Sample> Generate(Transformer& model, const std::vector<const std::vector<int>*>& prompts,
                             const std::vector<uint64_t>& seeds, const SamplingOptions& options) {
  torch::NoGradGuard no_grad;
  Prepared p = Prepare(prompts, seeds, options, model->vocab_size());
  std::vector<Sample> samples(p.batch);
  if (p.batch == 0 || options.max_new_tokens == 0) return samples;
  std::vector<char> done(p.batch, 0);
  KvCache cache = model->NewCache(p.batch, p.max_prompt + options.max_new_tokens);
  cache.key_bias.narrow(3, 0, p.max_prompt).copy_(p.pad_bias);
  torch::Tensor logits = model->ForwardWithPositions(p.tokens, p.positions, torch::Tensor(), &cache);
  logits = logits.select(1, p.max_prompt - 1);
  torch::Tensor next_pos = torch::tensor(p.lengths, torch::kInt64).unsqueeze(1);  // [B,1]
  for (int64_t step = 0;; ++step) {
    auto [chosen, lp] = Choose(logits, seeds, step, options);
    if (Record(chosen, lp, options, &samples, &done)) break;
    logits = model->ForwardWithPositions(chosen.unsqueeze(1), next_pos, torch::Tensor(), &cache)
                 .select(1, 0);
    next_pos = next_pos + 1;
  }
  return samples;
}

std::vector<Sample> GenerateWithoutCache(Transformer& model,
                                         const std::vector<const std::vector<int>*>& prompts,
                                         const std::vector<uint64_t>& seeds,
                                         const SamplingOptions& options) {
  torch::NoGradGuard no_grad;
  Prepared p = Prepare(prompts, seeds, options, model->vocab_size());
  std::vector<Sample> samples(p.batch);
  if (p.batch == 0 || options.max_new_tokens == 0) return samples;
  std::vector<char> done(p.batch, 0);
  const auto dtype = model->parameters().front().scalar_type();
  torch::Tensor tokens = p.tokens;
  torch::Tensor positions = p.positions;
  torch::Tensor bias = p.pad_bias.to(dtype);
  torch::Tensor next_pos = torch::tensor(p.lengths, torch::kInt64).unsqueeze(1);
  for (int64_t step = 0;; ++step) {
    torch::Tensor logits =
        model->ForwardWithPositions(tokens, positions, bias, nullptr).select(1, tokens.size(1) - 1);
    auto [chosen, lp] = Choose(logits, seeds, step, options);
    if (Record(chosen, lp, options, &samples, &done)) break;
    tokens = torch::cat({tokens, chosen.unsqueeze(1)}, 1);
    positions = torch::cat({positions, next_pos}, 1);
    bias = torch::cat({bias, torch::zeros({p.batch, 1, 1, 1}, bias.options())}, 3);
    next_pos = next_pos + 1;
  }
  return samples;
}

}  // namespace rlvr::policy
