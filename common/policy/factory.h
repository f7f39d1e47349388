// The one place a process turns the run config's model section into its
// policy: the model's shape, its tokenizer and its starting weights. Every
// command and library that builds a model or a tokenizer (learner, trainer,
// actor, pretrain, eval, score, export) goes through here, so the built-in
// model and a Hugging Face directory (model.hf_path) are wired the same way
// everywhere.
//
//  - Built-in (model.hf_path empty): the shape is the config's, the tokenizer
//    the character tokenizer, the starting weights a seeded random init (the
//    runner then pretrains them; a base weight blob replaces them).
//  - Hugging Face (model.hf_path = DIR): the shape comes from DIR/config.json,
//    the tokenizer from DIR (tokenizer.json), the starting weights from DIR's
//    safetensors. No pretraining.
//
// Thread safety: free functions; CreateInitialPolicy seeds the process-wide
// torch RNG for the built-in init (callers creating models concurrently
// serialise, as CreateTransformer's callers do).
#ifndef RLVR_COMMON_POLICY_FACTORY_H_
#define RLVR_COMMON_POLICY_FACTORY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/config/run_config.h"
#include "common/policy/placement.h"
#include "common/tokenizer/tokenizer.h"

namespace rlvr::policy {

class Transformer;  // model.h

struct ResolvedPolicy {
  // The full shape: for a Hugging Face directory, config.json's architecture
  // and dimensions (with hf_path kept); otherwise the config's own section.
  ModelConfig model;
  // Rows of the embedding: the model's vocabulary (config.json's vocab_size
  // for HF, which may exceed the tokenizer's; the tokenizer's otherwise).
  int vocab_size = 0;
  // The policy's tokenizer (immutable; safe to share across threads).
  std::unique_ptr<Tokenizer> tokenizer;
};

// Resolves `config` (see the header comment). Errors name the file: a
// missing or malformed config.json or tokenizer, a tokenizer whose ids do not
// fit the model's vocabulary.
absl::StatusOr<ResolvedPolicy> ResolvePolicy(const ModelConfig& config);

// True when `config` names a Hugging Face directory (its weights are the
// starting policy; there is nothing to pretrain).
bool IsHfPolicy(const ModelConfig& config);

// What a model is placed for (placement.h): kTraining keeps float32
// parameters on the device and computes in the placement's dtype through
// per-use casts (mixed precision, model.h); kInference converts the
// parameters themselves to the compute dtype (half the memory for bfloat16).
enum class PolicyUse { kTraining, kInference };

// Moves `model` to `placement`'s device and applies its dtype for `use`. A
// default placement (cpu/float32) leaves a float32 CPU model untouched.
// Internal (naming the placement) if LibTorch fails, e.g. out of memory.
absl::Status PlaceModel(const Placement& placement, PolicyUse use, Transformer& model);

// The starting policy of the resolved `model`: the Hugging Face weights
// (read from model.hf_path, converted straight to the placement's device and
// dtype), or the built-in model randomly initialised from `init_seed` (on
// the CPU, in float32, so the draws do not depend on the placement; then
// placed). Errors as the loaders (naming file and tensor).
absl::StatusOr<Transformer> CreateInitialPolicy(const ModelConfig& model, int vocab_size,
                                                uint64_t init_seed,
                                                const Placement& placement = Placement(),
                                                PolicyUse use = PolicyUse::kTraining);

// A model of the resolved shape with uninitialised parameters, directly on
// `placement`'s device in the dtype for `use`, for a loader that overwrites
// every parameter (the actor's weight slots). InvalidArgument on a bad
// shape, Internal if LibTorch fails (out of memory).
absl::StatusOr<Transformer> CreateEmptyPolicy(const ModelConfig& model, int vocab_size,
                                              const Placement& placement, PolicyUse use);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_FACTORY_H_
