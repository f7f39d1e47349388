// Batched sampling of completions with a KV cache.
//
// Thread safety: Generate runs the model under NoGradGuard and does not
// mutate it; several threads may generate with one model concurrently, but
// not while another thread changes its weights.
#ifndef RLVR_COMMON_POLICY_SAMPLER_H_
#define RLVR_COMMON_POLICY_SAMPLER_H_

#include <cstdint>
#include <vector>

#include "common/policy/model.h"

namespace rlvr::policy {

struct SamplingOptions {
  double temperature = 1.0;         // Softmax temperature; <= 0 behaves as greedy.
  int top_k = 0;                    // Keep the k most likely tokens; 0 = off.
  double top_p = 1.0;               // Nucleus: smallest set with mass >= top_p; 1 = off.
  int max_new_tokens = 8;           // Completion length cap, stop token included.
  std::vector<int> stop_token_ids;  // Generation of a row ends after emitting one of these.
  bool greedy = false;              // Argmax (ties: lowest id); ignores temperature/top-k/p.
};

struct Sample {
  std::vector<int> tokens;      // Completion tokens, stop token included if stopped.
  std::vector<float> logprobs;  // log pi(token) under the unmodified policy (T=1, no top-k/p).
  bool stopped = false;         // True if the last token is a stop token.
};

// One sampling decision over a vocabulary of `vocab` logits (float32, the
// unmodified policy): greedy (first maximum) if options.greedy or
// temperature <= 0; otherwise inverse-CDF sampling with the uniform draw u in
// (0, 1) from softmax(logits / temperature), restricted to the top_k largest
// (ties at the k-th value kept) and then to the smallest most-likely prefix
// whose mass reaches top_p (in decreasing probability order, the first token
// always kept). logprob is log softmax(logits)[token] at temperature 1 with no
// truncation, what the learner recomputes. `scratch` is reused storage.
struct TokenChoice {
  int token = 0;
  float logprob = 0;
};
TokenChoice ChooseToken(const float* logits, int vocab, double u, const SamplingOptions& options,
                        std::vector<double>* scratch);

// One completion per row. Rows of different prompt lengths are batched
// (left-padded; see model.h), with a preallocated KV cache. Row r's result
// depends only on (weights, *prompts[r], seeds[r], options), not on the other
// rows: each row has its own RNG stream (a counter-based generator keyed by
// seeds[r]; one uniform draw per step, inverse-CDF sampling). Prompts are
// non-empty token ids in the vocabulary; seeds.size() == prompts.size().
// Throws c10::Error on invalid arguments. Pointers are borrowed for the call.
std::vector<Sample> Generate(Transformer& model,
                             const std::vector<const std::vector<int>*>& prompts,
                             const std::vector<uint64_t>& seeds, const SamplingOptions& options);

// Same contract and same results (up to float rounding) as Generate, but
// without a KV cache: every step recomputes the whole prefix. For benchmarks
// and tests.
std::vector<Sample> GenerateWithoutCache(Transformer& model,
                                         const std::vector<const std::vector<int>*>& prompts,
                                         const std::vector<uint64_t>& seeds,
                                         const SamplingOptions& options);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_SAMPLER_H_
