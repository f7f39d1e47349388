// The actor's inference engine: continuous batching over a fixed number of
// row slots, one prompt computation per group, and a KV cache of fixed
// blocks allocated once.
//
// Groups (G rows sharing a prompt, one seed per row) are added at any time;
// each Step() runs
//  1. admission: waiting rows take free slots, first come first served,
//     while the KV pool has room (engine_scheduler.h has the rules);
//  2. the prompt pass: the prompt of each newly admitted group, computed
//     once for its rows, and the prompt + tokens of rows that compute their
//     own (preempted rows, or every row without share_prompt); their rows
//     draw their next token from its logits;
//  3. the decode pass: every running row feeds its last token and draws the
//     next one; rows that stop (stop token, length) free their slot and
//     their blocks at once, so the next step refills them.
// A group is returned by the Step in which its last row finished.
//
// The per-row contract (sampling.h): a row's tokens depend only on (weights,
// prompt, seed, options), not on the other rows, slots, admission order,
// sharing or preemption: every token is drawn with RowUniform(seed, index)
// from the row's own logits. The logits themselves are the same function as
// policy::Generate's (static batching) up to float rounding: batch
// composition changes the shapes of the matrix products and the order of
// their sums (docs/actor.md, "Continuous batching", has the measured bound).
//
// Memory: the pool (kv_cache_tokens positions, rounded up to blocks, over
// every layer, keys and values) is allocated by Create and never again;
// rows grow into it one block at a time. A row that could not run even
// alone (prompt + max_new_tokens needs more than the pool) is refused by
// Add with InvalidArgument; every admitted row finishes.
//
// Devices: the pool is allocated on the placement's device in its compute
// dtype; Step needs a model of the same shape placed the same way. On the
// CPU in float32 the attention of decoding rows runs as fused loops
// (decode_kernels.h); everywhere else as tensor ops.
//
// Errors: Step throws c10::Error (a model on another device, a LibTorch
// failure); the engine is then left mid-step: CancelAll() empties it.
// Thread safety: none (thread-compatible); the model must not change
// during a Step.
#ifndef RLVR_COMMON_POLICY_ENGINE_H_
#define RLVR_COMMON_POLICY_ENGINE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/config/run_config.h"
#include "common/policy/placement.h"
#include "common/policy/sampling.h"

namespace rlvr::policy {

class TransformerImpl;

struct EngineOptions {
  // Slots: rows decoded together at most, >= 1.
  int max_rows = 64;
  // KV pool size in positions (prompt + completion tokens held at once over
  // all rows), rounded up to whole blocks; >= one row's prompt +
  // max_new_tokens plus two blocks for anything to run.
  int64_t kv_cache_tokens = 4096;
  // Positions per KV block, >= 1.
  int block_tokens = 16;
  // The rows of a group reference one computation of its prompt (false: each
  // row computes it; benchmarks measure what sharing saves).
  bool share_prompt = true;
  // Allow the fused CPU float32 loops (false: tensor ops everywhere; tests).
  bool fused_cpu_kernels = true;
};

// A group to generate.
struct EngineGroup {
  uint64_t id = 0;                  // The caller's id (unique among groups held).
  std::vector<int> prompt;          // Non-empty token ids.
  SamplingOptions options;          // max_new_tokens >= 1.
  std::vector<uint64_t> seeds;      // One per row (G = seeds.size() >= 1).
  std::vector<int> max_new_tokens;  // Empty, or per row (each 1..options.max_new_tokens).
};

struct EngineResult {
  uint64_t id = 0;
  std::vector<Sample> samples;  // One per seed, in order.
  double seconds = 0;           // From the admission of its first row to its last token.
};

// Totals since Create (gauges: the state after the last Step).
struct EngineStats {
  int64_t steps = 0;
  int64_t decode_passes = 0;
  int64_t row_steps = 0;   // Rows fed through decode passes (every one is still generating).
  int64_t slot_steps = 0;  // max_rows per decode pass: utilisation = row_steps / slot_steps.
  int64_t prompt_passes = 0;
  int64_t prefill_tokens = 0;  // Positions computed by prompt passes (recomputation included).
  int64_t prefill_tokens_reused = 0;  // Prompt positions rows took from their group's prefill.
  int64_t tokens = 0;                 // Tokens drawn.
  int64_t preemptions = 0;            // Rows preempted for want of KV blocks.
  double prefill_seconds = 0;         // Prompt passes (forward + drawing).
  double decode_seconds = 0;          // Decode passes (forward + drawing).
  int running_rows = 0;
  int waiting_rows = 0;
  int64_t kv_blocks = 0;  // In the pool.
  int64_t kv_blocks_used = 0;
  int64_t kv_blocks_peak = 0;
  int64_t kv_block_bytes = 0;  // One block over all layers, keys and values.
  int64_t kv_block_tokens = 0;
};

class Engine {
 public:
  // Allocates the KV pool for a model of `model` shape (resolved: its
  // layers, key/value heads and head dimension) placed by `placement`.
  // InvalidArgument for bad options; ResourceExhausted / Internal when the
  // pool cannot be allocated (naming its size).
  static absl::StatusOr<std::unique_ptr<Engine>> Create(const EngineOptions& options,
                                                        const ModelConfig& model, int vocab_size,
                                                        const Placement& placement);
  virtual ~Engine() = default;

  // Queues a group. InvalidArgument: empty prompt or seeds, a token outside
  // the vocabulary, bad lengths, an id already held, or a row that cannot
  // fit the pool alone (see RowFits).
  virtual absl::Status Add(EngineGroup group) = 0;
  // Whether one row of `prompt_len` tokens and up to `max_new_tokens` new
  // ones can run in this pool.
  virtual bool RowFits(int prompt_len, int max_new_tokens) const = 0;
  // Drops the group `id` whatever its state; false if not held.
  virtual bool Cancel(uint64_t id) = 0;
  // Drops every group.
  virtual void CancelAll() = 0;

  // One step (admission, prompt pass, decode pass) with `model`; the groups
  // that finished in it. A no-op returning nothing when idle().
  virtual std::vector<EngineResult> Step(TransformerImpl& model) = 0;

  virtual bool idle() const = 0;   // No group held.
  virtual int groups() const = 0;  // Groups held (running or waiting).
  virtual int running_rows() const = 0;
  virtual int waiting_rows() const = 0;  // Rows of held groups waiting for a slot.
  virtual EngineStats stats() const = 0;
  virtual const EngineOptions& options() const = 0;
};

// Engine::RowFits for a pool of `kv_cache_tokens` positions in blocks of
// `block_tokens`, without an engine (lease validation).
bool RowFitsKvCache(int prompt_len, int max_new_tokens, int64_t kv_cache_tokens, int block_tokens);

// Generates `groups` to completion with a fresh engine and returns their
// results in the order given (tests and benchmarks). Throws c10::Error.
absl::StatusOr<std::vector<EngineResult>> GenerateContinuous(TransformerImpl& model,
                                                             const EngineOptions& options,
                                                             std::vector<EngineGroup> groups,
                                                             EngineStats* stats = nullptr);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_ENGINE_H_
