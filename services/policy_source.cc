#include "services/policy_source.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/policy/weights.h"
#include "learner/trainer/trainer.h"

namespace rlvr::services {

absl::StatusOr<CommandPolicy> LoadCommandPolicy(const ModelConfig& config,
                                                const std::string& weights,
                                                const policy::Placement& placement) {
  CommandPolicy out;
  ASSIGN_OR_RETURN(out.resolved, policy::ResolvePolicy(config));
  if (weights.empty()) {
    if (!policy::IsHfPolicy(out.resolved.model)) {
      return absl::InvalidArgumentError(
          "the built-in model has no weights of its own: pass --weights (a weight file or a "
          "checkpoint directory) or set model.hf_path");
    }
    ASSIGN_OR_RETURN(out.model,
                     policy::CreateInitialPolicy(out.resolved.model, out.resolved.vocab_size, 0));
  } else {
    ASSIGN_OR_RETURN(out.model,
                     policy::CreateTransformer(out.resolved.model, out.resolved.vocab_size, 0));
    RETURN_IF_ERROR(LoadRlvrWeights(weights, out.model, &out.version));
  }
  RETURN_IF_ERROR(policy::PlaceModel(placement, policy::PolicyUse::kInference, out.model));
  out.model->eval();
  return out;
}

absl::Status LoadRlvrWeights(const std::string& path, policy::Transformer& model,
                             uint64_t* version) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    ASSIGN_OR_RETURN(std::string blob, learner::ReadCheckpointWeights(path));
    return policy::LoadWeights(blob, model, version);
  }
  return policy::LoadWeightsFile(path, model, version);
}

}  // namespace rlvr::services
