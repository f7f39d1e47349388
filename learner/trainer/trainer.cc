#include "learner/trainer/trainer.h"

#include <ATen/CPUGeneratorImpl.h>
#include <glog/logging.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>  // std::lock_guard on torch::Generator::mutex() (LibTorch API)
#include <sstream>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/base/const_init.h"
#include "absl/strings/str_cat.h"
#include "common/base/splitmix.h"
#include "common/base/status_macros.h"
#include "common/policy/factory.h"
#include "common/policy/model.h"
#include "common/policy/placement.h"
#include "common/policy/weights.h"
#include "common/tokenizer/tokenizer.h"
#include "learner/core/batcher.h"
#include "learner/core/estimator_registry.h"
#include "learner/core/rl_schedule.h"
#include "learner/core/step.h"
#include "learner/diagnostics/update_metrics.h"
#include "learner/trainer/checkpointer.h"
#include "learner/trainer/communicator.h"
#include "learner/trainer/update_codec.h"

namespace rlvr::learner {
namespace {

using internal::TrainerCounters;
using internal::TrainerState;
using internal::UpdateMessage;

// Checkpoint part names.
constexpr char kPartModel[] = "model";
constexpr char kPartOptimizer[] = "optimizer";
constexpr char kPartCounters[] = "trainer";
constexpr char kPartRng[] = "rng";
constexpr char kPartIngest[] = "ingest";

// Runs `fn`, converting LibTorch exceptions into a Status naming `what`.
template <typename Fn>
absl::Status Guarded(const char* what, Fn&& fn) {
  try {
    return fn();
  } catch (const c10::Error& e) {
    return absl::InternalError(absl::StrCat(what, ": ", e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat(what, ": ", e.what()));
  }
}

}  // namespace

TrainerOptions TrainerOptions::FromRunConfig(const RunConfig& config) {
  TrainerOptions o;
  o.model = config.model;
  o.loss = config.loss;
  o.batching = config.batching;
  o.optim = config.optim;
  o.learner = config.learner;
  o.max_new_tokens = config.sampling.max_new_tokens;
  o.total_updates = config.run.total_updates;
  return o;
}

class Trainer::Impl {
 public:
  Impl(const TrainerOptions& options, UpdateMetrics* metrics, ParsedEstimator estimator)
      : options_(options),
        estimator_(std::move(estimator)),
        metrics_(options.rank == 0 ? metrics : nullptr) {}

