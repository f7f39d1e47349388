// The actor's shell: creation, start, shutdown, health and stats, and the
// helpers its threads share (actor/actor_impl.h lists which file holds which
// thread). Decisions are LeaseBook's and ModelSlots'; this file owns the
// gRPC channels, the health server, the threads and the lock.
#include "actor/actor.h"

#include <glog/logging.h>
#include <grpcpp/health_check_service_interface.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "actor/actor_impl.h"
#include "actor/rollout.h"
#include "actor/transport.h"
#include "common/base/status_macros.h"
#include "common/net/grpc_util.h"
#include "common/policy/factory.h"

namespace rlvr::actor {
namespace {

// Joining grace on top of the shutdown deadline: the time a cancelled RPC
// and the thread that waits on it need to wind down.
constexpr absl::Duration kJoinGrace = absl::Seconds(2);

LeaseBookOptions BookOptions(const ActorOptions& options, int vocab_size,
                             const policy::Engine* engine) {
  LeaseBookOptions o;
  o.capacity = options.actor.max_batch_prompts;
  o.stale_lease_wait = absl::Seconds(options.stale_lease_wait_s);
  o.validate = [vocab_size, max_seq_len = options.model.max_seq_len,
                engine](const rlvr::v1::WorkLease& lease) -> absl::Status {
    RETURN_IF_ERROR(ValidateLease(lease, vocab_size, max_seq_len));
    // A row the KV pool cannot hold even alone (only with a kv_cache_tokens
    // the config check would refuse for this max_seq_len) goes back at once.
    if (engine != nullptr &&
        !engine->RowFits(lease.prompt_token_ids_size(), lease.sampling().max_new_tokens())) {
      return absl::InvalidArgumentError(
          absl::StrCat("prompt (", lease.prompt_token_ids_size(), ") + max_new_tokens (",
                       lease.sampling().max_new_tokens(), ") does not fit actor.kv_cache_tokens (",
                       engine->options().kv_cache_tokens, ")"));
    }
    return absl::OkStatus();
  };
  return o;
}

}  // namespace

policy::EngineOptions EngineOptionsFor(const ActorOptions& options) {
  policy::EngineOptions o;
  o.max_rows = options.actor.max_batch_rows;
  o.block_tokens = options.actor.kv_block_tokens;
  o.kv_cache_tokens = options.actor.kv_cache_tokens > 0
                          ? options.actor.kv_cache_tokens
                          : int64_t{options.actor.max_batch_rows} * options.model.max_seq_len;
  return o;
}

namespace {}  // namespace

ActorImpl::ActorImpl(const ActorOptions& options, std::shared_ptr<prometheus::Registry> registry,
                     std::unique_ptr<Tokenizer> tokenizer, int vocab_size,
                     std::unique_ptr<Task> task, const policy::Placement& placement,
                     std::unique_ptr<policy::Engine> engine)
    : options_(options),
      registry_(registry ? std::move(registry) : std::make_shared<prometheus::Registry>()),
      metrics_(*registry_),
      tokenizer_(std::move(tokenizer)),
      task_(std::move(task)),
      vocab_size_(vocab_size),
      placement_(placement),
      capacity_(options.actor.max_batch_prompts),
      group_pool_(static_cast<size_t>(2 * capacity_ + 16)),
      engine_(std::move(engine)),
      book_(BookOptions(options, vocab_size_, engine_.get())),
      rng_(options.random_seed != 0 ? options.random_seed : std::random_device{}()) {
  absl::MutexLock lock(&mu_);
  incarnation_ = absl::StrCat(absl::Hex(rng_(), absl::kZeroPad16));
  if (engine_ != nullptr) {
    engine_noted_ = engine_->stats();
    stats_.kv_cache_bytes = engine_noted_.kv_blocks * engine_noted_.kv_block_bytes;
    metrics_.kv_cache_capacity_bytes.Set(static_cast<double>(stats_.kv_cache_bytes));
  }
}

ActorImpl::~ActorImpl() {
  Shutdown();
  // A generation thread still inside Generate is waited for here; callers
  // that cannot wait exit the process instead (see Actor::Shutdown).
  if (gen_thread_.joinable()) gen_thread_.join();
}

ActorStats ActorImpl::stats() const {
  absl::MutexLock lock(&mu_);
  ActorStats s = stats_;
  s.policy_version = policy_version_.load();
  const LeaseBookCounters& c = book_.counters();
  s.leases_received = c.received;
  s.leases_dropped = c.dropped;
  s.max_leases_held = c.max_held;
  return s;
}

absl::Status ActorImpl::Start() {
  {
    absl::MutexLock lock(&mu_);
    if (started_) return absl::FailedPreconditionError("actor already started");
    started_ = true;
  }
  if (!options_.health_address.empty()) {
    GrpcServerOptions server_options;
    server_options.address = options_.health_address;
    ASSIGN_OR_RETURN(StartedServer started, StartGrpcServer(server_options, {}));
    health_server_ = std::move(started.server);
    health_port_ = started.port;
    health_server_->GetHealthCheckService()->SetServingStatus(false);
  }

  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  args.SetMaxSendMessageSize(64 << 20);
  // The channel's own reconnect backoff follows the actor's, so a learner
  // that comes back is found as quickly as the session loop retries.
  const int min_ms = std::max(1, static_cast<int>(options_.actor.reconnect_initial_s * 1000));
  const int max_ms = std::max(min_ms, static_cast<int>(options_.actor.reconnect_max_s * 1000));
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, min_ms);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, min_ms);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, max_ms);
  // Detect a vanished learner on an idle stream.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  auto creds = options_.credentials ? options_.credentials : grpc::InsecureChannelCredentials();
  session_channel_ = grpc::CreateCustomChannel(options_.learner_address, creds, args);
  grpc::ChannelArguments weight_args = args;
  SetWeightChannelArgs(&weight_args);
  weight_args.SetString("rlvr.channel", "weights");  // Not shared with the session's.
  weight_channel_ = grpc::CreateCustomChannel(options_.learner_address, creds, weight_args);

  torch::set_num_threads(std::max(1, options_.actor.threads));
  gen_thread_ = std::thread([this] { GenerationLoop(); });
  weight_thread_ = std::thread([this] { WeightLoop(); });
  session_thread_ = std::thread([this] { SessionLoop(); });
  LOG(INFO) << "actor " << options_.actor_id << " (incarnation " << incarnation_
            << ") started: learner " << options_.learner_address << ", capacity " << capacity_
            << ", health port " << health_port_;
  return absl::OkStatus();
}

