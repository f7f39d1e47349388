#include "tests/testing/test_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

extern char** environ;

namespace rlvr::testing {

TestProcess::TestProcess(std::vector<std::string> argv, std::string log) : log_(std::move(log)) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  std::vector<char*> args;
  for (std::string& a : argv) args.push_back(a.data());
  args.push_back(nullptr);
  if (posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&fa);
}

TestProcess::~TestProcess() {
  if (pid_ > 0 && code_ < 0) {
    kill(pid_, SIGKILL);
    int st = 0;
    waitpid(pid_, &st, 0);
  }
}

void TestProcess::Signal(int sig) {
  if (pid_ > 0 && code_ < 0) kill(pid_, sig);
}

int TestProcess::Wait(double timeout_s) {
  if (pid_ <= 0) return -1;
  const auto t0 = std::chrono::steady_clock::now();
  while (code_ < 0) {
    int st = 0;
    if (waitpid(pid_, &st, WNOHANG) == pid_) {
      code_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      break;
    }
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > timeout_s) {
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return code_;
}

std::string TestProcess::Log() const {
  std::ifstream in(log_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<nlohmann::json> ReadJsonLines(const std::string& path, size_t* malformed) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      if (malformed != nullptr) ++*malformed;
      continue;
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace rlvr::testing
