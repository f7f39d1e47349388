// rlvr_loadgen: drives one learner with many synthetic actor sessions.
//   rlvr_loadgen --target 127.0.0.1:PORT [--sessions 256] [--seconds 30]
//                [--invalid_fraction 0.1] [--completion_tokens 8] [--learner_pid PID]
// Prints the report; with --learner_pid also the learner's memory high-water mark.
#include <cstdio>
#include <fstream>
#include <string>

#include "common/config/flags.h"
#include "tests/load/load_generator.h"

namespace {
long VmKb(int pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}
}  // namespace

int main(int argc, char** argv) {
  rlvr::testing::LoadOptions o;
  int learner_pid = 0;
  rlvr::FlagSet flags("loadgen", "Synthetic actor sessions against a learner.");
  flags.String("target", &o.target, "Learner address host:port.");
  flags.Int("sessions", &o.sessions, "Concurrent sessions.");
  flags.Double("seconds", &o.duration_s, "Duration.");
  flags.Double("invalid_fraction", &o.invalid_fraction, "Share of invalid groups.");
  flags.Int("capacity", &o.capacity, "Leases per session.");
  flags.Int("completion_tokens", &o.completion_tokens, "Tokens per completion.");
  flags.Int("learner_pid", &learner_pid, "Report this process's memory (VmHWM, VmRSS).");
  if (auto s = flags.Parse(argc - 1, argv + 1); !s.ok() || flags.help_requested()) {
    std::fprintf(stderr, "%s%s\n", std::string(s.message()).c_str(), flags.Usage().c_str());
    return s.ok() ? 0 : 2;
  }
  auto report = rlvr::testing::RunLoad(o);
  if (!report.ok()) {
    std::fprintf(stderr, "loadgen: %s\n", std::string(report.status().message()).c_str());
    return 1;
  }
  std::printf("%s\n", report->Summary().c_str());
  if (learner_pid > 0) {
    std::printf("learner memory: VmHWM %ld kB, VmRSS %ld kB\n", VmKb(learner_pid, "VmHWM"),
                VmKb(learner_pid, "VmRSS"));
  }
  return report->invalid_accepted == 0 ? 0 : 1;
}
