#include "learner/learner.h"

#include <ATen/Parallel.h>
#include <glog/logging.h>
#include <grpcpp/health_check_service_interface.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/base/file_io.h"
#include "common/base/memory_policy.h"
#include "common/base/progress_file.h"
#include "common/base/status_macros.h"
#include "common/metrics/metrics.h"
#include "common/metrics/phase.h"
#include "common/net/auth.h"
#include "common/net/grpc_util.h"
#include "common/policy/evaluate.h"
#include "common/policy/factory.h"
#include "common/policy/weights.h"
#include "common/tasks/task.h"
#include "common/tokenizer/tokenizer.h"
#include "learner/diagnostics/ingest_snapshot.h"
#include "learner/diagnostics/update_diagnostics.h"
#include "learner/ingest.h"
#include "learner/learner_metrics.h"
#include "learner/ledger.h"
#include "learner/session_service.h"
#include "learner/status_service.h"
#include "learner/trainer/trainer.h"
#include "learner/weight_publisher.h"

namespace rlvr::learner {
namespace {

double NowUnixSeconds() { return absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()); }

// Figures of the last update, shared with GetStatus.
struct UpdateFigures {
  uint64_t step = 0;
  uint64_t version = 0;
  uint64_t tokens_trained = 0;
  UpdateDiagnostics diag;
  double step_seconds = 0.0;
  double last_step_unix_s = 0.0;
  double heldout_accuracy = -1.0;
};

class RankZero {
 public:
  RankZero(const LearnerOptions& options, TrainerOptions trainer_options,
           std::shared_ptr<prometheus::Registry> registry, std::unique_ptr<Tokenizer> tokenizer,
           PhaseGauge* phase)
      : o_(options),
        cfg_(options.config),
        trainer_options_(std::move(trainer_options)),
        registry_(std::move(registry)),
        metrics_(registry_),
        tokenizer_(std::move(tokenizer)),
        phase_(phase) {}

  absl::Status Run();

 private:
  absl::Status Setup();
  absl::Status TrainLoop();
  absl::Status PublishCurrentVersion();
  absl::Status Checkpoint();
  // Greedy accuracy on the first `prompts` held-out prompts (-1 if none);
  // `what` names it in the progress file.
  absl::StatusOr<double> EvaluateHeldout(int prompts, const std::string& what);
  void RecordUpdate(const UpdateResult& r, const std::vector<TrainingGroup>& groups,
                    uint64_t version_before, double heldout);
  rlvr::v1::LearnerStatus Status();
  // The trainer counts versions from 0 (the base weights); the protocol needs
  // >= 1 once serving (0 means "no weights" to an actor), so every version
  // the learner publishes, and every version in groups, ledgers and
  // metrics.jsonl, is the trainer's version + 1.
  uint64_t PublishedVersion() const { return trainer_->version() + 1; }
  bool StopRequested() const { return o_.stop_requested && o_.stop_requested(); }

  const LearnerOptions& o_;
  const RunConfig& cfg_;
  TrainerOptions trainer_options_;
  std::shared_ptr<prometheus::Registry> registry_;
  LearnerMetrics metrics_;
  std::unique_ptr<Tokenizer> tokenizer_;
  PhaseGauge* const phase_;  // rlvr_learner_phase (RunLearner's).
  std::unique_ptr<Task> task_;
  std::unique_ptr<Trainer> trainer_;
  std::unique_ptr<TokenChecker> auth_;
  std::unique_ptr<Ingest> ingest_;
  // Returns freed memory to the OS after bursts of ended session and weight
  // streams (common/memory_policy.h); outlives both services.
  MemoryReleaser memory_releaser_;
  std::unique_ptr<WeightPublisher> publisher_;
  // The blobs of the two newest published versions. The publisher and the
  // streams sending a version share its blob; once only this holds the
  // older one, the next version is serialized into its memory (4.4x faster
  // than into fresh pages for a 135 MB model: 12.5 vs 54.6 ms, policy_bench
  // [install]). Costs one blob of memory beyond what the streams hold.
  std::shared_ptr<std::string> newest_blob_;
  std::shared_ptr<std::string> older_blob_;
  std::unique_ptr<SessionServiceImpl> sessions_;
  std::unique_ptr<StatusServiceImpl> status_service_;
  std::unique_ptr<grpc::Server> server_;  // Declared last: destroyed first.
  std::ofstream metrics_jsonl_;
  LedgerWriter ledger_;
  uint64_t last_checkpoint_step_ = 0;
  bool checkpointed_once_ = false;
  // Ingest totals at the previous metrics.jsonl line (per-update counts).
  IngestSnapshot counted_;

