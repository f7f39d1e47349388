// Helpers of the multi-process tests (tests/, tests/chaos/): a child process
// with its output in a log file, and a reader of JSON-lines files.
//
// Thread safety: a TestProcess is used by one thread.
#ifndef RLVR_TESTS_TESTING_TEST_PROCESS_H_
#define RLVR_TESTS_TESTING_TEST_PROCESS_H_

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace rlvr::testing {

// Spawns argv[0] (a path, not searched in PATH) with the environment of this
// process, stdout and stderr appended to `log` (truncated first). The
// destructor SIGKILLs and reaps a process that is still running.
class TestProcess {
 public:
  TestProcess(std::vector<std::string> argv, std::string log);
  ~TestProcess();
  TestProcess(const TestProcess&) = delete;
  TestProcess& operator=(const TestProcess&) = delete;

  bool ok() const { return pid_ > 0; }  // Whether the spawn succeeded.
  pid_t pid() const { return pid_; }
  // Sends `sig` unless the process has already been reaped.
  void Signal(int sig);
  // The exit code (128 + signal number if killed by a signal), or -1 if it
  // is still running after `timeout_s` (0 = just poll).
  int Wait(double timeout_s);
  // The whole log so far.
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  std::string log_;
  int code_ = -1;  // >= 0 once reaped.
};

// The JSON objects of a JSON-lines file, in order. Empty and malformed lines
// (a torn last line after a SIGKILL) are skipped and counted in *malformed
// when it is not null. A missing file reads as empty.
std::vector<nlohmann::json> ReadJsonLines(const std::string& path, size_t* malformed = nullptr);

}  // namespace rlvr::testing

#endif  // RLVR_TESTS_TESTING_TEST_PROCESS_H_
