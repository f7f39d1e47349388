#include "services/runner/report.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rlvr::runner {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The value of the first of `keys` present as a number, else NaN.
double Field(const nlohmann::json& j, std::initializer_list<const char*> keys) {
  for (const char* key : keys) {
    auto it = j.find(key);
    if (it != j.end() && it->is_number()) return it->get<double>();
  }
  return kNaN;
}

// The numbers of the object at `key` ({"reason": count, ...}); empty if absent.
void CountsByReason(const nlohmann::json& j, const char* key, std::map<std::string, double>* out) {
  out->clear();
  if (auto it = j.find(key); it != j.end() && it->is_object()) {
    for (const auto& [reason, n] : it->items()) {
      if (n.is_number()) (*out)[reason] = n.get<double>();
    }
  }
}

bool ParseRecord(const std::string& line, UpdateRecord* r) {
  nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return false;
  r->step = Field(j, {"step"});
  r->version = Field(j, {"version", "policy_version"});
  r->reward = Field(j, {"reward_mean", "reward"});
  r->accuracy = Field(j, {"accuracy"});
  r->entropy = Field(j, {"entropy"});
  r->cancellation_residual = Field(j, {"cancellation_residual"});
  r->tokens = Field(j, {"tokens", "tokens_trained"});
  r->step_seconds = Field(j, {"step_seconds"});
  r->staleness = Field(j, {"staleness_mean", "staleness"});
  r->heldout_accuracy = Field(j, {"heldout_accuracy"});
  r->time = Field(j, {"time", "unix_time", "timestamp"});
  r->groups_accepted = Field(j, {"groups_accepted"});
  r->leases_revoked = Field(j, {"leases_revoked"});
  CountsByReason(j, "groups_dropped", &r->groups_dropped);
  CountsByReason(j, "groups_rejected", &r->groups_rejected);
  return !std::isnan(r->step);
}

std::string Duration(double s) {
  if (!std::isfinite(s) || s < 0) return "?";
  int t = static_cast<int>(s + 0.5);
  if (t >= 3600) return absl::StrFormat("%dh%02dm", t / 3600, (t % 3600) / 60);
  if (t >= 60) return absl::StrFormat("%dm%02ds", t / 60, t % 60);
  return absl::StrFormat("%ds", t);
}

}  // namespace

std::vector<UpdateRecord> MetricsTail::ReadNew() {
  std::vector<UpdateRecord> out;
  std::ifstream in(path_);
  if (!in) return out;
  in.seekg(offset_);
  std::string line;
  while (true) {
    std::streampos start = in.tellg();
    if (!std::getline(in, line)) break;
    if (in.eof()) {
      // No newline yet: the writer is mid-line; read it next time.
      offset_ = static_cast<long>(start);
      return out;
    }
    offset_ = static_cast<long>(in.tellg());
    UpdateRecord r;
    if (ParseRecord(line, &r)) out.push_back(r);
  }
  return out;
}

absl::Status ReadAllMetrics(const std::string& path, std::vector<UpdateRecord>* out) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open '", path, "'"));
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    UpdateRecord r;
    if (!ParseRecord(line, &r)) {
      return absl::DataLossError(absl::StrCat(path, ":", n, ": not a metrics record"));
    }
    out->push_back(r);
  }
  return absl::OkStatus();
}

std::string ProgressLine(const std::vector<UpdateRecord>& history, int total_updates,
                         double elapsed_s) {
  if (history.empty())
    return absl::StrFormat("waiting for the first update (%s)", Duration(elapsed_s));
  const UpdateRecord& last = history.back();
  double heldout = kNaN;
  for (auto it = history.rbegin(); it != history.rend(); ++it) {
    if (!std::isnan(it->heldout_accuracy) && it->heldout_accuracy >= 0) {
      heldout = it->heldout_accuracy;
      break;
    }
  }
  // Throughput over the last (up to) 5 updates, by wall clock.
  size_t first = history.size() > 5 ? history.size() - 5 : 0;
  double tokens = 0;
  for (size_t i = first + 1; i < history.size(); ++i) tokens += history[i].tokens;
  double span = history.back().time - history[first].time;
  double tps = span > 0 ? tokens / span : kNaN;
  double per_update =
      history.size() > 1 ? (last.time - history.front().time) / (history.size() - 1) : kNaN;
  double eta = per_update * std::max(0.0, total_updates - last.step);
  std::string held = std::isnan(heldout) ? "-" : absl::StrFormat("%.1f%%", 100 * heldout);
  std::string tp = std::isnan(tps) ? "-" : absl::StrFormat("%.0f tok/s", tps);
  return absl::StrFormat("step %d/%d  v%d  reward %.3f  heldout %s  %s  lag %.2f  ETA %s",
                         static_cast<int>(last.step), total_updates, static_cast<int>(last.version),
                         last.reward, held, tp, std::isnan(last.staleness) ? 0.0 : last.staleness,
                         Duration(eta));
}

absl::Status WritePlot(const std::vector<UpdateRecord>& history, const std::string& dir) {
  std::string data = dir + "/plot.dat";
  {
    std::ofstream out(data);
    out << "# step reward heldout_accuracy entropy cancellation_residual\n";
    for (const auto& r : history) {
      auto v = [](double x) {
        return std::isnan(x) || x < -0.5 ? std::string("NaN") : absl::StrCat(x);
      };
      out << r.step << " " << v(r.reward) << " " << v(r.heldout_accuracy) << " " << v(r.entropy)
          << " " << v(r.cancellation_residual) << "\n";
    }
  }
  std::string script = dir + "/plot.gp";
  {
    std::ofstream gp(script);
    gp << "set terminal pngcairo size 1200,800 noenhanced\n"
       << "set output '" << dir << "/plot.png'\n"
       << "set datafile missing 'NaN'\n"
       << "set multiplot layout 2,2 title 'rlvr run'\n"
       << "set xlabel 'update'\nset grid\n"
       << "set title 'reward (train rollouts)'\nplot '" << data
       << "' using 1:2 with lines lw 2 notitle\n"
       << "set title 'held-out greedy accuracy'\nset yrange [0:1]\nplot '" << data
       << "' using 1:3 with linespoints pt 7 lw 2 notitle\nset autoscale y\n"
       << "set title 'token entropy (nats)'\nplot '" << data
       << "' using 1:4 with lines lw 2 notitle\n"
       << "set title 'cancellation residual'\nplot '" << data
       << "' using 1:5 with lines lw 2 notitle\n"
       << "unset multiplot\n";
  }
  std::string cmd = absl::StrCat("gnuplot '", script, "' > '", dir, "/plot.log' 2>&1");
  int rc = std::system(cmd.c_str());
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("gnuplot failed (", rc, "); see ", dir, "/plot.log"));
  }
  return absl::OkStatus();
}

}  // namespace rlvr::runner
