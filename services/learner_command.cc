// `rlvr learner`: flags + config (+ torch env:// variables) -> LearnerOptions
// -> RunLearner. SIGTERM/SIGINT start the graceful stop (NOT_SERVING, finish
// the running update, checkpoint, stop the other ranks, exit 0). Ranks > 0
// hold no state of their own (rank 0 checkpoints and sends them its state when
// they rejoin) and may be blocked in a collective, so a signal ends them at
// once, with status 0.
#include <glog/logging.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/config/flags.h"
#include "common/config/run_config.h"
#include "common/net/auth.h"
#include "learner/learner.h"
#include "services/command_reporter.h"
#include "services/commands.h"
#include "services/load_config.h"

namespace rlvr::services {
namespace {

volatile sig_atomic_t g_stop_signals = 0;
volatile sig_atomic_t g_worker_rank = 0;  // 1 for ranks > 0.

void OnStopSignal(int) {
  if (g_worker_rank != 0) {
    static const char kMessage[] = "rlvr learner: rank > 0 stops on signal\n";
    const ssize_t written = write(STDERR_FILENO, kMessage, sizeof(kMessage) - 1);
    (void)written;
    _exit(0);
  }
  // A second signal while stopping exits at once.
  if (g_stop_signals > 0) _exit(1);
  g_stop_signals = 1;
}

// torch env:// contract: the variable if set, else `fallback`.
std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? std::string(v) : fallback;
}
int EnvIntOr(const char* name, int fallback) {
  int out = 0;
  const char* v = std::getenv(name);
  return v != nullptr && absl::SimpleAtoi(v, &out) ? out : fallback;
}

}  // namespace

int LearnerCommand(int argc, char** argv) {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string address = "127.0.0.1:0";
  std::string port_file;
  int metrics_port = -1;
  std::string metrics_bind = "127.0.0.1";
  std::string run_dir;
  std::string metrics_jsonl;
  std::string ledger;
  std::string base_weights;
  std::string progress_file;
  int total_updates = -1;
  int rank = EnvIntOr("RANK", 0);
  int world_size = EnvIntOr("WORLD_SIZE", 1);
  std::string master_addr = EnvOr("MASTER_ADDR", "127.0.0.1");
  int master_port = EnvIntOr("MASTER_PORT", 0);
  std::string backend = "auto";
  std::string tls_cert, tls_key, tls_client_ca, auth_token_file;

  FlagSet flags("learner",
                "Runs one learner rank. Rank 0 serves the actor sessions, weights, status and\n"
                "health over gRPC, and trains; ranks > 0 only train (data parallel).\n"
                "Rendezvous follows torch env://: MASTER_ADDR, MASTER_PORT, WORLD_SIZE and\n"
                "RANK give the defaults of the matching flags.");
  flags.String("config", &config_path, "Run config YAML; empty = built-in defaults.");
  flags.StringList("set", &overrides, "Config override key=value (repeatable).");
  flags.String("address", &address, "Rank 0 gRPC listen address (port 0 = pick a free one).");
  flags.String("port_file", &port_file, "Rank 0 writes the bound gRPC port here once serving.");
  flags.Int("metrics_port", &metrics_port, "Prometheus /metrics port; 0 = pick, -1 = off.");
  flags.String("metrics_bind", &metrics_bind, "Bind address of /metrics (0.0.0.0 in pods).");
  flags.String("run_dir", &run_dir,
               "Run directory: checkpoints go to <run_dir>/checkpoints (resumed from there);\n"
               "      metrics.jsonl defaults to <run_dir>/metrics.jsonl. Empty = no checkpoints.");
  flags.String("metrics_jsonl", &metrics_jsonl,
               "One JSON line per update (default under --run_dir).");
  flags.String("ledger", &ledger,
               "Accounting ledger: one JSON line per trained group (prompt_index, lease_id,\n"
               "      version, step, epoch, position). Empty = none.");
  flags.String("base_weights", &base_weights,
               "Base policy weight blob; default pretrain.checkpoint of the config\n"
               "      (random init if that file does not exist).");
  flags.Int("total_updates", &total_updates, "Updates to run; default run.total_updates.");
  flags.String("progress_file", &progress_file,
               "Rank 0 writes how far a held-out evaluation is here (`rlvr run` shows it).");
  flags.Int("rank", &rank, "Data-parallel rank (env RANK).");
  flags.Int("world_size", &world_size, "Data-parallel world size (env WORLD_SIZE).");
  flags.String("master_addr", &master_addr, "Rendezvous host of rank 0 (env MASTER_ADDR).");
  flags.Int("master_port", &master_port, "Rendezvous port (env MASTER_PORT).");
  flags.String("backend", &backend, "Collective backend: auto | gloo | nccl | local.");
  flags.String("tls_cert", &tls_cert, "PEM server certificate; empty = plaintext.");
  flags.String("tls_key", &tls_key, "PEM server private key.");
  flags.String("tls_client_ca", &tls_client_ca,
               "PEM CA for client certificates; set = mutual TLS required.");
  flags.String("auth_token_file", &auth_token_file,
               "File with the bearer token callers must present; empty = none.");
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;

  const CommandReporter command("learner");

  absl::StatusOr<RunConfig> config = LoadCommandConfig(config_path, overrides);
  if (!config.ok()) return command.Fail(config.status(), 2);
  auto token = LoadToken(auth_token_file);
  if (!token.ok()) return command.Fail(token.status(), 2);

  learner::LearnerOptions options;
  options.config = *config;
  options.address = address;
  options.port_file = port_file;
  options.metrics_port = metrics_port;
  options.metrics_bind = metrics_bind;
  options.run_dir = run_dir;
  options.metrics_jsonl =
      !metrics_jsonl.empty() || run_dir.empty() ? metrics_jsonl : run_dir + "/metrics.jsonl";
  options.ledger_path = ledger;
  options.progress_file = progress_file;
  // A Hugging Face model's base is its own weights (model.hf_path); only an
  // explicit --base_weights replaces them.
  if (base_weights.empty() && config->model.hf_path.empty()) {
    base_weights = config->pretrain.checkpoint;
    FILE* f = std::fopen(base_weights.c_str(), "rb");
    if (f == nullptr) {
      LOG(WARNING) << "base weights " << base_weights << " not found; starting from random init";
      base_weights.clear();
    } else {
      std::fclose(f);
    }
  }
  options.base_weights = base_weights;
  // The flag overrides run.total_updates itself: one value, whatever reads it.
  if (total_updates >= 0) options.config.run.total_updates = total_updates;
  options.rank = rank;
  options.world_size = world_size;
  options.master_addr = master_addr;
  options.master_port = master_port;
  options.backend = backend;
  options.tls_cert = tls_cert;
  options.tls_key = tls_key;
  options.tls_client_ca = tls_client_ca;
  options.auth_token = *token;
  options.stop_requested = [] { return g_stop_signals > 0; };
  g_worker_rank = rank > 0 ? 1 : 0;

  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  absl::Status status = learner::RunLearner(options);
  google::FlushLogFiles(google::GLOG_INFO);
  if (!status.ok()) {
    std::fprintf(stderr, "rlvr learner: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  std::printf("learner stopped\n");
  return 0;
}

}  // namespace rlvr::services
