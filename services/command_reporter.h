// What every `rlvr` subcommand does first: logging under its own name, and
// the one way it reports a failure.
//
// Thread-compatible: construct once, in the command's main, before threads.
#ifndef RLVR_SERVICES_COMMAND_REPORTER_H_
#define RLVR_SERVICES_COMMAND_REPORTER_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rlvr::services {

class CommandReporter {
 public:
  // Initialises logging (common/base/logging.h) as program "rlvr-<name>".
  explicit CommandReporter(std::string name);

  // Prints "rlvr <name>: <message>" on stderr and returns `exit_code`
  // (2: bad flags or config; 1: the command failed).
  int Fail(absl::string_view message, int exit_code) const;
  int Fail(const absl::Status& status, int exit_code) const;

 private:
  std::string name_;
};

}  // namespace rlvr::services

#endif  // RLVR_SERVICES_COMMAND_REPORTER_H_