absl::Duration ActorImpl::Backoff(int failures) {
  const double base =
      options_.actor.reconnect_initial_s * std::pow(2.0, std::min(std::max(failures - 1, 0), 30));
  const double capped = std::min(base, options_.actor.reconnect_max_s);
  absl::MutexLock lock(&mu_);
  // "Equal jitter": half fixed, half uniform, so actors restarted together
  // spread out but never hammer the learner faster than half the backoff.
  return absl::Seconds(capped * (0.5 + 0.5 * std::uniform_real_distribution<double>(0, 1)(rng_)));
}

void ActorImpl::SendGiveBackLocked(const GiveBack& give_back) {
  if (give_back.lease_ids.empty() || outbox_ == nullptr) return;
  rlvr::v1::ActorMessage msg;
  auto* ret = msg.mutable_return_leases();
  for (uint64_t id : give_back.lease_ids) ret->add_lease_ids(id);
  ret->set_reason(give_back.reason);
  if (outbox_->Push(std::move(msg))) stats_.leases_returned += give_back.lease_ids.size();
}

void ActorImpl::UpdateLeaseGaugeLocked() { metrics_.leases_in_flight.Set(book_.held()); }

void ActorImpl::SendGroupsLocked(std::vector<rlvr::v1::RolloutGroup> groups) {
  if (outbox_ == nullptr || groups.empty()) return;
  // As few messages as the learner's Welcome allows (one RolloutBatch,
  // answered by one AckBatch).
  for (rlvr::v1::ActorMessage& msg :
       PackGroups(std::move(groups), session_batches_, session_max_message_bytes_)) {
    const int n = msg.has_group_batch() ? msg.group_batch().groups_size() : 1;
    if (outbox_->Push(std::move(msg))) {
      stats_.groups_sent += n;
      metrics_.groups_sent.Increment(n);
    }
  }
}

void ActorImpl::UpdateHealth() {
  absl::MutexLock health_lock(&health_mu_);
  bool serving;
  {
    absl::MutexLock lock(&mu_);
    serving = slots_.has_weights() && book_.session_open() && !StoppingLocked();
  }
  if (serving != serving_.load()) {
    LOG(INFO) << (serving ? "actor ready: SERVING with policy version "
                          : "actor NOT_SERVING (policy version ")
              << policy_version_.load() << (serving ? "" : ")");
  }
  serving_.store(serving);
  if (health_server_) health_server_->GetHealthCheckService()->SetServingStatus(serving);
}