  absl::Mutex figures_mu_;
  UpdateFigures figures_ ABSL_GUARDED_BY(figures_mu_);
};

absl::Status RankZero::Setup() {
  TaskOptions task_options;
  task_options.max_prompt_tokens = MaxPromptTokens(cfg_);
  task_options.model_dir = cfg_.model.hf_path;
  ASSIGN_OR_RETURN(task_, MakeTask(cfg_.task, *tokenizer_, task_options));
  std::vector<LeasePrompt> prompts;
  prompts.reserve(task_->train().size());
  for (const Prompt& p : task_->train()) {
    ASSIGN_OR_RETURN(std::vector<int> tokens, EncodePrompt(*tokenizer_, p.text));
    prompts.push_back(LeasePrompt{p.id, std::move(tokens), p.answer});
  }
  if (prompts.empty()) return absl::InvalidArgumentError("the task has no training prompts");

  // The trainer records every update, the step and the world size into the
  // learner's UpdateMetrics (it registers no family of its own).
  phase_->Set("rendezvous");
  ASSIGN_OR_RETURN(trainer_, Trainer::Create(trainer_options_, &metrics_.update));
  phase_->Set("resuming");
  ASSIGN_OR_RETURN(std::string ingest_state, trainer_->Resume());

  IngestOptions io;
  io.group_size = cfg_.learner.group_size;
  io.sampling = cfg_.sampling;
  io.max_policy_lag = cfg_.learner.max_policy_lag;
  io.buffer_groups = cfg_.learner.buffer_groups;
  io.groups_per_update = cfg_.learner.groups_per_update;
  io.lease_timeout_s = cfg_.learner.lease_timeout_s;
  io.max_message_bytes = cfg_.learner.max_message_bytes;
  io.max_sessions = cfg_.learner.max_sessions;
  io.max_groups_per_s = cfg_.learner.max_groups_per_s;
  io.buffer_bytes = cfg_.learner.buffer_bytes;
  io.max_capacity = cfg_.learner.max_session_capacity;
  io.lease_expiries_to_close = cfg_.learner.lease_expiries_to_close;
  io.seed = static_cast<uint64_t>(cfg_.learner.seed);
  io.task_name = task_->name();
  io.vocab_size = trainer_options_.vocab_size;
  io.eos_id = tokenizer_->eos_id();
  io.stop_ids = task_->stop_ids();
  ingest_ = std::make_unique<Ingest>(io, std::move(prompts), &metrics_);
  if (!ingest_state.empty()) {
    RETURN_IF_ERROR(ingest_->RestoreState(ingest_state));
    LOG(INFO) << "resumed at step " << trainer_->step() << ", version " << trainer_->version();
    last_checkpoint_step_ = trainer_->step();
    checkpointed_once_ = true;
  }
  {
    absl::MutexLock l(&figures_mu_);
    figures_.step = trainer_->step();
    figures_.version = PublishedVersion();
  }

  auth_ = std::make_unique<TokenChecker>(o_.auth_token, registry_.get(), "learner");
  const TokenChecker* auth = auth_->enabled() ? auth_.get() : nullptr;
  publisher_ = std::make_unique<WeightPublisher>(&metrics_, WeightPublisher::kMaxChunkBytes, auth,
                                                 &memory_releaser_);
  SessionServiceOptions session_options;
  session_options.hello_timeout_s = cfg_.learner.hello_timeout_s;
  session_options.max_awaiting_hello = cfg_.learner.max_awaiting_hello;
  session_options.max_awaiting_hello_per_peer = cfg_.learner.max_awaiting_hello_per_peer;
  session_options.memory_releaser = &memory_releaser_;
  sessions_ = std::make_unique<SessionServiceImpl>(ingest_.get(), auth, session_options);
  status_service_ = std::make_unique<StatusServiceImpl>([this] { return Status(); }, auth);

  GrpcServerOptions so = FrontDoorServerOptions(cfg_.learner);
  so.address = o_.address;
  so.tls_cert_file = o_.tls_cert;
  so.tls_key_file = o_.tls_key;
  so.tls_client_ca_file = o_.tls_client_ca;
  ASSIGN_OR_RETURN(StartedServer started,
                   StartGrpcServer(so, {sessions_.get(), publisher_.get(), status_service_.get()}));
  server_ = std::move(started.server);
  server_->GetHealthCheckService()->SetServingStatus(false);
  ingest_->Start();

  RETURN_IF_ERROR(PublishCurrentVersion());
  server_->GetHealthCheckService()->SetServingStatus(true);
  phase_->Set("training");
  LOG(INFO) << "learner rank 0 serving on port " << started.port << " (version "
            << PublishedVersion() << ", world size " << o_.world_size << ")";
  std::printf("learner listening on port %d\n", started.port);
  std::fflush(stdout);
  if (!o_.port_file.empty()) {
    RETURN_IF_ERROR(WriteFileAtomically(o_.port_file, absl::StrCat(started.port, "\n")));
  }
  if (!o_.metrics_jsonl.empty()) {
    // Same rule as the ledger below: lines of steps after the resumed one
    // describe rolled-back updates that will be redone.
    ASSIGN_OR_RETURN(LedgerTruncation t, TruncateLedger(o_.metrics_jsonl, trainer_->step()));
    if (t.dropped > 0 || t.malformed > 0) {
      LOG(WARNING) << "metrics.jsonl rewritten at resume step " << trainer_->step() << ": dropped "
                   << t.dropped << " lines of rolled-back steps and " << t.malformed
                   << " torn/malformed";
    }
    metrics_jsonl_.open(o_.metrics_jsonl, std::ios::app);
    if (!metrics_jsonl_) return absl::InternalError(absl::StrCat("cannot open ", o_.metrics_jsonl));
  }
  if (!o_.ledger_path.empty()) {
    // The model is at trainer_->step() (the checkpoint, or the base weights at
    // 0): ledger lines of later steps describe updates a SIGKILL rolled back,
    // which will be redone. Drop them (and a torn last line) before appending.
    ASSIGN_OR_RETURN(LedgerTruncation t, TruncateLedger(o_.ledger_path, trainer_->step()));
    if (t.dropped > 0 || t.malformed > 0) {
      LOG(WARNING) << "ledger rewritten at resume step " << trainer_->step() << ": kept " << t.kept
                   << " lines, dropped " << t.dropped << " of rolled-back steps and " << t.malformed
                   << " torn/malformed";
    }
    RETURN_IF_ERROR(ledger_.Open(o_.ledger_path));
  }
  return absl::OkStatus();
}

absl::Status RankZero::PublishCurrentVersion() {
  const absl::Time t0 = absl::Now();
  const uint64_t version = PublishedVersion();
  // Only this holds the older blob when its count is 1, and no one can take
  // a new reference to it from anyone else.
  std::shared_ptr<std::string> blob =
      older_blob_.use_count() == 1 ? std::move(older_blob_) : std::make_shared<std::string>();
  // The chunks' CRCs are computed as the blob is written, not during the
  // transfer to the actors.
  std::vector<uint32_t> chunk_crcs;
  try {
    policy::SerializeWeightsInto(trainer_->model(), version, blob.get(), publisher_->chunk_bytes(),
                                 &chunk_crcs);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("serializing weights: ", e.what()));
  }
  older_blob_ = std::move(newest_blob_);
  newest_blob_ = blob;
  publisher_->Publish(version, blob, std::move(chunk_crcs));
  sessions_->AnnounceWeights(version, blob->size());
  ingest_->Publish(version);
  metrics_.policy_version->Set(static_cast<double>(version));
  metrics_.weight_publish_seconds->Observe(absl::ToDoubleSeconds(absl::Now() - t0));
  return absl::OkStatus();
}

