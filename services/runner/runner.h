// The embedded default job: `rlvr run`.
//
// Starts, as child processes of the same binary on 127.0.0.1, the learner
// rank(s) and N actors; pretrains the base policy first when its weight file
// is missing (never for a Hugging Face model, model.hf_path: its own weights
// are the base); shows live progress; restarts crashed actors; stops everything
// on Ctrl-C/SIGTERM (the learner writes a final checkpoint); and at the end
// writes summary.json and plot.png into the run directory.
//
// Run directory runs/<name>/: config.yaml (resolved), logs/*.log,
// metrics.jsonl, ledger.jsonl, checkpoints/, base_eval.json, summary.json,
// plot.png. Invoking it again on the same run directory resumes from the
// learner's latest checkpoint.
#ifndef RLVR_SERVICES_RUNNER_RUNNER_H_
#define RLVR_SERVICES_RUNNER_RUNNER_H_

#include <atomic>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/run_config.h"

namespace rlvr::runner {

struct RunnerOptions {
  // The run's configuration (already loaded and validated).
  RunConfig config;
  // Path of the `rlvr` executable to start children from.
  std::string binary;
  // Print a live progress line (false: one line per update, for logs/tests).
  bool live_progress = true;
  // An actor that crashes is restarted at most this many times in all.
  int max_actor_restarts = 20;
  // Seconds the learner gets to checkpoint and exit after SIGTERM.
  double learner_stop_timeout_s = 120.0;
  // Seconds to wait for the learner's port file before giving up.
  double learner_start_timeout_s = 120.0;
  // Set from a signal handler to ask for a clean stop (not owned).
  const std::atomic<bool>* stop_requested = nullptr;
};

struct RunSummary {
  std::string run_dir;
  bool completed = false;              // Reached run.total_updates.
  bool interrupted = false;            // Stopped by a signal (checkpoint written).
  int updates = 0;                     // Learner updates at the end.
  double base_heldout_accuracy = -1;   // Greedy, before RL.
  double final_heldout_accuracy = -1;  // Greedy, at the end.
  double wall_seconds = 0;
  int actor_restarts = 0;
};

// Runs the job described by options. Errors: a child that cannot start, the
// learner (or pretraining) failing, too many actor crashes. The summary is
// also written to <run_dir>/summary.json.
absl::StatusOr<RunSummary> RunEmbedded(const RunnerOptions& options);

}  // namespace rlvr::runner

#endif  // RLVR_SERVICES_RUNNER_RUNNER_H_
