#include "services/runner/process.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <deque>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace rlvr::runner {
namespace {

int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

}  // namespace

absl::StatusOr<ChildProcess> ChildProcess::Spawn(const std::vector<std::string>& argv,
                                                 const std::string& log_path, std::string name,
                                                 const std::vector<int>& cpus) {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  cpu_set_t cpu_set;
  CPU_ZERO(&cpu_set);
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE) {
      return absl::InvalidArgumentError(absl::StrCat("CPU ", c, " out of range"));
    }
    CPU_SET(c, &cpu_set);
  }
  int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot open log '", log_path, "': ", std::strerror(errno)));
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t parent = ::getpid();
  absl::Time started = absl::Now();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    return absl::UnavailableError(absl::StrCat("fork failed: ", std::strerror(errno)));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
    ::setpgid(0, 0);
    if (!cpus.empty() && ::sched_setaffinity(0, sizeof(cpu_set), &cpu_set) != 0) {
      const char msg[] = "rlvr run: sched_setaffinity failed\n";
      ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof(msg) - 1);
      (void)ignored;
      ::_exit(127);
    }
    ::execv(args[0], args.data());
    const char msg[] = "rlvr run: exec failed\n";
    ssize_t ignored = ::write(STDERR_FILENO, msg, sizeof(msg) - 1);
    (void)ignored;
    ::_exit(127);
  }
  ::close(log_fd);
  ChildProcess child;
  child.pid_ = pid;
  child.running_ = true;
  child.started_ = started;
  child.name_ = std::move(name);
  child.log_path_ = log_path;
  return child;
}

std::optional<int> ChildProcess::Poll() {
  if (!running_) return exit_code_;
  int status = 0;
  struct rusage ru {};
  pid_t r = ::wait4(pid_, &status, WNOHANG, &ru);
  if (r == pid_) {
    Reaped(status, ru);
    return exit_code_;
  }
  return std::nullopt;
}

void ChildProcess::Reaped(int status, const struct rusage& ru) {
  running_ = false;
  exit_code_ = DecodeWaitStatus(status);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec * 1e-6; };
  usage_.cpu_seconds = seconds(ru.ru_utime) + seconds(ru.ru_stime);
  usage_.wall_seconds = absl::ToDoubleSeconds(absl::Now() - started_);
}

void ChildProcess::Signal(int signal) {
  if (running_) ::kill(pid_, signal);
}

int ChildProcess::StopWithin(double timeout_s, int first_signal) {
  if (!running_) return exit_code_;
  Signal(first_signal);
  const absl::Time deadline =
      absl::Now() + absl::Milliseconds(static_cast<int64_t>(timeout_s * 1000));
  while (absl::Now() < deadline) {
    if (auto code = Poll()) return *code;
    absl::SleepFor(absl::Milliseconds(20));
  }
  Signal(SIGKILL);
  int status = 0;
  struct rusage ru {};
  ::wait4(pid_, &status, 0, &ru);
  Reaped(status, ru);
  return exit_code_;
}

std::string ChildProcess::LogTail(int lines) const {
  std::ifstream in(log_path_);
  std::deque<std::string> tail;
  std::string line;
  while (std::getline(in, line)) {
    tail.push_back(line);
    if (static_cast<int>(tail.size()) > lines) tail.pop_front();
  }
  return absl::StrJoin(tail, "\n");
}

std::string DescribeExit(int code) {
  if (code > 128 && code < 128 + 65) {
    return absl::StrCat("killed by signal ", code - 128, " (", strsignal(code - 128), ")");
  }
  return absl::StrCat("exit code ", code);
}

}  // namespace rlvr::runner
