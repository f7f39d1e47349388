// A child process of the `rlvr run` supervisor: spawned with its stdout and
// stderr appended to a log file, killed with the parent (PR_SET_PDEATHSIG),
// optionally pinned to CPUs; once reaped, its CPU time and lifetime are known.
//
// Thread safety: a ChildProcess is used by one thread (the supervisor loop).
#ifndef RLVR_SERVICES_RUNNER_PROCESS_H_
#define RLVR_SERVICES_RUNNER_PROCESS_H_

#include <sys/resource.h>
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace rlvr::runner {

class ChildProcess {
 public:
  // Starts argv[0] with argv, output appended to `log_path`. The child gets
  // SIGTERM if the supervisor dies. A non-empty `cpus` pins the child (and
  // every thread and process it starts) to those CPUs before exec. Fails if
  // fork fails or a CPU is out of range.
  static absl::StatusOr<ChildProcess> Spawn(const std::vector<std::string>& argv,
                                            const std::string& log_path, std::string name,
                                            const std::vector<int>& cpus = {});

  ChildProcess(ChildProcess&&) = default;
  ChildProcess& operator=(ChildProcess&&) = default;

  // Non-blocking: the exit status if the child has ended (then reaped).
  std::optional<int> Poll();
  // Sends `signal` if the child is still running.
  void Signal(int signal);
  // Waits up to `timeout_s` for the child to end, then SIGKILLs it. Returns
  // its exit status (128 + signal number for a signal).
  int StopWithin(double timeout_s, int first_signal);

  // Resources of a reaped child: user + system CPU seconds (its own and its
  // reaped descendants') and seconds from Spawn to reaping. Zero while running.
  struct Usage {
    double cpu_seconds = 0.0;
    double wall_seconds = 0.0;
  };
  const Usage& usage() const { return usage_; }

  bool running() const { return running_; }
  pid_t pid() const { return pid_; }
  const std::string& name() const { return name_; }
  const std::string& log_path() const { return log_path_; }
  // The last `lines` lines of the child's log.
  std::string LogTail(int lines) const;

 private:
  ChildProcess() = default;
  pid_t pid_ = -1;
  bool running_ = false;
  // Records the exit status and usage of the reaped child.
  void Reaped(int status, const struct rusage& ru);

  int exit_code_ = 0;
  Usage usage_;
  absl::Time started_;
  std::string name_;
  std::string log_path_;
};

// "exit code 3" / "killed by signal 9 (Killed)".
std::string DescribeExit(int code);

}  // namespace rlvr::runner

#endif  // RLVR_SERVICES_RUNNER_PROCESS_H_
