#include "services/runner/runner.h"

#include <glog/logging.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/base/progress_file.h"
#include "common/base/status_macros.h"
#include "services/runner/cpu_list.h"
#include "services/runner/process.h"
#include "services/runner/report.h"

namespace rlvr::runner {
namespace {

namespace fs = std::filesystem;
double SecondsSince(absl::Time t) { return absl::ToDoubleSeconds(absl::Now() - t); }

// A free TCP port on 127.0.0.1 (for the c10d rendezvous of several ranks).
absl::StatusOr<int> FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    return absl::UnavailableError("cannot bind a loopback port");
  }
  int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

absl::StatusOr<double> ReadEvalAccuracy(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("greedy_accuracy")) {
    return absl::DataLossError(absl::StrCat(path, ": no greedy_accuracy"));
  }
  return j["greedy_accuracy"].get<double>();
}

// Runs a child to completion (pretrain, eval); a failure carries its log tail.
// `poll` (may be empty) is called every 100 ms while it runs.
absl::Status RunToCompletion(const std::vector<std::string>& argv, const std::string& log,
                             const std::string& name, const std::atomic<bool>* stop,
                             const std::function<void()>& poll = nullptr) {
  ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn(argv, log, name));
  while (true) {
    if (poll) poll();
    if (auto code = child.Poll()) {
      if (*code == 0) return absl::OkStatus();
      return absl::InternalError(absl::StrCat(name, " failed (", DescribeExit(*code),
                                              "); last lines of ", log, ":\n", child.LogTail(15)));
    }
    if (stop != nullptr && stop->load()) {
      child.StopWithin(10, SIGTERM);
      return absl::CancelledError(absl::StrCat(name, " interrupted"));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

class Supervisor {
 public:
  Supervisor(const RunnerOptions& options, std::string run_dir)
      : options_(options), config_(options.config), run_dir_(std::move(run_dir)) {}

  absl::StatusOr<RunSummary> Run();

 private:
  bool StopRequested() const {
    return options_.stop_requested != nullptr && options_.stop_requested->load();
  }
  std::string Log(const std::string& name) const { return run_dir_ + "/logs/" + name + ".log"; }
  absl::Status PrepareBase();
  absl::Status StartLearners();
  absl::StatusOr<int> WaitForLearnerPort();
  absl::Status StartActor(int index);
  void StopAll(bool learner_first);
  // Adds a reaped child's usage to its role's totals ("learner" / "actors").
  void Account(const std::string& role, const ChildProcess& child);
  void Print(const std::string& line, bool transient);
  // Where the evaluating child (rlvr eval, learner rank 0) says how far it is.
  std::string ProgressPath() const { return run_dir_ + "/progress.txt"; }
  // "evaluating: base policy, greedy, held-out prompts 40/200 (12 s)", or "".
  std::string EvalProgress() const;
  // Shows EvalProgress() as the live line (every 0.5 s at most).
  void ShowChildProgress(absl::Time since);
  absl::Status Finish(RunSummary* summary, const std::vector<UpdateRecord>& history);

  const RunnerOptions& options_;
  const RunConfig& config_;
  std::string run_dir_;
  std::string config_path_;
  std::vector<ChildProcess> learners_;
  std::vector<std::optional<ChildProcess>> actors_;
  int learner_port_ = 0;
  int restarts_ = 0;
  std::vector<int> learner_cpus_;
  std::vector<int> actor_cpus_;
  struct RoleUsage {
    int processes = 0;
    double cpu_seconds = 0.0;
    double wall_seconds = 0.0;
  };
  std::map<std::string, RoleUsage> usage_;
  bool transient_shown_ = false;
  absl::Time last_child_progress_ = absl::InfinitePast();
  absl::Time last_child_progress_logged_ = absl::InfinitePast();
};

std::string Supervisor::EvalProgress() const {
  std::optional<Progress> p = ReadProgressFile(ProgressPath());
  if (!p) return "";
  return absl::StrFormat("evaluating: %s %d/%d", p->what, p->done, p->total);
}

void Supervisor::ShowChildProgress(absl::Time since) {
  if (absl::Now() - last_child_progress_ < absl::Milliseconds(500)) return;
  last_child_progress_ = absl::Now();
  const std::string line = EvalProgress();
  if (line.empty()) return;
  // Logs (no live line) get one every 10 s.
  if (!options_.live_progress && absl::Now() - last_child_progress_logged_ < absl::Seconds(10)) {
    return;
  }
  last_child_progress_logged_ = absl::Now();
  Print(absl::StrFormat("%s (%.0f s)", line, SecondsSince(since)), options_.live_progress);
}

void Supervisor::Print(const std::string& line, bool transient) {
  if (options_.live_progress && transient) {
    std::printf("\r\033[K%s", line.c_str());
    transient_shown_ = true;
  } else {
    if (transient_shown_) std::printf("\n");
    transient_shown_ = false;
    std::printf("%s\n", line.c_str());
  }
  std::fflush(stdout);
}

absl::Status Supervisor::PrepareBase() {
  // A Hugging Face model (model.hf_path) starts from its own weights: there
  // is nothing to pretrain, and the base evaluation evaluates those.
  const bool hf = !config_.model.hf_path.empty();
  if (hf && !fs::exists(fs::path(config_.model.hf_path) / "config.json")) {
    return absl::NotFoundError(
        absl::StrCat("model.hf_path ", config_.model.hf_path,
                     " has no config.json (configs/tiny-qwen3.yaml's model is made by "
                     "`bash scripts/make-tiny-qwen3`)"));
  }
  const std::string& base = config_.pretrain.checkpoint;
  if (!hf && !fs::exists(base)) {
    Print(absl::StrCat("pretraining the base policy -> ", base, " (log: ", Log("pretrain"), ")"),
          false);
    auto t0 = absl::Now();
    RETURN_IF_ERROR(RunToCompletion({options_.binary, "pretrain", "--config", config_path_},
                                    Log("pretrain"), "pretrain", options_.stop_requested));
    Print(absl::StrFormat("pretraining done in %.0f s", SecondsSince(t0)), false);
  }
  // The base policy's evaluation, sized by eval.base_prompts and
  // eval.base_pass_k (0 prompts: none).
  std::string base_eval = run_dir_ + "/base_eval.json";
  const int prompts = BaseEvalPrompts(config_.eval);
  const int k = BaseEvalPassK(config_.eval);
  if (!fs::exists(base_eval) && prompts > 0) {
    std::vector<std::string> argv = {options_.binary,
                                     "eval",
                                     "--config",
                                     config_path_,
                                     "--json",
                                     base_eval,
                                     "--prompts",
                                     absl::StrCat(prompts),
                                     "--k",
                                     absl::StrCat(k),
                                     "--progress_file",
                                     ProgressPath(),
                                     "--progress_label",
                                     "base policy"};
    if (!hf) argv.insert(argv.end(), {"--weights", base});
    Print(absl::StrCat("evaluating the base policy on ", prompts, " held-out prompts (greedy",
                       k > 0 ? absl::StrCat(" + pass@", k) : "",
                       "; eval.base_prompts, eval.base_pass_k)"),
          false);
    const absl::Time t0 = absl::Now();
    RETURN_IF_ERROR(RunToCompletion(argv, Log("base_eval"), "base eval", options_.stop_requested,
                                    [&] { ShowChildProgress(t0); }));
  } else if (prompts == 0) {
    Print("base policy not evaluated (eval.base_prompts: 0)", false);
  }
  return absl::OkStatus();
}

absl::Status Supervisor::StartLearners() {
  int world = config_.run.learner_ranks;
  int master_port = 0;
  if (world > 1) {
    ASSIGN_OR_RETURN(master_port, FreeLoopbackPort());
  }
  fs::remove(run_dir_ + "/learner.port");
  for (int rank = 0; rank < world; ++rank) {
    std::vector<std::string> argv = {
        options_.binary, "learner", "--config",         config_path_,   "--run_dir",
        run_dir_,        "--rank",  absl::StrCat(rank), "--world_size", absl::StrCat(world)};
    if (world > 1) {
      argv.insert(argv.end(),
                  {"--master_addr", "127.0.0.1", "--master_port", absl::StrCat(master_port)});
    }
    if (rank == 0) {
      argv.insert(argv.end(),
                  {"--address", "127.0.0.1:0", "--progress_file", ProgressPath(), "--port_file",
                   run_dir_ + "/learner.port", "--metrics_jsonl", run_dir_ + "/metrics.jsonl",
                   "--ledger", run_dir_ + "/ledger.jsonl", "--metrics_port", "0"});
    }
    std::string name = world > 1 ? absl::StrCat("learner-", rank) : "learner";
    ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Spawn(argv, Log(name), name, learner_cpus_));
    learners_.push_back(std::move(child));
  }
  return absl::OkStatus();
}

absl::StatusOr<int> Supervisor::WaitForLearnerPort() {
  auto t0 = absl::Now();
  std::string path = run_dir_ + "/learner.port";
  while (SecondsSince(t0) < options_.learner_start_timeout_s) {
    for (auto& l : learners_) {
      if (auto code = l.Poll()) {
        return absl::InternalError(absl::StrCat(l.name(), " exited during start-up (",
                                                DescribeExit(*code), "); last lines of ",
                                                l.log_path(), ":\n", l.LogTail(20)));
      }
    }
    std::ifstream in(path);
    int port = 0;
    if (in >> port && port > 0) return port;
    if (StopRequested()) return absl::CancelledError("interrupted during learner start-up");
    absl::SleepFor(absl::Milliseconds(100));
  }
  return absl::DeadlineExceededError(absl::StrCat("the learner did not report its port within ",
                                                  options_.learner_start_timeout_s, " s; see ",
                                                  Log("learner")));
}

absl::Status Supervisor::StartActor(int i) {
  std::string name = absl::StrCat("actor-", i);
  ASSIGN_OR_RETURN(ChildProcess child,
                   ChildProcess::Spawn(
                       {options_.binary, "actor", "--learner",
                        absl::StrCat("127.0.0.1:", learner_port_), "--config", config_path_,
                        "--actor_id", name, "--threads", absl::StrCat(config_.run.actor_threads)},
                       Log(name), name, actor_cpus_));
  if (actors_[i]) Account("actors", *actors_[i]);
  actors_[i] = std::move(child);
  return absl::OkStatus();
}

void Supervisor::StopAll(bool learner_first) {
  if (learner_first) {
    for (auto& l : learners_) l.Signal(SIGTERM);
    for (auto& l : learners_) l.StopWithin(options_.learner_stop_timeout_s, SIGTERM);
  }
  for (auto& a : actors_) {
    if (a) a->Signal(SIGTERM);
  }
  for (auto& a : actors_) {
    if (a) a->StopWithin(config_.actor.shutdown_deadline_s + 5, SIGTERM);
  }
  for (auto& l : learners_) l.StopWithin(options_.learner_stop_timeout_s, SIGTERM);
}

void Supervisor::Account(const std::string& role, const ChildProcess& child) {
  RoleUsage& u = usage_[role];
  u.processes += 1;
  u.cpu_seconds += child.usage().cpu_seconds;
  u.wall_seconds += child.usage().wall_seconds;
}

absl::Status Supervisor::Finish(RunSummary* summary, const std::vector<UpdateRecord>& history) {
  if (!history.empty()) summary->updates = static_cast<int>(history.back().step);
  if (auto base = ReadEvalAccuracy(run_dir_ + "/base_eval.json"); base.ok()) {
    summary->base_heldout_accuracy = *base;
  }
  for (auto it = history.rbegin(); it != history.rend(); ++it) {
    if (!std::isnan(it->heldout_accuracy) && it->heldout_accuracy >= 0) {
      summary->final_heldout_accuracy = it->heldout_accuracy;
      break;
    }
  }
  summary->completed = summary->updates >= config_.run.total_updates;
  summary->actor_restarts = restarts_;

  nlohmann::json j;
  j["run_dir"] = run_dir_;
  j["estimator"] = config_.loss.estimator;
  j["completed"] = summary->completed;
  j["interrupted"] = summary->interrupted;
  j["updates"] = summary->updates;
  j["total_updates"] = config_.run.total_updates;
  j["base_heldout_accuracy"] = summary->base_heldout_accuracy;
  j["final_heldout_accuracy"] = summary->final_heldout_accuracy;
  j["wall_seconds"] = summary->wall_seconds;
  j["actor_restarts"] = restarts_;
  if (!history.empty()) {
    j["final_reward_mean"] = history.back().reward;
    j["final_entropy"] = history.back().entropy;
    double cr = 0;
    int n = 0;
    for (const auto& r : history) {
      if (!std::isnan(r.cancellation_residual)) cr += r.cancellation_residual, ++n;
    }
    j["mean_cancellation_residual"] = n ? cr / n : 0.0;
  }
  // Waste totals over the updates of metrics.jsonl.
  double accepted = 0, revoked = 0;
  std::map<std::string, double> dropped, rejected;
  for (const auto& r : history) {
    if (!std::isnan(r.groups_accepted)) accepted += r.groups_accepted;
    if (!std::isnan(r.leases_revoked)) revoked += r.leases_revoked;
    for (const auto& [reason, n] : r.groups_dropped) dropped[reason] += n;
    for (const auto& [reason, n] : r.groups_rejected) rejected[reason] += n;
  }
  auto counts = [](const std::map<std::string, double>& by_reason) {
    nlohmann::json o = nlohmann::json::object();
    for (const auto& [reason, n] : by_reason) o[reason] = static_cast<int64_t>(n);
    return o;
  };
  j["groups_accepted"] = static_cast<int64_t>(accepted);
  j["groups_dropped"] = counts(dropped);
  j["groups_rejected"] = counts(rejected);
  j["leases_revoked"] = static_cast<int64_t>(revoked);
  // CPU use by role (every child is reaped by now; restarted actors count
  // each incarnation). busy = CPU seconds / process wall seconds: for a
  // single-threaded role pinned to one CPU, the fraction of time it computed.
  for (auto& l : learners_) Account("learner", l);
  for (auto& a : actors_) {
    if (a) Account("actors", *a);
  }
  j["processes"] = nlohmann::json::object();
  for (const auto& [role, u] : usage_) {
    j["processes"][role] = {
        {"count", u.processes},
        {"cpu_seconds", u.cpu_seconds},
        {"wall_seconds", u.wall_seconds},
        {"busy", u.wall_seconds > 0 ? u.cpu_seconds / u.wall_seconds : 0.0},
        {"cpus", FormatCpuList(role == "learner" ? learner_cpus_ : actor_cpus_)}};
  }
  std::ofstream(run_dir_ + "/summary.json") << j.dump(2) << "\n";

  if (!history.empty()) {
    if (absl::Status s = WritePlot(history, run_dir_); !s.ok()) {
      Print(absl::StrCat("warning: no plot: ", s.message()), false);
    }
  }
  auto pct = [](double x) {
    return x < 0 ? std::string("n/a") : absl::StrFormat("%.1f%%", 100 * x);
  };
  Print("", false);
  Print(absl::StrFormat(
            "run %s: %s after %d/%d updates in %.0f s", run_dir_,
            summary->interrupted ? "stopped" : (summary->completed ? "finished" : "ended"),
            summary->updates, config_.run.total_updates, summary->wall_seconds),
        false);
  Print(absl::StrCat("  held-out greedy accuracy: base ", pct(summary->base_heldout_accuracy),
                     " -> final ", pct(summary->final_heldout_accuracy)),
        false);
  Print(absl::StrCat("  files: ", run_dir_,
                     "/{summary.json, metrics.jsonl, plot.png, logs/, checkpoints/}"),
        false);
  return absl::OkStatus();
}

absl::StatusOr<RunSummary> Supervisor::Run() {
  auto t0 = absl::Now();
  RunSummary summary;
  summary.run_dir = run_dir_;
  const std::vector<int> allowed = AllowedCpus();
  ASSIGN_OR_RETURN(learner_cpus_,
                   ParseCpuListFor("run.learner_cpus", config_.run.learner_cpus, allowed));
  ASSIGN_OR_RETURN(actor_cpus_, ParseCpuListFor("run.actor_cpus", config_.run.actor_cpus, allowed));
  fs::create_directories(run_dir_ + "/logs");
  config_path_ = run_dir_ + "/config.yaml";
  std::ofstream(config_path_) << RunConfigToYaml(config_);
  Print(absl::StrCat("rlvr run: ", run_dir_, " (estimator ", config_.loss.estimator, ", ",
                     config_.run.num_actors, " actors, ", config_.run.learner_ranks,
                     " learner rank(s), ", config_.run.total_updates, " updates)"),
        false);

  fs::remove(ProgressPath());  // A killed child's.
  RETURN_IF_ERROR(PrepareBase());
  if (auto base = ReadEvalAccuracy(run_dir_ + "/base_eval.json"); base.ok()) {
    Print(absl::StrFormat("base policy held-out greedy accuracy: %.1f%%", 100 * *base), false);
  }
  RETURN_IF_ERROR(StartLearners());
  absl::StatusOr<int> port = WaitForLearnerPort();
  if (!port.ok()) {
    StopAll(true);
    return port.status();
  }
  learner_port_ = *port;
  actors_.resize(config_.run.num_actors);
  for (int i = 0; i < config_.run.num_actors; ++i) {
    if (absl::Status s = StartActor(i); !s.ok()) {
      StopAll(true);
      return s;
    }
  }
  Print(absl::StrCat("learner on 127.0.0.1:", learner_port_, ", ", config_.run.num_actors,
                     " actors started; logs in ", run_dir_, "/logs"),
        false);
  if (!learner_cpus_.empty() || !actor_cpus_.empty()) {
    auto where = [](const std::vector<int>& cpus) {
      return cpus.empty() ? std::string("not pinned") : "CPUs " + FormatCpuList(cpus);
    };
    Print(absl::StrCat("pinned: learner ", where(learner_cpus_), ", actors ", where(actor_cpus_)),
          false);
  }

  MetricsTail tail(run_dir_ + "/metrics.jsonl");
  std::vector<UpdateRecord> history;
  absl::Status failure;
  auto last_print = absl::Now();
  size_t printed = 0;
  while (true) {
    if (StopRequested()) {
      Print("stopping: asking the learner to checkpoint and exit", false);
      summary.interrupted = true;
      StopAll(true);
      break;
    }
    ChildProcess& rank0 = learners_.front();
    if (auto code = rank0.Poll()) {
      if (*code != 0) {
        failure = absl::InternalError(absl::StrCat("the learner failed (", DescribeExit(*code),
                                                   "); last lines of ", rank0.log_path(), ":\n",
                                                   rank0.LogTail(25)));
      }
      StopAll(false);
      break;
    }
    for (size_t r = 1; r < learners_.size(); ++r) {
      if (auto code = learners_[r].Poll(); code && *code != 0) {
        failure =
            absl::InternalError(absl::StrCat(learners_[r].name(), " failed (", DescribeExit(*code),
                                             "):\n", learners_[r].LogTail(25)));
      }
    }
    if (!failure.ok()) {
      StopAll(true);
      break;
    }
    for (int i = 0; i < static_cast<int>(actors_.size()); ++i) {
      if (!actors_[i]) continue;
      if (auto code = actors_[i]->Poll()) {
        Print(absl::StrCat(actors_[i]->name(), " exited (", DescribeExit(*code),
                           "); restarting it. Last lines of its log:\n", actors_[i]->LogTail(8)),
              false);
        if (++restarts_ > options_.max_actor_restarts) {
          failure = absl::InternalError(absl::StrCat(
              "actors crashed ", restarts_, " times; giving up (see ", run_dir_, "/logs)"));
          break;
        }
        if (absl::Status s = StartActor(i); !s.ok()) {
          failure = s;
          break;
        }
      }
    }
    if (!failure.ok()) {
      StopAll(true);
      break;
    }
    for (auto& r : tail.ReadNew()) history.push_back(r);
    // While rank 0 evaluates held-out prompts (eval.every, the last
    // update), the line says so and how far it is.
    if (options_.live_progress) {
      if (SecondsSince(last_print) > 0.5) {
        std::string line = ProgressLine(history, config_.run.total_updates, SecondsSince(t0));
        if (const std::string eval = EvalProgress(); !eval.empty()) line += "  | " + eval;
        Print(line, true);
        last_print = absl::Now();
      }
    } else if (history.size() > printed) {
      printed = history.size();
      Print(ProgressLine(history, config_.run.total_updates, SecondsSince(t0)), false);
    } else {
      ShowChildProgress(t0);
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  for (auto& r : tail.ReadNew()) history.push_back(r);
  summary.wall_seconds = SecondsSince(t0);
  RETURN_IF_ERROR(Finish(&summary, history));
  if (!failure.ok()) return failure;
  return summary;
}

}  // namespace

absl::StatusOr<RunSummary> RunEmbedded(const RunnerOptions& options) {
  std::string run_dir = options.config.run.runs_dir + "/" + options.config.run.name;
  Supervisor supervisor(options, run_dir);
  return supervisor.Run();
}

}  // namespace rlvr::runner
