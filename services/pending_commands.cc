// Subcommands whose libraries have not landed yet. Each says so and fails, so
// that scripts never mistake a missing feature for success. Remove an entry
// here when its real command file is added.
#include <cstdio>

#include "services/commands.h"

namespace rlvr::services {
namespace {
int NotBuilt(const char* name) {
  std::fprintf(stderr, "rlvr %s: not built yet in this version\n", name);
  return 3;
}
}  // namespace

int LearnerCommand(int, char**) { return NotBuilt("learner"); }

}  // namespace rlvr::services
