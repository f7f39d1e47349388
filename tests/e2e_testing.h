// Helpers of the end-to-end tests that drive the `rlvr` binary as a user
// would: read what it wrote (a file, JSONL lines), run a shell command.
#ifndef RLVR_TESTS_E2E_TESTING_H_
#define RLVR_TESTS_E2E_TESTING_H_

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

namespace rlvr::testing {

// The whole file, or "" when it cannot be read (for failure messages).
inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The JSON objects of a JSONL file (metrics.jsonl, ledger.jsonl, rlvr
// verify's output), empty lines skipped; a malformed line is a test failure
// and left out.
inline std::vector<nlohmann::json> JsonLines(const std::filesystem::path& p) {
  std::vector<nlohmann::json> out;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    EXPECT_FALSE(j.is_discarded()) << "malformed line in " << p << ": " << line;
    if (!j.is_discarded()) out.push_back(j);
  }
  return out;
}

// `cmd` through /bin/sh: its exit code, or -1 if it did not exit normally.
inline int Shell(const std::string& cmd) {
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace rlvr::testing

#endif  // RLVR_TESTS_E2E_TESTING_H_
