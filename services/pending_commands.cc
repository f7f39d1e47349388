// Subcommands whose libraries have not landed yet. Each says so and fails, so
// that scripts never mistake a missing feature for success. Remove an entry
// here when its real command file is added. (Every command has landed.)
#include "services/commands.h"

namespace rlvr::services {}  // namespace rlvr::services