absl::Status RankZero::Checkpoint() {
  if (trainer_options_.checkpoint_dir.empty()) return absl::OkStatus();
  // The ledger lines of every step up to this one reach the disk before the
  // checkpoint that makes those steps permanent (see learner/ledger.h).
  RETURN_IF_ERROR(ledger_.Sync());
  RETURN_IF_ERROR(trainer_->SaveCheckpoint(ingest_->SerializeState()));
  last_checkpoint_step_ = trainer_->step();
  checkpointed_once_ = true;
  LOG(INFO) << "checkpoint at step " << trainer_->step();
  return absl::OkStatus();
}

absl::StatusOr<double> RankZero::EvaluateHeldout(int prompts, const std::string& what) {
  const auto& heldout = task_->heldout();
  const size_t n = std::min<size_t>(heldout.size(), std::max(0, prompts));
  if (n == 0) return -1.0;
  std::vector<Prompt> subset(heldout.begin(), heldout.begin() + n);
  ProgressFile progress(o_.progress_file);
  const absl::Time t0 = absl::Now();
  ASSIGN_OR_RETURN(policy::EvalResult r,
                   policy::Evaluate(trainer_->model(), *tokenizer_, *task_, subset, /*k=*/0,
                                    cfg_.eval.pass_temperature, cfg_.sampling.max_new_tokens,
                                    static_cast<uint64_t>(cfg_.learner.seed),
                                    [&](const policy::EvalProgress& p) {
                                      progress.Update(
                                          absl::StrCat(what, ", ", p.pass, ", held-out prompts"),
                                          p.prompts_done, p.prompts);
                                    }));
  LOG(INFO) << what << ": greedy held-out accuracy " << r.greedy_accuracy << " on " << n
            << " prompts (" << absl::ToDoubleSeconds(absl::Now() - t0) << " s)";
  return r.greedy_accuracy;
}