  absl::Status Init() {
    const auto timeout = absl::Seconds(options_.learner.collective_timeout_s);
    torch::set_num_threads(std::max(1, options_.learner.threads));
    int vocab = options_.vocab_size;
    if (vocab <= 0) vocab = MakeCharTokenizer()->vocab_size();
    const uint64_t init_seed = static_cast<uint64_t>(options_.learner.seed);
    // learner.device and model.compute_dtype: float32 master weights (and
    // AdamW state) on the device; a bfloat16 compute dtype casts them per use.
    ASSIGN_OR_RETURN(placement_,
                     policy::ResolvePlacement("learner.device", options_.learner.device,
                                              options_.model.compute_dtype, options_.rank));
    if (!placement_.is_default()) {
      LOG(INFO) << "trainer rank " << options_.rank << ": model on " << placement_.ToString();
    }
    // The starting policy: model.hf_path's weights, or the seeded init (its
    // own generator: trainers created concurrently in one process do not
    // share an RNG).
    ASSIGN_OR_RETURN(model_, policy::CreateInitialPolicy(options_.model, vocab, init_seed,
                                                         placement_, policy::PolicyUse::kTraining));
    if (options_.loss.kl_coef > 0) {
      // The frozen reference only runs forward: its weights are in the
      // compute dtype.
      ASSIGN_OR_RETURN(reference_,
                       policy::CreateInitialPolicy(options_.model, vocab, init_seed, placement_,
                                                   policy::PolicyUse::kInference));
    }
    // Base weights are read by rank 0 only; the other ranks get rank 0's
    // state (weights, reference, optimizer) with their first update.
    if (options_.rank == 0 && !options_.base_weights_path.empty()) {
      RETURN_IF_ERROR(policy::LoadWeightsFile(options_.base_weights_path, model_, nullptr));
      if (!reference_.is_empty()) {
        RETURN_IF_ERROR(policy::LoadWeightsFile(options_.base_weights_path, reference_, nullptr));
      }
    }
    if (!reference_.is_empty()) {
      reference_->eval();
      for (auto& p : reference_->parameters()) p.set_requires_grad(false);
    }
    RETURN_IF_ERROR(Guarded("AdamW", [&] {
      torch::optim::AdamWOptions adam(options_.optim.lr);
      adam.betas({options_.optim.beta1, options_.optim.beta2})
          .eps(options_.optim.eps)
          .weight_decay(options_.optim.weight_decay);
      optimizer_ = std::make_unique<torch::optim::AdamW>(model_->parameters(), adam);
      return absl::OkStatus();
    }));
    if (!options_.checkpoint_dir.empty() && options_.rank == 0) {
      ASSIGN_OR_RETURN(
          checkpointer_,
          Checkpointer::Create({.dir = options_.checkpoint_dir,
                                .keep = std::max(1, options_.learner.keep_checkpoints)}));
    }
    CommunicatorOptions comm;
    comm.backend = options_.backend;
    comm.rank = options_.rank;
    comm.world_size = options_.world_size;
    comm.master_addr = options_.master_addr;
    comm.master_port = options_.master_port;
    comm.timeout = timeout;
    if (placement_.is_cuda()) comm.cuda_device = placement_.cuda_device;
    ASSIGN_OR_RETURN(comm_, MakeCommunicator(comm));
    sync_pending_ = options_.world_size > 1;
    if (metrics_ != nullptr) {
      metrics_->SetWorldSize(options_.world_size);
      metrics_->SetStep(0);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<UpdateResult> RunUpdate(std::vector<Group> groups, bool stop_after) {
    const auto start = std::chrono::steady_clock::now();
    if (broken_) {
      return absl::FailedPreconditionError(
          "trainer: unusable after an earlier failed update (ranks out of step)");
    }
    absl::StatusOr<UpdateResult> result = absl::InternalError("RunUpdate: no result");
    absl::Status thrown = Guarded("RunUpdate", [&] {
      result = RunUpdateInner(std::move(groups), stop_after);
      return absl::OkStatus();
    });
    if (!thrown.ok()) result = thrown;
    if (!result.ok()) {
      broken_ = true;
      return result.status();
    }
    result->step_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (metrics_ != nullptr && result->trained) {
      metrics_->RecordUpdate(result->step, result->diagnostics, result->step_seconds);
    }
    return result;
  }

  absl::Status SaveCheckpoint(const std::string& ingest_state) {
    if (options_.rank != 0) return absl::OkStatus();
    if (!checkpointer_) {
      return absl::FailedPreconditionError("trainer: SaveCheckpoint without a checkpoint_dir");
    }
    const auto start = std::chrono::steady_clock::now();
    CheckpointData data;
    data.step = step_;
    data.version = version_;
    RETURN_IF_ERROR(Guarded("checkpoint state", [&] {
      data.parts[kPartModel] = policy::SerializeWeights(model_, version_);
      ASSIGN_OR_RETURN(data.parts[kPartOptimizer], SerializeOptimizer());
      data.parts[kPartRng] = SerializeRng();
      return absl::OkStatus();
    }));
    data.parts[kPartCounters] = internal::EncodeCounters(Counters());
    data.parts[kPartIngest] = ingest_state;
    RETURN_IF_ERROR(checkpointer_->Save(data));
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (metrics_ != nullptr) metrics_->ObserveCheckpointSeconds(seconds);
    LOG(INFO) << "trainer: checkpoint step " << step_ << " version " << version_ << " written to "
              << checkpointer_->PathFor(step_) << " in " << seconds << " s";
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Resume() {
    if (options_.rank != 0 || !checkpointer_) return std::string();
    ASSIGN_OR_RETURN(std::optional<CheckpointData> data, checkpointer_->LoadLatest());
    if (!data.has_value()) {
      LOG(INFO) << "trainer: no checkpoint in " << options_.checkpoint_dir << "; starting fresh";
      return std::string();
    }
    for (const char* part : {kPartModel, kPartOptimizer, kPartCounters, kPartRng, kPartIngest}) {
      if (!data->parts.count(part)) {
        return absl::DataLossError(
            absl::StrCat("checkpoint step ", data->step, " lacks part ", part));
      }
    }
    ASSIGN_OR_RETURN(TrainerCounters counters,
                     internal::DecodeCounters(data->parts[kPartCounters]));
    RETURN_IF_ERROR(policy::LoadWeights(data->parts[kPartModel], model_, nullptr));
    RETURN_IF_ERROR(LoadOptimizer(data->parts[kPartOptimizer]));
    RETURN_IF_ERROR(LoadRng(data->parts[kPartRng]));
    SetCounters(counters);
    sync_pending_ = options_.world_size > 1;
    if (metrics_ != nullptr) metrics_->SetStep(step_);
    LOG(INFO) << "trainer: resumed from " << checkpointer_->PathFor(data->step) << " (step "
              << step_ << ", version " << version_ << ")";
    return std::move(data->parts[kPartIngest]);
  }

  double LearningRate(uint64_t optimizer_step) const {
    return RlLrSchedule(options_.optim, options_.batching, options_.total_updates)
        .At(static_cast<double>(optimizer_step));
  }

  uint64_t step_ = 0;
  uint64_t version_ = 0;
  uint64_t optimizer_steps_ = 0;
  const TrainerOptions options_;
  const ParsedEstimator estimator_;  // options_.loss, parsed once by Create.
  std::unique_ptr<Communicator> comm_;
  policy::Transformer model_{nullptr};

 private:
  TrainerCounters Counters() const { return {step_, version_, optimizer_steps_}; }
  void SetCounters(const TrainerCounters& c) {
    step_ = c.step;
    version_ = c.version;
    optimizer_steps_ = c.optimizer_steps;
  }

  // Moves every AdamW state tensor to `device` (a no-op for state already
  // there): checkpoints and state messages hold CPU tensors, whatever device
  // the parameters are on.
  void MoveOptimizerState(const torch::Device& device) {
    for (auto& [key, state] : optimizer_->state()) {
      auto& adam = static_cast<torch::optim::AdamWParamState&>(*state);
      adam.exp_avg(adam.exp_avg().to(device));
      adam.exp_avg_sq(adam.exp_avg_sq().to(device));
      if (adam.max_exp_avg_sq().defined()) adam.max_exp_avg_sq(adam.max_exp_avg_sq().to(device));
    }
  }
  torch::Device ParameterDevice() { return model_->OutputWeight().device(); }

  absl::StatusOr<std::string> SerializeOptimizer() {
    std::string out;
    RETURN_IF_ERROR(Guarded("save optimizer", [&] {
      torch::serialize::OutputArchive archive;
      const bool on_device = !ParameterDevice().is_cpu();
      if (on_device) MoveOptimizerState(torch::kCPU);
      optimizer_->save(archive);
      if (on_device) MoveOptimizerState(ParameterDevice());
      std::ostringstream stream;
      archive.save_to(stream);
      out = stream.str();
      return absl::OkStatus();
    }));
    return out;
  }

  absl::Status LoadOptimizer(const std::string& bytes) {
    return Guarded("load optimizer", [&] {
      torch::serialize::InputArchive archive;
      archive.load_from(bytes.data(), bytes.size());
      optimizer_->load(archive);
      if (!ParameterDevice().is_cpu()) MoveOptimizerState(ParameterDevice());
      return absl::OkStatus();
    });
  }

  // The default CPU generator's state (the only RNG the trainer's torch code
  // could draw from; the planner's randomness comes from explicit seeds).
  std::string SerializeRng() {
    auto gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    at::Tensor state = gen.get_state();
    return std::string(reinterpret_cast<const char*>(state.data_ptr<uint8_t>()), state.numel());
  }

  absl::Status LoadRng(const std::string& bytes) {
    return Guarded("load rng", [&] {
      auto gen = at::detail::getDefaultCPUGenerator();
      at::Tensor state = torch::empty({static_cast<int64_t>(bytes.size())}, torch::kUInt8);
      std::memcpy(state.data_ptr<uint8_t>(), bytes.data(), bytes.size());
      std::lock_guard<std::mutex> lock(gen.mutex());
      gen.set_state(state);
      return absl::OkStatus();
    });
  }

  absl::StatusOr<TrainerState> CaptureState() {
    TrainerState s;
    s.counters = Counters();
    RETURN_IF_ERROR(Guarded("capture state", [&] {
      s.weights = policy::SerializeWeights(model_, version_);
      if (!reference_.is_empty()) s.reference_weights = policy::SerializeWeights(reference_, 0);
      return absl::OkStatus();
    }));
    ASSIGN_OR_RETURN(s.optimizer, SerializeOptimizer());
    return s;
  }

  absl::Status ApplyState(const TrainerState& s) {
    RETURN_IF_ERROR(policy::LoadWeights(s.weights, model_, nullptr));
    if (!reference_.is_empty()) {
      if (s.reference_weights.empty()) {
        return absl::FailedPreconditionError("trainer: rank 0 sent no KL reference weights");
      }
      RETURN_IF_ERROR(policy::LoadWeights(s.reference_weights, reference_, nullptr));
    }
    RETURN_IF_ERROR(LoadOptimizer(s.optimizer));
    SetCounters(s.counters);
    return absl::OkStatus();
  }

  // Rank 0 builds the message, everyone gets it.
  absl::StatusOr<UpdateMessage> ExchangeMessage(std::vector<Group> groups, bool stop_after) {
    if (options_.rank == 0) {
      UpdateMessage m;
      m.stop = stop_after;
      if (!groups.empty()) {
        const uint64_t seed =
            SplitMix64(static_cast<uint64_t>(options_.learner.seed) ^ SplitMix64(step_));
        ASSIGN_OR_RETURN(m.plan, PlanUpdate(groups, options_.batching, estimator_,
                                            options_.max_new_tokens, seed));
      }
      m.groups = std::move(groups);
      if (options_.world_size == 1) return m;
      if (sync_pending_) {
        ASSIGN_OR_RETURN(TrainerState state, CaptureState());
        m.state = std::move(state);
      }
      std::string bytes = internal::EncodeUpdateMessage(m);
      RETURN_IF_ERROR(comm_->Announce(absl::StrCat("update/", messages_++)));
      RETURN_IF_ERROR(comm_->BroadcastBytes(&bytes, 0));
      sync_pending_ = false;
      m.state.reset();
      return m;
    }
    if (!groups.empty()) {
      return absl::InvalidArgumentError("trainer: ranks > 0 must pass no groups to RunUpdate");
    }
    std::string bytes;
    // Rank 0 may spend a long time collecting rollouts between updates: wait
    // for its announcement through the store (bounded by idle_timeout), then
    // receive the message within the collective timeout.
    RETURN_IF_ERROR(
        comm_->AwaitAnnouncement(absl::StrCat("update/", messages_++), options_.idle_timeout));
    RETURN_IF_ERROR(comm_->BroadcastBytes(&bytes, 0));
    ASSIGN_OR_RETURN(UpdateMessage m, internal::DecodeUpdateMessage(bytes));
    if (m.state) {
      RETURN_IF_ERROR(ApplyState(*m.state));
      m.state.reset();
    }
    return m;
  }

  // Sums the parameters' gradients over ranks, clips, and returns the
  // pre-clip global norm.
  absl::StatusOr<double> ReduceAndClip(const std::vector<torch::Tensor>& params) {
    std::vector<torch::Tensor> pieces;
    pieces.reserve(params.size());
    for (const auto& p : params) {
      pieces.push_back(p.grad().defined() ? p.grad().reshape(-1)
                                          : torch::zeros({p.numel()}, p.options()));
    }
    torch::Tensor flat = torch::cat(pieces);
    if (comm_->world_size() > 1) {
      if (flat.is_cuda() && comm_->backend() != "nccl") {
        // Gloo here reduces CPU tensors: stage the gradient through the host.
        torch::Tensor host = flat.to(torch::kCPU);
        RETURN_IF_ERROR(comm_->AllReduceSum(host));
        flat.copy_(host);
      } else {
        RETURN_IF_ERROR(comm_->AllReduceSum(flat));  // NCCL reduces CUDA tensors in place.
      }
    }
    const double norm = flat.norm().item<double>();
    const double clip = options_.optim.grad_clip;
    if (clip > 0 && std::isfinite(norm) && norm > clip) flat.mul_(clip / (norm + 1e-6));
    int64_t offset = 0;
    for (const auto& p : params) {
      const int64_t n = p.numel();
      p.mutable_grad() = flat.narrow(0, offset, n).view_as(p);
      offset += n;
    }
    return norm;
  }

  absl::StatusOr<UpdateResult> RunUpdateInner(std::vector<Group> groups, bool stop_after) {
    ASSIGN_OR_RETURN(UpdateMessage m, ExchangeMessage(std::move(groups), stop_after));
    UpdateResult result;
    result.stop = m.stop;
    if (m.groups.empty()) {
      result.step = step_;
      result.version = version_;
      return result;
    }
    const int rank = comm_->rank();
    const int world = comm_->world_size();
    const std::vector<OptimizerStep>& steps = m.plan.steps;

    OldLogProbs old;
    const bool precompute = options_.loss.old_logprobs == "recompute" && steps.size() > 1;
    if (precompute) {
      ASSIGN_OR_RETURN(old,
                       ComputeOldLogProbs(model_, m.groups, SelectionForRank(m.plan, rank, world),
                                          options_.batching.micro_batch_rollouts));
    }
    std::vector<torch::Tensor> params = model_->parameters();
    UpdateDiagnostics local;
    double grad_norm_sum = 0.0;
    double lr = LearningRate(optimizer_steps_);
    for (const OptimizerStep& step : steps) {
      for (auto& p : params) p.mutable_grad() = torch::Tensor();
      ASSIGN_OR_RETURN(
          UpdateDiagnostics d,
          AccumulateStepGradients(model_, m.groups, ShardStep(step, rank, world), step.normalizer,
                                  estimator_, options_.batching, precompute ? &old : nullptr,
                                  reference_.is_empty() ? nullptr : &reference_));
      MergeDiagnostics(d, &local);
      double norm = 0.0;
      RETURN_IF_ERROR(Guarded("optimizer step", [&]() -> absl::Status {
        ASSIGN_OR_RETURN(norm, ReduceAndClip(params));
        lr = LearningRate(optimizer_steps_);
        if (!std::isfinite(norm)) {
          // Identical on every rank (the norm is of the reduced gradient), so
          // the ranks stay in step; the weights are left untouched.
          LOG(WARNING) << "trainer: non-finite gradient norm at step " << step_
                       << "; optimizer step skipped";
          return absl::OkStatus();
        }
        for (auto& group : optimizer_->param_groups()) group.options().set_lr(lr);
        optimizer_->step();
        return absl::OkStatus();
      }));
      grad_norm_sum += std::isfinite(norm) ? norm : 0.0;
      ++optimizer_steps_;
    }
    for (auto& p : params) p.mutable_grad() = torch::Tensor();

    // Merge the raw diagnostics over ranks (sums, and maxima by max).
    UpdateDiagnostics merged = local;
    if (world > 1) {
      PackedDiagnostics packed = PackDiagnostics(local);
      torch::Tensor sums = torch::tensor(packed.sum, torch::kFloat64);
      torch::Tensor maxima = torch::tensor(packed.max, torch::kFloat64);
      RETURN_IF_ERROR(comm_->AllReduce({sums}, ReduceOp::kSum, comm_->default_timeout()));
      RETURN_IF_ERROR(comm_->AllReduce({maxima}, ReduceOp::kMax, comm_->default_timeout()));
      packed.sum.assign(sums.data_ptr<double>(), sums.data_ptr<double>() + sums.numel());
      packed.max.assign(maxima.data_ptr<double>(), maxima.data_ptr<double>() + maxima.numel());
      ASSIGN_OR_RETURN(merged, UnpackDiagnostics(packed));
    }
    FinishUpdateDiagnostics(m.plan.stats, static_cast<int64_t>(steps.size()), grad_norm_sum, lr,
                            &merged);

    ++step_;
    ++version_;
    result.step = step_;
    result.version = version_;
    result.trained = true;
    result.diagnostics = std::move(merged);
    return result;
  }

  policy::Placement placement_;  // learner.device and model.compute_dtype, resolved.
  policy::Transformer reference_{nullptr};
  std::unique_ptr<torch::optim::AdamW> optimizer_;
  std::unique_ptr<Checkpointer> checkpointer_;
  UpdateMetrics* const metrics_;  // Null on ranks > 0 and without metrics.
  bool sync_pending_ = false;
  bool broken_ = false;
  uint64_t messages_ = 0;  // Update messages exchanged (names the announcements).
};

absl::StatusOr<std::unique_ptr<Trainer>> Trainer::Create(const TrainerOptions& options,
                                                         UpdateMetrics* metrics) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return absl::InvalidArgumentError(absl::StrCat("trainer: rank ", options.rank,
                                                   " outside world of size ", options.world_size));
  }
  if (options.learner.collective_timeout_s <= 0) {
    return absl::InvalidArgumentError("trainer: learner.collective_timeout_s must be positive");
  }
  ASSIGN_OR_RETURN(ParsedEstimator estimator, ParsedEstimator::Parse(options.loss));
  auto impl = std::make_unique<Impl>(options, metrics, std::move(estimator));
  RETURN_IF_ERROR(Guarded("trainer init", [&] { return impl->Init(); }));
  return std::unique_ptr<Trainer>(new Trainer(std::move(impl)));
}

Trainer::Trainer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Trainer::~Trainer() = default;

absl::StatusOr<UpdateResult> Trainer::RunUpdate(std::vector<Group> groups, bool stop_after) {
  return impl_->RunUpdate(std::move(groups), stop_after);
}

uint64_t Trainer::step() const { return impl_->step_; }
uint64_t Trainer::version() const { return impl_->version_; }
int Trainer::rank() const { return impl_->comm_->rank(); }
int Trainer::world_size() const { return impl_->comm_->world_size(); }

absl::Status Trainer::SaveCheckpoint(const std::string& ingest_state) {
  return Guarded("SaveCheckpoint", [&] { return impl_->SaveCheckpoint(ingest_state); });
}

absl::StatusOr<std::string> Trainer::Resume() {
  absl::StatusOr<std::string> result;
  absl::Status status = Guarded("Resume", [&] {
    result = impl_->Resume();
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return result;
}

policy::Transformer& Trainer::model() { return impl_->model_; }

double Trainer::current_lr() const { return impl_->LearningRate(impl_->optimizer_steps_); }

absl::StatusOr<std::string> ReadCheckpointWeights(const std::string& checkpoint_path) {
  ASSIGN_OR_RETURN(CheckpointData data, Checkpointer::Read(checkpoint_path));
  auto it = data.parts.find(kPartModel);
  if (it == data.parts.end()) {
    return absl::DataLossError(
        absl::StrCat("checkpoint ", checkpoint_path, " lacks part ", kPartModel));
  }
  return std::move(it->second);
}

}  // namespace rlvr::learner
