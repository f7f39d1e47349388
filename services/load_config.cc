#include "services/load_config.h"

#include "common/base/status_macros.h"
#include "learner/core/estimator_registry.h"

namespace rlvr::services {

absl::StatusOr<RunConfig> LoadCommandConfig(const std::string& path,
                                            const std::vector<std::string>& overrides) {
  ASSIGN_OR_RETURN(RunConfig config, LoadRunConfig(path, overrides));
  RETURN_IF_ERROR(learner::ParsedEstimator::Parse(config.loss).status());
  return config;
}

}  // namespace rlvr::services