void RankZero::RecordUpdate(const UpdateResult& r, const std::vector<TrainingGroup>& groups,
                            uint64_t version_before, double heldout) {
  // Published clamped (ClampDiagnostics): never +Inf in Prometheus or null
  // in metrics.jsonl; the clamped names are listed here and counted by the
  // trainer's UpdateMetrics::RecordUpdate (rlvr_learner_diagnostics_clamped_total).
  UpdateDiagnostics d = r.diagnostics;
  const std::vector<std::string> clamped = ClampDiagnostics(&d);
  if (!clamped.empty()) {
    LOG(WARNING) << "step " << r.step << ": diagnostics published clamped to +-" << kDiagnosticLimit
                 << ": " << absl::StrJoin(clamped, ", ");
  }
  const uint64_t version = r.version + 1;  // See PublishedVersion().
  double staleness = 0.0;
  for (const TrainingGroup& g : groups) {
    staleness += static_cast<double>(version_before - g.group.policy_version);
  }
  if (!groups.empty()) staleness /= static_cast<double>(groups.size());
  const double now = NowUnixSeconds();

  // The Trainer has recorded the update's own metrics (step, diagnostics,
  // wall time, tokens, groups dropped by the batcher) in metrics_.update.
  if (heldout >= 0) metrics_.heldout_accuracy->Set(heldout);
  {
    absl::MutexLock l(&figures_mu_);
    figures_.step = r.step;
    figures_.version = version;
    figures_.tokens_trained += static_cast<uint64_t>(std::max<int64_t>(0, d.tokens()));
    figures_.diag = d;
    figures_.step_seconds = r.step_seconds;
    figures_.last_step_unix_s = now;
    if (heldout >= 0) figures_.heldout_accuracy = heldout;
  }

  if (metrics_jsonl_.is_open()) {
    nlohmann::json j;
    j["step"] = r.step;
    j["version"] = version;
    DiagnosticsToJson(d, &j);
    j["groups"] = groups.size();
    j["step_seconds"] = r.step_seconds;
    j["staleness"] = staleness;
    // Waste, per update: the ingest's counts since the previous line (the
    // `json_delta`s of ingest.proto: groups accepted, groups dropped from the
    // buffer as stale, leases revoked) next to the groups this update's
    // batcher dropped (the diagnostics' groups_dropped reasons).
    IngestSnapshot in = ingest_->Snapshot();
    IngestDeltasToJson(in, counted_, &j);
    counted_ = std::move(in);
    if (heldout >= 0) j["heldout_accuracy"] = heldout;
    if (!clamped.empty()) j["diagnostics_clamped"] = clamped;
    j["time"] = now;
    metrics_jsonl_ << j.dump() << "\n";
    metrics_jsonl_.flush();
  }
  if (ledger_.is_open()) {
    for (const TrainingGroup& g : groups) {
      nlohmann::json j;
      j["prompt_index"] = g.group.prompt_index;
      j["prompt_id"] = g.group.prompt_id;
      j["lease_id"] = g.group.lease_id;
      j["version"] = g.group.policy_version;
      j["step"] = r.step;
      j["epoch"] = g.slot.epoch;
      j["position"] = g.slot.position;
      absl::Status s = ledger_.Append(j.dump());
      if (!s.ok()) LOG(ERROR) << "ledger: " << s;
    }
  }
}

