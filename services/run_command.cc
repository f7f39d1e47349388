// `rlvr run`: flags -> RunnerOptions -> RunEmbedded.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdio>

#include "common/base/logging.h"
#include "common/config/flags.h"
#include "common/config/run_config.h"
#include "services/commands.h"
#include "services/load_config.h"
#include "services/runner/runner.h"

namespace rlvr::services {
namespace {

std::atomic<bool> g_stop{false};

void OnSignal(int) { g_stop.store(true); }

std::string SelfPath() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "rlvr";
  buf[n] = '\0';
  return buf;
}

}  // namespace

int RunCommand(int argc, char** argv) {
  std::string config_path = "configs/default.yaml";
  std::vector<std::string> overrides;
  bool no_live = !::isatty(STDOUT_FILENO);
  bool help_config = false;
  int max_restarts = 20;
  FlagSet flags("run",
                "Runs the embedded default job: pretrains the base policy if its weights are\n"
                "missing, starts a learner and N actors of this binary on 127.0.0.1, trains,\n"
                "evaluates, and writes runs/<run.name>/ (config.yaml, logs/, metrics.jsonl,\n"
                "checkpoints/, summary.json, plot.png). Ctrl-C stops cleanly with a checkpoint;\n"
                "running it again on the same run directory resumes.");
  flags.String("config", &config_path, "Run config YAML (see configs/).");
  flags.StringList("set", &overrides,
                   "Override a config key: --set loss.estimator=grpo (repeatable).");
  flags.Bool("no_live", &no_live, "One progress line per update instead of a live line.");
  flags.Int("max_actor_restarts", &max_restarts, "Give up after this many actor crashes.");
  flags.Bool("help_config", &help_config, "List every config key with its type and default.");
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
  if (help_config) {
    RunConfig defaults;
    ConfigSchema schema;
    DescribeRunConfig(&defaults, &schema);
    std::printf("config keys (YAML sections; --set section.key=value):\n%s", schema.Help().c_str());
    return 0;
  }
  LoggingOptions logging;
  logging.program = "rlvr-run";
  InitLogging(logging);
  absl::StatusOr<RunConfig> config = LoadCommandConfig(config_path, overrides);
  if (!config.ok()) {
    std::fprintf(stderr, "rlvr run: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  runner::RunnerOptions options;
  options.config = *config;
  options.binary = SelfPath();
  options.live_progress = !no_live;
  options.max_actor_restarts = max_restarts;
  options.stop_requested = &g_stop;
  absl::StatusOr<runner::RunSummary> summary = runner::RunEmbedded(options);
  if (!summary.ok()) {
    std::fprintf(stderr, "rlvr run: FAILED: %s\n", std::string(summary.status().message()).c_str());
    return 1;
  }
  return 0;
}

}  // namespace rlvr::services
