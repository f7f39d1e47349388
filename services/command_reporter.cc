#include "services/command_reporter.h"

#include <cstdio>
#include <utility>

#include "common/base/logging.h"

namespace rlvr::services {

CommandReporter::CommandReporter(std::string name) : name_(std::move(name)) {
  LoggingOptions logging;
  logging.program = "rlvr-" + name_;
  InitLogging(logging);
}

int CommandReporter::Fail(absl::string_view message, int exit_code) const {
  std::fprintf(stderr, "rlvr %s: %.*s\n", name_.c_str(), static_cast<int>(message.size()),
               message.data());
  return exit_code;
}

int CommandReporter::Fail(const absl::Status& status, int exit_code) const {
  return Fail(status.message(), exit_code);
}

}  // namespace rlvr::services