absl::Status RankZero::TrainLoop() {
  const int every_ckpt = cfg_.learner.checkpoint_every;
  const int every_eval = cfg_.eval.every;
  while (static_cast<int64_t>(trainer_->step()) < cfg_.run.total_updates && !StopRequested()) {
    absl::StatusOr<std::vector<TrainingGroup>> taken =
        ingest_->WaitForUpdate([this] { return StopRequested(); });
    if (absl::IsCancelled(taken.status())) break;
    RETURN_IF_ERROR(taken.status());
    std::vector<Group> groups;
    groups.reserve(taken->size());
    for (const TrainingGroup& g : *taken) groups.push_back(g.group);
    const uint64_t version_before = PublishedVersion();
    ASSIGN_OR_RETURN(UpdateResult r, trainer_->RunUpdate(std::move(groups), /*stop_after=*/false));
    ingest_->CompleteUpdate(*taken);
    RETURN_IF_ERROR(PublishCurrentVersion());
    double heldout = -1.0;
    const bool last = static_cast<int64_t>(r.step) >= cfg_.run.total_updates;
    // The last update's evaluation has its own size (0 = none); the periodic
    // ones evaluate eval.prompts.
    const int eval_prompts = last ? FinalEvalPrompts(cfg_.eval)
                             : (every_eval > 0 && r.step % every_eval == 0) ? cfg_.eval.prompts
                                                                            : 0;
    if (eval_prompts > 0) {
      phase_->Set("evaluating");
      ASSIGN_OR_RETURN(heldout, EvaluateHeldout(eval_prompts, absl::StrCat("step ", r.step)));
      phase_->Set("training");
    }
    RecordUpdate(r, *taken, version_before, heldout);
    LOG(INFO) << "step " << r.step << " version " << PublishedVersion() << " reward "
              << r.diagnostics.reward_mean() << " accuracy " << r.diagnostics.accuracy() << " ("
              << r.step_seconds << " s)" << (heldout >= 0 ? " heldout " : "")
              << (heldout >= 0 ? absl::StrCat(heldout) : "");
    if (every_ckpt > 0 && r.step % every_ckpt == 0) RETURN_IF_ERROR(Checkpoint());
    ingest_->RecycleGroups(std::move(*taken));  // Nothing reads them any more.
  }
  return absl::OkStatus();
}

absl::Status RankZero::Run() {
  absl::Status status = Setup();
  if (status.ok()) status = TrainLoop();
  if (!status.ok()) LOG(ERROR) << "learner failed: " << status;
  // Graceful stop: refuse new leases, answer health NOT_SERVING, checkpoint,
  // release the other ranks, then end every stream.
  phase_->Set("stopping");
  if (server_ != nullptr) server_->GetHealthCheckService()->SetServingStatus(false);
  if (ingest_ != nullptr) ingest_->StopGranting();
  if (status.ok() && trainer_ != nullptr &&
      (!checkpointed_once_ || last_checkpoint_step_ != trainer_->step())) {
    status = Checkpoint();
  }
  if (trainer_ != nullptr && o_.world_size > 1) {
    absl::StatusOr<UpdateResult> stop = trainer_->RunUpdate({}, /*stop_after=*/true);
    if (!stop.ok()) LOG(WARNING) << "could not tell the other ranks to stop: " << stop.status();
  }
  if (publisher_ != nullptr) publisher_->Shutdown();
  if (ingest_ != nullptr) ingest_->Stop();
  if (server_ != nullptr) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_.reset();
  }
  LOG(INFO) << "learner stopped at step " << (trainer_ ? trainer_->step() : 0);
  return status;
}

