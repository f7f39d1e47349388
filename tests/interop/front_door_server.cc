// rlvr_front_door_server: the learner's front door without a model, for
// clients on other gRPC implementations and for hostile-input measurements
// (tests/interop). It serves SessionService (a real Ingest: leases are
// granted and groups validated as by the learner), WeightService (one
// published version of --weight_bytes pseudo-random bytes), StatusService and
// grpc.health.v1, with the learner's server options (FrontDoorServerOptions
// of the default LearnerConfig: receive limit, keepalive and its enforcement
// policy, compression refused). A trainer thread consumes full updates and
// publishes a new version number, so leases keep coming.
//   rlvr_front_door_server --port_file F [--weight_bytes N] [--hello_timeout_s S]
//                          [--lease_timeout_s S] [--auth_token T]
//                          [--min_client_ping_interval_ms MS] [--accept_compressed]
//                          [--max_policy_lag 1] [--groups_per_update 4] [--update_ms 0]
//                          [--log_updates] [--max_sessions N] [--max_awaiting_hello N]
//                          [--max_awaiting_hello_per_peer N] [--stats_file F]
//                          [--glibc_defaults] [--trim_min_ended N] [--trim_quiet_s S]
//                          [--trim_min_interval_s S]
// Runs until SIGTERM/SIGINT. Like `rlvr learner`, it applies the learner's
// allocator policy (common/memory_policy.h) unless --glibc_defaults. With
// --stats_file, SIGUSR1 makes it write its memory figures and stream counts
// to F as one JSON object (written to F.tmp, then renamed); SIGUSR2 does the
// same after malloc_trim(0) (tests/interop/streams.js).
#include <grpcpp/health_check_service_interface.h>
#include <malloc.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "common/base/memory_policy.h"
#include "common/base/splitmix.h"
#include "common/config/flags.h"
#include "common/config/run_config.h"
#include "common/net/auth.h"
#include "common/net/grpc_util.h"
#include "learner/diagnostics/ingest_snapshot.h"
#include "learner/ingest.h"
#include "learner/learner_metrics.h"
#include "learner/session_service.h"
#include "learner/status_service.h"
#include "learner/weight_publisher.h"

namespace {
std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop = true; }
// 1: stats asked for (SIGUSR1); 2: trim, then stats (SIGUSR2).
std::atomic<int> g_stats{0};
void OnStats(int sig) { g_stats = sig == SIGUSR2 ? 2 : 1; }

// A field of /proc/self/status ("VmRSS", in kB; "Threads"), or -1.
long ProcStatus(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

void WriteStats(const std::string& path, bool trim, int live_streams, int awaiting_hello,
                int open_sessions, int watchers, int releases) {
  long trim_us = -1;
  if (trim) {
    const auto t0 = std::chrono::steady_clock::now();
    malloc_trim(0);
    trim_us = static_cast<long>(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count());
  }
  const struct mallinfo2 mi = mallinfo2();
  std::ofstream out(path + ".tmp");
  out << "{\"rss_kb\":" << ProcStatus("VmRSS") << ",\"hwm_kb\":" << ProcStatus("VmHWM")
      << ",\"threads\":" << ProcStatus("Threads") << ",\"live_streams\":" << live_streams
      << ",\"awaiting_hello\":" << awaiting_hello << ",\"open_sessions\":" << open_sessions
      << ",\"watchers\":" << watchers << ",\"releases\":" << releases << ",\"trim_us\":" << trim_us
      << ",\"malloc\":{\"in_use_kb\":" << (mi.uordblks + mi.hblkhd) / 1024
      << ",\"free_kb\":" << mi.fordblks / 1024 << ",\"mmapped_kb\":" << mi.hblkhd / 1024
      << ",\"heap_kb\":" << mi.arena / 1024 << ",\"top_pad_kb\":" << mi.keepcost / 1024 << "}}\n";
  out.close();
  std::rename((path + ".tmp").c_str(), path.c_str());
}
}  // namespace

