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
#include "common/policy/sampling.h"

namespace rlvr::policy {

// What one static-batch call computed, for the actor's metrics and the
// benchmarks (every field a total over the call).
struct GenerateStats {
  double prefill_seconds = 0;    // Wall time of the prompt pass.
  double decode_seconds = 0;     // Wall time of the one-token passes (and sampling).
  int64_t decode_steps = 0;      // One-token passes.
  int64_t row_steps = 0;         // Rows x decode_steps: what was computed, finished rows included.
  int64_t useful_row_steps = 0;  // Of those, rows still generating (their token is kept).
  int64_t prefill_tokens = 0;    // Prompt positions computed: rows x longest prompt (padding too).
  int64_t kv_cache_bytes = 0;    // The KV cache the call allocated.
};

// One completion per row, as one static batch: rows of different prompt
// lengths are batched (left-padded; see model.h) with a KV cache allocated
// for the call, and every row is computed at every step until the last one
// finishes. Row r's result depends only on (weights, *prompts[r], seeds[r],
// options) (sampling.h: its own random stream). Prompts are non-empty token
// ids in the vocabulary; seeds.size() == prompts.size(). Throws c10::Error
// on invalid arguments. Pointers are borrowed for the call. `stats`
// (nullable) receives what the call computed.
std::vector<Sample> Generate(Transformer& model,
                             const std::vector<const std::vector<int>*>& prompts,
                             const std::vector<uint64_t>& seeds, const SamplingOptions& options,
                             GenerateStats* stats = nullptr);

// Generate with options of its own for every row (options.size() ==
// prompts.size()): rows of different sampling parameters or length caps in
// one static batch (benchmarks force per-row lengths this way).
std::vector<Sample> GenerateRows(Transformer& model,
                                 const std::vector<const std::vector<int>*>& prompts,
                                 const std::vector<uint64_t>& seeds,
                                 const std::vector<SamplingOptions>& options,
                                 GenerateStats* stats = nullptr);

// Same contract and same results (up to float rounding) as Generate, but
// without a KV cache: every step recomputes the whole prefix. For benchmarks
// and tests.
std::vector<Sample> GenerateWithoutCache(Transformer& model,
                                         const std::vector<const std::vector<int>*>& prompts,
                                         const std::vector<uint64_t>& seeds,
                                         const SamplingOptions& options);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_SAMPLER_H_