rlvr::v1::LearnerStatus RankZero::Status() {
  rlvr::v1::LearnerStatus s;
  IngestToStatus(ingest_->Snapshot(), &s);
  s.set_world_size(o_.world_size);
  absl::MutexLock l(&figures_mu_);
  s.set_step(figures_.step);
  s.set_tokens_trained(figures_.tokens_trained);
  DiagnosticsToStatus(figures_.diag, &s);
  s.set_step_seconds(figures_.step_seconds);
  s.set_last_step_unix_s(figures_.last_step_unix_s);
  s.set_heldout_accuracy(figures_.heldout_accuracy);
  return s;
}

}  // namespace

absl::Status RunLearner(const LearnerOptions& options,
                        std::shared_ptr<prometheus::Registry> registry) {
  // One owner per metric family: a second registration of a name throws.
  if (registry == nullptr) {
    registry = std::make_shared<prometheus::Registry>(prometheus::Registry::InsertBehavior::Throw);
  }
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad rank ", options.rank, " for world size ", options.world_size));
  }
  // /metrics from the start, before the model, the rendezvous and the
  // checkpoint: a scrape (and a probe) sees the process and its phase while
  // it waits for the other ranks, not a refused connection.
  PhaseGauge phase(*registry, "rlvr_learner_phase", kLearnerPhaseHelp,
                   {std::begin(kLearnerPhases), std::end(kLearnerPhases)});
  std::unique_ptr<MetricsServer> metrics_server;
  if (options.metrics_port >= 0) {
    MetricsServerOptions mo;
    mo.bind_address = options.metrics_bind;
    mo.port = options.metrics_port;  // 0: MetricsServer binds a free port itself.
    absl::StatusOr<std::unique_ptr<MetricsServer>> ms = MetricsServer::Start(mo, registry);
    if (ms.ok()) {
      metrics_server = std::move(*ms);
      LOG(INFO) << "metrics on http://" << options.metrics_bind << ":" << metrics_server->port()
                << "/metrics";
      std::printf("learner metrics on port %d\n", metrics_server->port());
      std::fflush(stdout);
    } else if (options.metrics_port > 0) {
      return ms.status();
    } else {
      LOG(WARNING) << "metrics disabled: " << ms.status();
    }
  }
  at::set_num_threads(options.config.learner.threads);
  TrainerOptions to = TrainerOptions::FromRunConfig(options.config);
  to.rank = options.rank;
  to.world_size = options.world_size;
  to.master_addr = options.master_addr;
  to.master_port = options.master_port;
  to.backend = options.backend;
  // The model's shape and tokenizer (model.hf_path: from that directory).
  ASSIGN_OR_RETURN(policy::ResolvedPolicy resolved, policy::ResolvePolicy(options.config.model));
  to.model = resolved.model;
  to.vocab_size = resolved.vocab_size;
  to.checkpoint_dir = options.run_dir.empty() ? "" : options.run_dir + "/checkpoints";
  to.base_weights_path = options.base_weights;

  if (options.rank > 0) {
    phase.Set("rendezvous");
    ASSIGN_OR_RETURN(std::unique_ptr<Trainer> trainer, Trainer::Create(to, nullptr));
    phase.Set("resuming");
    RETURN_IF_ERROR(trainer->Resume().status());
    LOG(INFO) << "learner rank " << options.rank << " of " << options.world_size << " ready";
    phase.Set("training");
    while (true) {
      ASSIGN_OR_RETURN(UpdateResult r, trainer->RunUpdate({}, false));
      if (r.stop) break;
    }
    phase.Set("stopping");
    LOG(INFO) << "learner rank " << options.rank << " stopped at step " << trainer->step();
    return absl::OkStatus();
  }
  RankZero zero(options, std::move(to), std::move(registry), std::move(resolved.tokenizer), &phase);
  return zero.Run();
}

}  // namespace rlvr::learner
