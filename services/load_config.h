// How every `rlvr` command loads its run configuration.
//
// Thread-compatible: a pure function of its arguments and the files it reads.
#ifndef RLVR_SERVICES_LOAD_CONFIG_H_
#define RLVR_SERVICES_LOAD_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/run_config.h"

namespace rlvr::services {

// LoadRunConfig (defaults, `path`, overrides, cross-field checks), then the
// checks that need libraries common/ does not depend on: the loss section as
// the learner will parse it (learner::ParsedEstimator::Parse: loss.estimator
// against the estimator registry, listing the registered names). So a command
// fails before it starts anything, with the config loader's kind of message.
absl::StatusOr<RunConfig> LoadCommandConfig(const std::string& path,
                                            const std::vector<std::string>& overrides);

}  // namespace rlvr::services

#endif  // RLVR_SERVICES_LOAD_CONFIG_H_
