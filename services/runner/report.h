// Reading a run's metrics.jsonl, the live progress line, summary.json and the
// plot. Torch-free, gRPC-free.
#ifndef RLVR_SERVICES_RUNNER_REPORT_H_
#define RLVR_SERVICES_RUNNER_REPORT_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace rlvr::runner {

// One line of metrics.jsonl (fields absent from a line are NaN).
struct UpdateRecord {
  double step = 0, version = 0, reward = 0, accuracy = 0, entropy = 0;
  double cancellation_residual = 0, tokens = 0, step_seconds = 0, staleness = 0;
  double heldout_accuracy = 0, time = 0;
  // Waste counts of the update (absent: NaN / empty): groups accepted since
  // the previous line, accepted groups not trained on by reason, groups
  // refused at the door by reason, leases revoked.
  double groups_accepted = 0, leases_revoked = 0;
  std::map<std::string, double> groups_dropped;
  std::map<std::string, double> groups_rejected;
};

// Follows a growing metrics.jsonl; tolerates a partially written last line.
class MetricsTail {
 public:
  explicit MetricsTail(std::string path) : path_(std::move(path)) {}
  // Records appended since the last call.
  std::vector<UpdateRecord> ReadNew();

 private:
  std::string path_;
  long offset_ = 0;
};

// Every record of a metrics.jsonl file; malformed lines are an error naming
// the line number.
absl::Status ReadAllMetrics(const std::string& path, std::vector<UpdateRecord>* out);

// "step 12/60  v13  reward 0.41  heldout 37.5%  1.2k tok/s  lag 0.4  ETA 3m10s".
std::string ProgressLine(const std::vector<UpdateRecord>& history, int total_updates,
                         double elapsed_s);

// Writes <dir>/plot.png (reward, held-out accuracy, entropy, cancellation
// residual against step) with gnuplot. Unavailable if gnuplot is missing.
absl::Status WritePlot(const std::vector<UpdateRecord>& history, const std::string& dir);

}  // namespace rlvr::runner

#endif  // RLVR_SERVICES_RUNNER_REPORT_H_
