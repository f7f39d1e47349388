// What a completion is asked for and what it is: sampling options, samples,
// the one sampling decision and the per-row random stream. Torch-free, for
// the sampler (sampler.h), the continuous-batching engine (engine.h) and
// their callers.
//
// The per-row contract every generator here keeps: row r's completion
// depends only on (weights, its prompt, its seed, its options), never on the
// other rows, the batch order, padding or scheduling. Randomness is a
// counter-based stream keyed by the seed: the token at completion index i is
// drawn with the uniform RowUniform(seed, i) by inverse-CDF sampling
// (ChooseToken), so a row draws the same uniforms however it is batched.
//
// Thread safety: pure functions.
#ifndef RLVR_COMMON_POLICY_SAMPLING_H_
#define RLVR_COMMON_POLICY_SAMPLING_H_

#include <cstdint>
#include <vector>

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
// Throws c10::Error if vocab < 1.
struct TokenChoice {
  int token = 0;
  float logprob = 0;
};
TokenChoice ChooseToken(const float* logits, int vocab, double u, const SamplingOptions& options,
                        std::vector<double>* scratch);

// The uniform in (0, 1) a row with `seed` draws for its completion token at
// index `step` (0 = the first token): SplitMix64 of both, 53 bits.
double RowUniform(uint64_t seed, int64_t step);

// Draws the token at completion index `step` of the row with `seed` from its
// logits and appends it to `sample` (tokens, logprobs, stopped). Returns true
// when the row is finished: it emitted a stop token or holds
// `max_new_tokens` tokens.
bool SampleNext(const float* logits, int vocab, uint64_t seed, const SamplingOptions& options,
                int max_new_tokens, Sample* sample, std::vector<double>* scratch);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_SAMPLING_H_
