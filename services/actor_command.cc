// `rlvr actor`: flags + config -> ActorOptions -> Actor; SIGTERM/SIGINT ->
// Actor::Shutdown -> exit 0.
#include <fcntl.h>
#include <glog/logging.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actor/actor.h"
#include "common/config/flags.h"
#include "common/config/run_config.h"
#include "common/metrics/metrics.h"
#include "common/net/auth.h"
#include "common/net/grpc_util.h"
#include "services/command_reporter.h"
#include "services/commands.h"
#include "services/load_config.h"

namespace rlvr::services {
namespace {

// Self-pipe: the handler only writes a byte (async-signal-safe); main waits
// on the read end. A second signal while shutting down exits at once.
int g_signal_pipe[2] = {-1, -1};
volatile sig_atomic_t g_signals = 0;

void OnSignal(int) {
  if (g_signals != 0) _exit(1);
  g_signals = 1;
  const char byte = 1;
  const int saved = errno;
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

std::string DefaultActorId() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return absl::StrCat(host[0] != '\0' ? host : "actor", ":", getpid());
}

}  // namespace

int ActorCommand(int argc, char** argv) {
  std::string learner;
  std::string config_path;
  std::vector<std::string> overrides;
  std::string actor_id;
  int threads = 0;
  int max_batch_prompts = 0;
  int metrics_port = 0;
  int health_port = 0;
  std::string listen_address = "0.0.0.0";
  std::string tls_ca, tls_cert, tls_key, auth_token_file;
  FlagSet flags("actor",
                "Runs one actor: connects to the learner's Session stream, fetches weights\n"
                "through WatchWeights, generates G completions per leased prompt with the\n"
                "continuous-batching engine (actor.engine), scores them with the task's\n"
                "verifier and streams each group back as it finishes. Stateless: kill it at\n"
                "any time. SIGTERM drains (NOT_SERVING, finish or abandon the groups in\n"
                "progress within actor.shutdown_deadline_s, return unfinished leases, close\n"
                "the stream) and exits 0.");
  flags.String("learner", &learner, "Learner rank 0 gRPC address, host:port (required).");
  flags.String("config", &config_path,
               "Run config YAML (model, task and actor sections must match the learner's).");
  flags.StringList("set", &overrides,
                   "Override a config key: --set actor.max_batch_prompts=8 "
                   "(repeatable).");
  flags.String("actor_id", &actor_id, "Actor name in the learner's logs; default hostname:pid.");
  flags.Int("threads", &threads, "Intra-op threads of the model; 0 = actor.threads from config.");
  flags.Int("max_batch_prompts", &max_batch_prompts,
            "Leases held at once (capacity); 0 = actor.max_batch_prompts.");
  flags.Int("metrics_port", &metrics_port,
            "Prometheus /metrics port; 0 picks a free port (printed), -1 disables.");
  flags.Int("health_port", &health_port,
            "grpc.health.v1 port; 0 picks a free port (printed), -1 disables.");
  flags.String("listen_address", &listen_address,
               "Address the metrics and health ports bind to (127.0.0.1 for local only).");
  flags.String("tls_ca", &tls_ca, "PEM CA that verifies the learner; empty = plaintext.");
  flags.String("tls_cert", &tls_cert, "PEM client certificate for mutual TLS (optional).");
  flags.String("tls_key", &tls_key, "PEM private key of --tls_cert.");
  flags.String("auth_token_file", &auth_token_file,
               "File with the learner's bearer token; empty = none.");
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;
  const CommandReporter command("actor");
  if (learner.empty()) return command.Fail("--learner is required (host:port)", 2);

  absl::StatusOr<RunConfig> config = LoadCommandConfig(config_path, overrides);
  if (!config.ok()) return command.Fail(config.status(), 2);
  auto credentials = MakeChannelCredentials(tls_ca, tls_cert, tls_key);
  if (!credentials.ok()) return command.Fail(credentials.status(), 2);
  auto token = LoadToken(auth_token_file);
  if (!token.ok()) return command.Fail(token.status(), 2);

  actor::ActorOptions options;
  options.learner_address = learner;
  options.credentials = *credentials;
  options.auth_token = *token;
  options.actor_id = actor_id.empty() ? DefaultActorId() : actor_id;
  options.model = config->model;
  options.task = config->task;
  options.actor = config->actor;
  if (threads > 0) options.actor.threads = threads;
  if (max_batch_prompts > 0) options.actor.max_batch_prompts = max_batch_prompts;
  options.health_address = health_port < 0 ? "" : absl::StrCat(listen_address, ":", health_port);

  auto registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<MetricsServer> metrics;
  if (metrics_port >= 0) {
    MetricsServerOptions metrics_options;
    metrics_options.bind_address = listen_address;
    metrics_options.port = metrics_port;
    auto started = MetricsServer::Start(metrics_options, registry);
    if (!started.ok()) return command.Fail(started.status(), 2);
    metrics = std::move(*started);
    std::printf("actor metrics on port %d\n", metrics->port());
  }

  if (pipe2(g_signal_pipe, O_CLOEXEC) != 0) return command.Fail("pipe2 failed", 2);
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);

  auto actor = actor::Actor::Create(options, registry);
  if (!actor.ok()) return command.Fail(actor.status(), 2);
  if (absl::Status s = (*actor)->Start(); !s.ok()) return command.Fail(s, 2);
  if ((*actor)->health_port() > 0) {
    std::printf("actor health on port %d\n", (*actor)->health_port());
  }
  std::printf("actor %s started; learner %s\n", options.actor_id.c_str(), learner.c_str());
  std::fflush(stdout);

  // Wait for SIGTERM/SIGINT.
  pollfd pfd{g_signal_pipe[0], POLLIN, 0};
  while (poll(&pfd, 1, -1) < 0 && errno == EINTR) {
  }
  LOG(INFO) << "actor: signal received, draining";
  const bool clean = (*actor)->Shutdown();
  std::printf("actor stopped%s\n", clean ? "" : " (generation batch abandoned)");
  std::fflush(stdout);
  google::FlushLogFiles(google::GLOG_INFO);
  if (!clean) {
    // A thread is still inside a long Generate call; its leases were already
    // returned and the session closed, so leave without waiting for it.
    _exit(0);
  }
  actor->reset();
  return 0;
}

}  // namespace rlvr::services
