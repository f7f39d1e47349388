// RunLearner: the `rlvr learner` process, one data-parallel rank.
//
// Rank 0 serves SessionService, WeightService, StatusService, grpc.health.v1
// and reflection on `address`, owns the ingest (dataset cursor, leases,
// rollout buffer) and the weight publisher, and drives the Trainer. Ranks > 0
// only run the trainer loop, receiving each update from rank 0.
//
// Rank 0's loop: publish the resumed (or base) weights as a version, then
// repeat until config.run.total_updates updates are done or `stop_requested` returns
// true: wait for groups_per_update groups -> Trainer::RunUpdate -> publish
// the new version -> metrics, metrics.jsonl and ledger lines -> held-out
// eval every eval.every updates (eval.prompts) and at the last update
// (eval.final_prompts; 0 = none) -> checkpoint every learner.checkpoint_every.
// On stop: health NOT_SERVING, no new leases, the running update finishes,
// a final checkpoint is written, ranks > 0 are told to stop, and RunLearner
// returns OK.
//
// Thread safety: call once per process; blocks until the run ends.
#ifndef RLVR_LEARNER_LEARNER_H_
#define RLVR_LEARNER_LEARNER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "common/config/run_config.h"
#include "prometheus/registry.h"

namespace rlvr::learner {

struct LearnerOptions {
  RunConfig config;  // The resolved run config.
  // gRPC listen address of rank 0; port 0 picks a free port.
  std::string address = "127.0.0.1:0";
  // If set, rank 0 writes the bound gRPC port here (atomically) once serving.
  std::string port_file;
  // Prometheus /metrics port; 0 picks a free one, < 0 disables.
  int metrics_port = -1;
  std::string metrics_bind = "127.0.0.1";  // Metrics bind address.
  // Checkpoints go to <run_dir>/checkpoints; "" disables checkpoints.
  std::string run_dir;
  std::string metrics_jsonl;  // One JSON line per update; "" = none.
  // One JSON line per trained group {prompt_index, lease_id, version, step,
  // epoch, position, prompt_id}; "" = none. Appended to across resumes;
  // at start, lines of steps after the resumed checkpoint are dropped
  // (learner/ledger.h).
  std::string ledger_path;
  // Base weight blob; "" = random init, or model.hf_path's weights.
  std::string base_weights;
  int rank = 0;                           // Data-parallel rank.
  int world_size = 1;                     // Data-parallel world size.
  std::string master_addr = "127.0.0.1";  // Rendezvous host (rank 0).
  int master_port = 0;                    // Rendezvous port; required if world_size > 1.
  std::string backend = "auto";           // Communicator backend.
  // TLS for rank 0's server: PEM paths; empty cert/key = plaintext; a client
  // CA requires client certificates (mutual TLS).
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;
  std::string auth_token;  // Bearer token required of callers; "" = none.
  // Rank 0 writes how far a held-out evaluation is here ("DONE TOTAL WHAT",
  // common/base/progress_file.h; `rlvr run` shows it); "" = none.
  std::string progress_file;
  // Polled (often) by rank 0; true starts the graceful stop. May be empty.
  std::function<bool()> stop_requested;
};

// Runs the learner until done. Errors: bad config or task, trainer creation
// (rendezvous) failure, server start failure, a failed update or checkpoint.
// `registry` may be null (a private one is made).
absl::Status RunLearner(const LearnerOptions& options,
                        std::shared_ptr<prometheus::Registry> registry = nullptr);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_LEARNER_H_
