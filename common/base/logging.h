// Process-wide logging set-up (glog). Call once from main before any thread starts.
#ifndef RLVR_COMMON_BASE_LOGGING_H_
#define RLVR_COMMON_BASE_LOGGING_H_

#include <string>

namespace rlvr {

struct LoggingOptions {
  // Program name shown in log lines ("rlvr-learner").
  std::string program = "rlvr";
  // Also write glog files into this directory when non-empty.
  std::string log_dir;
  // Minimum severity printed to stderr: 0 INFO, 1 WARNING, 2 ERROR.
  int stderr_threshold = 0;
};

// Initialises glog once; later calls are ignored. Thread-compatible: call from
// main before other threads exist.
void InitLogging(const LoggingOptions& options);

}  // namespace rlvr

#endif  // RLVR_COMMON_BASE_LOGGING_H_