bool ActorImpl::Shutdown() {
  const absl::Time deadline = absl::Now() + absl::Seconds(options_.actor.shutdown_deadline_s);
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_done_ || !started_) {
      shutdown_done_ = true;
      return shutdown_clean_;
    }
    if (draining_) {
      // Another thread is shutting down; wait for it.
      while (!shutdown_done_) done_cv_.Wait(&mu_);
      return shutdown_clean_;
    }
    draining_ = true;
    book_.StopGranting();
    gen_cv_.SignalAll();
    backoff_cv_.SignalAll();
  }
  LOG(INFO) << "actor shutting down (deadline " << options_.actor.shutdown_deadline_s << " s)";
  UpdateHealth();

  bool clean = true;
  {
    absl::MutexLock lock(&mu_);
    // Finish the batch in progress if it completes within the deadline.
    while (book_.generating() && !done_cv_.WaitWithDeadline(&mu_, deadline)) {
    }
    const bool abandon = book_.generating();
    if (abandon) {
      LOG(WARNING) << "abandoning the generation batch in progress at the shutdown deadline";
    }
    SendGiveBackLocked(book_.GiveBackUnfinished(abandon));
    UpdateLeaseGaugeLocked();
    // Half-close after the queued groups and returns are written; the
    // learner then ends the stream and the session thread finishes.
    if (outbox_) outbox_->Close(/*graceful=*/true);
    while (!session_thread_done_ && !done_cv_.WaitWithDeadline(&mu_, deadline)) {
    }
    if (!session_thread_done_ && session_ctx_) session_ctx_->TryCancel();
    stop_ = true;
    if (weight_ctx_) weight_ctx_->TryCancel();
    gen_cv_.SignalAll();
    backoff_cv_.SignalAll();
  }
  if (session_thread_.joinable()) session_thread_.join();
  if (weight_thread_.joinable()) weight_thread_.join();
  bool gen_done;
  {
    absl::MutexLock lock(&mu_);
    while (!gen_done_ && !done_cv_.WaitWithDeadline(&mu_, deadline + kJoinGrace)) {
    }
    gen_done = gen_done_;
  }
  if (gen_done) {
    if (gen_thread_.joinable()) gen_thread_.join();
  } else {
    clean = false;
    LOG(WARNING) << "generation thread still busy after the shutdown deadline";
  }
  if (health_server_) {
    health_server_->Shutdown(absl::ToChronoTime(absl::Now() + absl::Milliseconds(200)));
  }
  metrics_.session_up.Set(0);
  {
    absl::MutexLock lock(&mu_);
    shutdown_done_ = true;
    shutdown_clean_ = clean;
    done_cv_.SignalAll();
  }
  LOG(INFO) << "actor stopped" << (clean ? "" : " (generation abandoned)");
  return clean;
}

absl::StatusOr<std::unique_ptr<Actor>> Actor::Create(
    const ActorOptions& options, std::shared_ptr<prometheus::Registry> registry) {
  if (options.learner_address.empty()) {
    return absl::InvalidArgumentError("actor: learner address is required");
  }
  if (options.actor.max_batch_prompts < 1) {
    return absl::InvalidArgumentError("actor: max_batch_prompts must be >= 1");
  }
  if (options.actor.engine != "continuous" && options.actor.engine != "static") {
    return absl::InvalidArgumentError(absl::StrCat(
        "actor: engine must be continuous or static, not '", options.actor.engine, "'"));
  }
  if (options.actor_id.empty() || options.actor_id.size() > 128) {
    return absl::InvalidArgumentError("actor: actor_id must be 1..128 bytes");
  }
  // The model's shape and tokenizer (model.hf_path: from that directory); the
  // weights come from the learner.
  ASSIGN_OR_RETURN(policy::ResolvedPolicy resolved, policy::ResolvePolicy(options.model));
  // Where generation runs (actor.device, model.compute_dtype): a CUDA device
  // that is not there fails here, naming the key.
  ASSIGN_OR_RETURN(const policy::Placement placement,
                   policy::ResolvePlacement("actor.device", options.actor.device,
                                            options.model.compute_dtype, /*rank=*/0));
  if (!placement.is_default()) LOG(INFO) << "actor model on " << placement.ToString();
  ActorOptions resolved_options = options;
  resolved_options.model = resolved.model;
  TaskOptions task_options;
  task_options.load_prompts = false;  // The actor only verifies.
  ASSIGN_OR_RETURN(std::unique_ptr<Task> task,
                   MakeTask(options.task, *resolved.tokenizer, task_options));
  // The continuous engine's KV pool is allocated here, once: a size the
  // device cannot hold fails the start, naming it.
  std::unique_ptr<policy::Engine> engine;
  if (options.actor.engine == "continuous") {
    const policy::EngineOptions engine_options = EngineOptionsFor(resolved_options);
    absl::StatusOr<std::unique_ptr<policy::Engine>> made = policy::Engine::Create(
        engine_options, resolved_options.model, resolved.vocab_size, placement);
    if (!made.ok()) {
      return absl::Status(
          made.status().code(),
          absl::StrCat("actor.kv_cache_tokens / actor.max_batch_rows: ", made.status().message()));
    }
    engine = *std::move(made);
    const policy::EngineStats es = engine->stats();
    LOG(INFO) << "actor engine: continuous batching, " << engine_options.max_rows
              << " row slots, KV pool of " << es.kv_blocks * es.kv_block_tokens << " positions ("
              << es.kv_blocks << " blocks of " << es.kv_block_tokens << ", "
              << (es.kv_blocks * es.kv_block_bytes) / (1 << 20) << " MiB)";
  }
  return std::unique_ptr<Actor>(new ActorImpl(resolved_options, std::move(registry),
                                              std::move(resolved.tokenizer), resolved.vocab_size,
                                              std::move(task), placement, std::move(engine)));
}

}  // namespace rlvr::actor
