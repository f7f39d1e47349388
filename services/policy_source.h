// How the offline commands (eval, score, export) obtain a policy: the model
// section of a run config (model.hf_path may name a Hugging Face directory,
// policy/factory.h) and, optionally, weights of rlvr's own: a weight blob file
// (pretrain output, policy/weights.h) or a learner checkpoint directory
// (`runs/<name>/checkpoints/ckpt-<step>`).
#ifndef RLVR_SERVICES_POLICY_SOURCE_H_
#define RLVR_SERVICES_POLICY_SOURCE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/config/run_config.h"
#include "common/policy/factory.h"
#include "common/policy/model.h"
#include "common/policy/placement.h"

namespace rlvr::services {

struct CommandPolicy {
  policy::ResolvedPolicy resolved;     // Shape, vocabulary, tokenizer.
  policy::Transformer model{nullptr};  // In eval mode.
  uint64_t version = 0;                // The blob's policy version; 0 for HF weights.
};

// `weights` empty: the initial policy (the Hugging Face weights; for the
// built-in model that is an InvalidArgument: it has no weights of its own).
// A directory: a checkpoint (verified, then its model part). Otherwise a
// weight blob file. The blob must match the resolved shape exactly (errors
// name the tensor). The model is then placed for inference on `placement`
// (policy/placement.h; default: the CPU in float32, as before placements).
absl::StatusOr<CommandPolicy> LoadCommandPolicy(
    const ModelConfig& config, const std::string& weights,
    const policy::Placement& placement = policy::Placement());

// Loads rlvr weights into `model`: `path` is a checkpoint directory (verified,
// then its model part) or a weight blob file. `version` may be null.
absl::Status LoadRlvrWeights(const std::string& path, policy::Transformer& model,
                             uint64_t* version);

}  // namespace rlvr::services

#endif  // RLVR_SERVICES_POLICY_SOURCE_H_
