// Helpers of the end-to-end tests that drive the `rlvr` binary as a user
// would: read what it wrote, run a shell command.
#ifndef RLVR_TESTS_E2E_TESTING_H_
#define RLVR_TESTS_E2E_TESTING_H_

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace rlvr::testing {

// The whole file, or "" when it cannot be read (for failure messages).
inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `cmd` through /bin/sh: its exit code, or -1 if it did not exit normally.
inline int Shell(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace rlvr::testing

#endif  // RLVR_TESTS_E2E_TESTING_H_
