// CPU lists in the kernel's notation ("0", "2-3", "0,2-5"), for pinning the
// `rlvr run` children (run.learner_cpus / run.actor_cpus).
#ifndef RLVR_SERVICES_RUNNER_CPU_LIST_H_
#define RLVR_SERVICES_RUNNER_CPU_LIST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rlvr::runner {

// Parses `text` into sorted, distinct CPU numbers. Empty text gives an empty
// list (no pinning). Fails on anything else that is not a comma-separated list
// of numbers and ascending ranges "a-b", or on a CPU number above 4095.
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text);

// The CPUs this process may run on (sched_getaffinity).
std::vector<int> AllowedCpus();

// ParseCpuList, then checks every CPU is in `allowed`. Errors name `key`:
// "config key 'run.actor_cpus': CPU 5 is not available (allowed: 0-1)".
absl::StatusOr<std::vector<int>> ParseCpuListFor(absl::string_view key, absl::string_view text,
                                                 const std::vector<int>& allowed);

// The kernel notation of sorted CPU numbers: {0,1,2,5} -> "0-2,5".
std::string FormatCpuList(const std::vector<int>& cpus);

}  // namespace rlvr::runner

#endif  // RLVR_SERVICES_RUNNER_CPU_LIST_H_
