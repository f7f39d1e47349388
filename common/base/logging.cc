#include "common/base/logging.h"

#include <glog/logging.h>

#include <atomic>

namespace rlvr {

void InitLogging(const LoggingOptions& options) {
  static std::atomic<bool> initialised{false};
  if (initialised.exchange(true)) return;
  static std::string program = options.program;  // glog keeps the pointer.
  FLAGS_logtostderr = options.log_dir.empty();
  FLAGS_alsologtostderr = !options.log_dir.empty();
  if (!options.log_dir.empty()) FLAGS_log_dir = options.log_dir;
  FLAGS_stderrthreshold = options.stderr_threshold;
  FLAGS_minloglevel = 0;
  google::InitGoogleLogging(program.c_str());
}

}  // namespace rlvr