int main(int argc, char** argv) {
  std::string port_file;
  int64_t weight_bytes = 1 << 20;
  double hello_timeout_s = rlvr::LearnerConfig().hello_timeout_s;
  double lease_timeout_s = 60.0;
  std::string auth_token;
  // Measurement aids: the server as it was before issue 19 in one respect.
  int min_client_ping_interval_ms = rlvr::GrpcServerOptions().min_client_ping_interval_ms;
  bool accept_compressed = false;
  int max_policy_lag = 1;
  int groups_per_update = 4;
  int update_ms = 0;
  bool log_updates = false;
  int max_sessions = rlvr::LearnerConfig().max_sessions;
  int max_awaiting_hello = rlvr::LearnerConfig().max_awaiting_hello;
  int max_awaiting_hello_per_peer = rlvr::LearnerConfig().max_awaiting_hello_per_peer;
  std::string stats_file;
  bool glibc_defaults = false;
  rlvr::BurstTrimSchedule::Options trim;
  double trim_quiet_s = absl::ToDoubleSeconds(trim.quiet);
  double trim_min_interval_s = absl::ToDoubleSeconds(trim.min_interval);
  rlvr::FlagSet flags("front_door_server", "The learner's gRPC front door without a model.");
  flags.String("port_file", &port_file, "Write the bound port here.");
  flags.Int64("weight_bytes", &weight_bytes, "Size of the published weight version.");
  flags.Double("hello_timeout_s", &hello_timeout_s, "Hello deadline, s.");
  flags.Double("lease_timeout_s", &lease_timeout_s, "Lease deadline, s.");
  flags.String("auth_token", &auth_token, "Bearer token required; empty = none.");
  flags.Int("min_client_ping_interval_ms", &min_client_ping_interval_ms,
            "Keepalive enforcement (measurement aid: 300000 is gRPC's default policy).");
  flags.Int("max_policy_lag", &max_policy_lag, "0 = synchronous mode.");
  flags.Int("groups_per_update", &groups_per_update, "Groups per update.");
  flags.Int("update_ms", &update_ms, "Simulated training time per update, ms.");
  flags.Bool("log_updates", &log_updates, "Print 'update V T_MS' per update.");
  flags.Bool("accept_compressed", &accept_compressed,
             "Enable gzip/deflate (measurement aid: the server before issue 19).");
  flags.Int("max_sessions", &max_sessions, "Sessions that said Hello (learner.max_sessions).");
  flags.Int("max_awaiting_hello", &max_awaiting_hello,
            "Streams awaiting Hello, in all (learner.max_awaiting_hello).");
  flags.Int("max_awaiting_hello_per_peer", &max_awaiting_hello_per_peer,
            "Streams awaiting Hello per peer address (learner.max_awaiting_hello_per_peer).");
  flags.String("stats_file", &stats_file, "SIGUSR1/SIGUSR2 write memory figures here.");
  flags.Bool("glibc_defaults", &glibc_defaults,
             "Leave glibc's allocator defaults (measurement aid: no memory policy).");
  flags.Int("trim_min_ended", &trim.min_ended,
            "Return freed memory after this many streams ended; 0 = never.");
  flags.Double("trim_quiet_s", &trim_quiet_s, "... once no stream ended for this long, s.");
  flags.Double("trim_min_interval_s", &trim_min_interval_s, "... at most this often, s.");
  if (auto s = flags.Parse(argc - 1, argv + 1); !s.ok() || flags.help_requested()) {
    std::fprintf(stderr, "%s%s\n", std::string(s.message()).c_str(), flags.Usage().c_str());
    return s.ok() ? 0 : 2;
  }
  if (!glibc_defaults) rlvr::KeepFreedMemoryForReuse();  // As `rlvr learner`, before threads.
  signal(SIGTERM, OnSignal);
  signal(SIGINT, OnSignal);
  signal(SIGUSR1, OnStats);
  signal(SIGUSR2, OnStats);

  auto registry = std::make_shared<prometheus::Registry>();
  rlvr::learner::LearnerMetrics metrics(registry);
  const rlvr::LearnerConfig lc;
  rlvr::learner::IngestOptions o;
  o.group_size = 2;
  o.sampling.max_new_tokens = 4;
  o.max_policy_lag = max_policy_lag;
  o.buffer_groups = std::max(16, 2 * groups_per_update);
  o.groups_per_update = groups_per_update;
  o.lease_timeout_s = lease_timeout_s;
  o.max_message_bytes = lc.max_message_bytes;
  o.max_sessions = max_sessions;
  o.max_capacity = lc.max_session_capacity;
  o.lease_expiries_to_close = lc.lease_expiries_to_close;
  o.vocab_size = 16;
  o.eos_id = 2;
  std::vector<rlvr::learner::LeasePrompt> prompts;
  for (int i = 0; i < 64; ++i) prompts.push_back({"p" + std::to_string(i), {1, 5, 6}, "3"});
  rlvr::learner::Ingest ingest(o, prompts, &metrics);
  rlvr::TokenChecker checker(auth_token, registry.get(), "learner");
  const rlvr::TokenChecker* auth = checker.enabled() ? &checker : nullptr;
  rlvr::learner::SessionServiceOptions so;
  so.hello_timeout_s = hello_timeout_s;
  so.max_awaiting_hello = max_awaiting_hello;
  so.max_awaiting_hello_per_peer = max_awaiting_hello_per_peer;
  trim.quiet = absl::Seconds(trim_quiet_s);
  trim.min_interval = absl::Seconds(trim_min_interval_s);
  rlvr::MemoryReleaser releaser(trim);  // As the learner: both services report ended streams.
  so.memory_releaser = &releaser;
  rlvr::learner::SessionServiceImpl sessions(&ingest, auth, so);
  rlvr::learner::WeightPublisher publisher(&metrics, rlvr::learner::WeightPublisher::kMaxChunkBytes,
                                           auth, &releaser);
  rlvr::learner::StatusServiceImpl status(
      [&] {
        rlvr::v1::LearnerStatus s;
        rlvr::learner::IngestToStatus(ingest.Snapshot(), &s);
        return s;
      },
      auth);
  rlvr::GrpcServerOptions gso = rlvr::learner::FrontDoorServerOptions(lc);
  gso.min_client_ping_interval_ms = min_client_ping_interval_ms;
  gso.accept_compressed = accept_compressed;
  auto started = rlvr::StartGrpcServer(gso, {&sessions, &publisher, &status});
  if (!started.ok()) {
    std::fprintf(stderr, "front_door_server: %s\n",
                 std::string(started.status().message()).c_str());
    return 1;
  }
  ingest.Start();

  auto blob = std::make_shared<std::string>(static_cast<size_t>(weight_bytes), '\0');
  for (size_t i = 0; i + 8 <= blob->size(); i += 8) {
    const uint64_t v = rlvr::SplitMix64(i);
    std::memcpy(blob->data() + i, &v, 8);
  }
  uint64_t version = 1;
  publisher.Publish(version, blob);
  sessions.AnnounceWeights(version, blob->size());
  ingest.Publish(version);
  std::thread trainer([&] {
    while (!g_stop) {
      auto taken = ingest.WaitForUpdate([] { return g_stop.load(); });
      if (!taken.ok()) return;
      if (update_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(update_ms));
      ingest.CompleteUpdate(*taken);
      // Same blob: only the version number moves (the learner's order).
      sessions.AnnounceWeights(++version, blob->size());
      ingest.Publish(version);
      if (log_updates) {
        std::printf("update %llu %lld\n", static_cast<unsigned long long>(version),
                    static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count()));
        std::fflush(stdout);
      }
    }
  });
  if (!port_file.empty()) {
    std::ofstream(port_file + ".tmp") << started->port << "\n";
    std::rename((port_file + ".tmp").c_str(), port_file.c_str());
  }
  std::printf("front_door_server listening on port %d (weights %lld bytes)\n", started->port,
              static_cast<long long>(weight_bytes));
  std::fflush(stdout);
  while (!g_stop) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (const int asked = g_stats.exchange(0); asked != 0 && !stats_file.empty()) {
      WriteStats(stats_file, asked == 2, sessions.live_streams(), sessions.awaiting_hello(),
                 sessions.open_sessions(), publisher.watchers(), releaser.releases());
    }
  }
  publisher.Shutdown();
  ingest.Stop();
  trainer.join();
  started->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  for (const auto& family : registry->Collect()) {
    if (family.name != "rlvr_learner_call_refusals_total") continue;
    for (const auto& m : family.metric) {
      if (m.counter.value > 0) {
        std::printf("refusals{reason=%s} %.0f\n", m.label[0].value.c_str(), m.counter.value);
      }
    }
  }
  return 0;
}
