#include "actor/actor.h"

#include <grpcpp/health_check_service_interface.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <mutex>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include <glog/logging.h>

#include "absl/strings/str_cat.h"
#include "actor/group_pool.h"
#include "actor/outbox.h"
#include "actor/rollout.h"
#include "actor/transport.h"
#include "actor/weight_assembler.h"
#include "actor/weight_stream.h"
#include "common/auth.h"
#include "common/grpc_util.h"
#include "common/metrics.h"
#include "common/policy/model.h"
#include "common/policy/weights.h"
#include "common/status_macros.h"
#include "common/task.h"
#include "common/tokenizer.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "rlvr/v1/session.grpc.pb.h"
#include "rlvr/v1/weights.grpc.pb.h"

namespace rlvr::actor {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

Clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Joining grace on top of the shutdown deadline: the time a cancelled RPC
// and the thread that waits on it need to wind down.
constexpr double kJoinGraceS = 2.0;

struct Metrics {
  explicit Metrics(prometheus::Registry& r)
      : tokens(prometheus::BuildCounter()
                   .Name("rlvr_actor_tokens_generated_total")
                   .Help("Completion tokens sampled by this actor.")
                   .Register(r)
                   .Add({})),
        groups_sent(prometheus::BuildCounter()
                        .Name("rlvr_actor_groups_sent_total")
                        .Help("Rollout groups sent to the learner.")
                        .Register(r)
                        .Add({})),
        groups_rejected(prometheus::BuildCounter()
                            .Name("rlvr_actor_groups_rejected_total")
                            .Help("Rollout groups the learner rejected (Ack.accepted = false).")
                            .Register(r)
                            .Add({})),
        reconnects(prometheus::BuildCounter()
                       .Name("rlvr_actor_reconnects_total")
                       .Help("Session attempts after a failed or broken session.")
                       .Register(r)
                       .Add({})),
        weight_sync_failures(prometheus::BuildCounter()
                                 .Name("rlvr_actor_weight_sync_failures_total")
                                 .Help("Weight transfers discarded (corrupt, partial, unloadable).")
                                 .Register(r)
                                 .Add({})),
        generation_seconds(prometheus::BuildHistogram()
                               .Name("rlvr_actor_generation_seconds")
                               .Help("Wall time of one generation batch (generate + verify).")
                               .Register(r)
                               .Add({}, SecondsBuckets())),
        weight_sync_seconds(prometheus::BuildHistogram()
                                .Name("rlvr_actor_weight_sync_seconds")
                                .Help("First chunk to staged model, per policy version.")
                                .Register(r)
                                .Add({}, SecondsBuckets())),
        policy_version(prometheus::BuildGauge()
                           .Name("rlvr_actor_policy_version")
                           .Help("Policy version used for generation (0 = none).")
                           .Register(r)
                           .Add({})),
        reward_mean(prometheus::BuildGauge()
                        .Name("rlvr_actor_reward_mean")
                        .Help("Mean verifier reward of the last batch.")
                        .Register(r)
                        .Add({})),
        leases_in_flight(prometheus::BuildGauge()
                             .Name("rlvr_actor_leases_in_flight")
                             .Help("Leases held now (queued or being generated).")
                             .Register(r)
                             .Add({})),
        session_up(prometheus::BuildGauge()
                       .Name("rlvr_actor_session_up")
                       .Help("1 while a session with the learner is established.")
                       .Register(r)
                       .Add({})) {}

  prometheus::Counter& tokens;
  prometheus::Counter& groups_sent;
  prometheus::Counter& groups_rejected;
  prometheus::Counter& reconnects;
  prometheus::Counter& weight_sync_failures;
  prometheus::Histogram& generation_seconds;
  prometheus::Histogram& weight_sync_seconds;
  prometheus::Gauge& policy_version;
  prometheus::Gauge& reward_mean;
  prometheus::Gauge& leases_in_flight;
  prometheus::Gauge& session_up;
};

// A lease the actor holds, with the session it was granted on.
struct HeldLease {
  rlvr::v1::WorkLease lease;
  uint64_t epoch = 0;
  Clock::time_point received;
};

class ActorImpl final : public Actor {
 public:
  ActorImpl(const ActorOptions& options, std::shared_ptr<prometheus::Registry> registry,
            std::unique_ptr<Tokenizer> tokenizer, std::unique_ptr<Task> task)
      : options_(options),
        registry_(registry ? std::move(registry) : std::make_shared<prometheus::Registry>()),
        metrics_(*registry_),
        tokenizer_(std::move(tokenizer)),
        task_(std::move(task)),
        vocab_size_(tokenizer_->vocab_size()),
        capacity_(options.actor.max_batch_prompts),
        rng_(options.random_seed != 0 ? options.random_seed : std::random_device{}()) {
    incarnation_ = absl::StrCat(absl::Hex(rng_(), absl::kZeroPad16));
  }

  ~ActorImpl() override {
    Shutdown();
    // A generation thread still inside Generate is waited for here; callers
    // that cannot wait exit the process instead (see Actor::Shutdown).
    if (gen_thread_.joinable()) gen_thread_.join();
  }

  absl::Status Start() override;
  bool Shutdown() override;
  int health_port() const override { return health_port_; }
  uint64_t policy_version() const override { return policy_version_.load(); }
  bool serving() const override { return serving_.load(); }
  ActorStats stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    ActorStats s = stats_;
    s.policy_version = policy_version_.load();
    return s;
  }

 private:
  enum class LeaseFate { kReady, kWait, kDrop, kReturnStale, kReturnExpired };

  void SessionLoop();
  // One session from connect to end; true if it was established (Welcome).
  bool RunOneSession();
  void HandleLease(uint64_t epoch, rlvr::v1::WorkLease lease);
  void HandleAck(const rlvr::v1::Ack& ack);

  void WeightLoop();
  absl::Status InstallBlob(const std::string& blob, uint64_t announced_version);

  void GenerationLoop();
  LeaseFate FateLocked(const HeldLease& held, int64_t now_ms) const;
  bool AnyActionableLocked() const;

  // Sends ReturnLeases for `ids` on session `epoch` if it is still live.
  void ReturnLeasesLocked(uint64_t epoch, const std::vector<uint64_t>& ids,
                          const std::string& reason);
  int HeldLocked() const;
  void UpdateLeaseGaugeLocked();
  void UpdateHealth();
  double BackoffSeconds(int failures);

  const ActorOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;
  Metrics metrics_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Task> task_;
  const int vocab_size_;
  const int capacity_;
  std::string incarnation_;
  // Sent groups, handed back by the session writer for generation to fill.
  GroupPool group_pool_{static_cast<size_t>(2 * capacity_ + 16)};

  std::shared_ptr<grpc::Channel> session_channel_;
  // Weights travel on their own channel (connection) with large HTTP/2
  // windows, so a 4 MiB chunk never queues session messages behind it.
  std::shared_ptr<grpc::Channel> weight_channel_;
  std::unique_ptr<grpc::Server> health_server_;
  int health_port_ = 0;

  std::thread session_thread_;
  std::thread weight_thread_;
  std::thread gen_thread_;

  std::atomic<uint64_t> policy_version_{0};
  std::atomic<bool> serving_{false};
  std::mutex health_mu_;  // Serialises health computations and updates.

  mutable std::mutex mu_;
  std::condition_variable gen_cv_;      // Pending leases, staged weights, stop.
  std::condition_variable backoff_cv_;  // Wakes backoff sleeps (stop, new version).
  std::condition_variable done_cv_;     // Thread completion.
  // Everything below is guarded by mu_.
  std::mt19937_64 rng_;
  bool started_ = false;
  bool draining_ = false;
  bool stop_ = false;
  bool shutdown_done_ = false;
  bool shutdown_clean_ = true;
  bool session_thread_done_ = false;
  bool gen_done_ = false;
  uint64_t session_epoch_ = 0;
  bool session_up_ = false;
  std::shared_ptr<Outbox> outbox_;
  // The session's Welcome: the learner takes RolloutBatch messages, and the
  // largest ActorMessage it accepts.
  bool session_batches_ = false;
  uint64_t session_max_message_bytes_ = 0;
  std::shared_ptr<grpc::ClientContext> session_ctx_;
  std::shared_ptr<grpc::ClientContext> weight_ctx_;
  uint64_t latest_known_version_ = 0;
  std::deque<HeldLease> pending_;
  std::vector<HeldLease> in_batch_;
  uint64_t batch_epoch_ = 0;
  bool gen_busy_ = false;
  bool abandon_batch_ = false;
  policy::Transformer model_{nullptr};   // Used by the generation thread.
  policy::Transformer staged_{nullptr};  // Verified, waiting for the next batch.
  uint64_t staged_version_ = 0;
  // A model no one uses (built at start for the first version, the one
  // generation used before the last swap, or a staged one a newer version
  // replaced): the next version is loaded into it. Building a model instead
  // costs its allocation and random initialisation: ~12x the load itself for
  // a 135 MB model here (122-135 ms + 11-12 ms against 11-12 ms;
  // bench/policy_bench, [install]).
  policy::Transformer spare_{nullptr};
  ActorStats stats_;
};

absl::Status ActorImpl::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
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
  auto channel = grpc::CreateCustomChannel(options_.learner_address, creds, args);
  session_channel_ = channel;
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

double ActorImpl::BackoffSeconds(int failures) {
  const double base = options_.actor.reconnect_initial_s *
                      std::pow(2.0, std::min(std::max(failures - 1, 0), 30));
  const double capped = std::min(base, options_.actor.reconnect_max_s);
  std::lock_guard<std::mutex> lock(mu_);
  // "Equal jitter": half fixed, half uniform, so actors restarted together
  // spread out but never hammer the learner faster than half the backoff.
  return capped * (0.5 + 0.5 * std::uniform_real_distribution<double>(0, 1)(rng_));
}

// ---------------------------------------------------------------- session

void ActorImpl::SessionLoop() {
  int failures = 0;
  bool first = true;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_ || draining_) break;
      if (!first) ++stats_.reconnects;
    }
    if (!first) metrics_.reconnects.Increment();
    first = false;
    const bool established = RunOneSession();
    failures = established ? 1 : failures + 1;
    const double delay = BackoffSeconds(failures);
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_ || draining_) break;
    backoff_cv_.wait_for(lock, Seconds(delay), [&] { return stop_ || draining_; });
  }
  std::lock_guard<std::mutex> lock(mu_);
  session_thread_done_ = true;
  done_cv_.notify_all();
}

bool ActorImpl::RunOneSession() {
  auto ctx = std::make_shared<grpc::ClientContext>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ || draining_) return false;
    session_ctx_ = ctx;
  }
  AttachToken(ctx.get(), options_.auth_token);
  auto stream = OpenSession(session_channel_.get(), ctx.get());
  rlvr::v1::ActorMessage hello_msg;
  rlvr::v1::Hello* hello = hello_msg.mutable_hello();
  hello->set_actor_id(options_.actor_id);
  hello->set_incarnation(incarnation_);
  hello->set_capacity(capacity_);
  hello->set_batch_messages(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
    hello->set_have_version(std::max(policy_version_.load(), staged_version_));
  }
  rlvr::v1::LearnerMessage msg;
  bool welcomed =
      stream->Write(EncodeActorMessage(hello_msg)) && stream->Read(&msg) && msg.has_welcome();
  if (welcomed && msg.welcome().vocab_size() != 0 &&
      static_cast<int>(msg.welcome().vocab_size()) != vocab_size_) {
    LOG(ERROR) << "learner vocab_size " << msg.welcome().vocab_size() << " != actor's "
               << vocab_size_ << "; closing the session";
    welcomed = false;
  }
  if (!welcomed) {
    ctx->TryCancel();
    grpc::Status status = stream->Finish();
    LOG_EVERY_N(WARNING, 10) << "session with " << options_.learner_address
                             << " not established: " << status.error_code() << " "
                             << status.error_message();
    std::lock_guard<std::mutex> lock(mu_);
    session_ctx_.reset();
    return false;
  }

  const rlvr::v1::Welcome welcome = msg.welcome();
  auto outbox = std::make_shared<Outbox>(static_cast<size_t>(2 * capacity_ + 16));
  uint64_t epoch;
  bool rewound = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t held = std::max(policy_version_.load(), staged_version_);
    if (welcome.latest_version() > 0 && welcome.latest_version() < held) {
      // The learner went back in time (resumed from an older checkpoint):
      // our weights are from a future it will never accept. Drop them and
      // fetch its newest version from scratch.
      rewound = true;
      model_ = policy::Transformer{nullptr};
      staged_ = policy::Transformer{nullptr};
      staged_version_ = 0;
      policy_version_.store(0);
      latest_known_version_ = welcome.latest_version();
      metrics_.policy_version.Set(0);
      if (weight_ctx_) weight_ctx_->TryCancel();
    }
    epoch = ++session_epoch_;
    session_up_ = true;
    outbox_ = outbox;
    session_batches_ = welcome.batch_messages();
    session_max_message_bytes_ = welcome.max_message_bytes();
    latest_known_version_ = std::max(latest_known_version_, welcome.latest_version());
    ++stats_.sessions;
    // A shutdown that began while we were connecting closes this session at once.
    if (draining_ || stop_) outbox->Close(/*graceful=*/true);
  }
  backoff_cv_.notify_all();  // The learner is reachable: retry weights now.
  if (rewound) {
    LOG(WARNING) << "learner's latest version " << welcome.latest_version()
                 << " is older than ours; dropped our weights to refetch";
  }
  metrics_.session_up.Set(1);
  UpdateHealth();
  LOG(INFO) << "actor session " << welcome.session_id() << " established with "
            << options_.learner_address << " (latest version " << welcome.latest_version()
            << ", max lag " << welcome.max_policy_lag() << ")";

  // The writer owns Write/WritesDone; this thread owns Read; Finish comes
  // after both (gRPC's sync stream allows one reader and one writer at once).
  std::thread writer([&stream, &ctx, outbox, pool = &group_pool_] {
    rlvr::v1::ActorMessage out;
    bool ok = true;
    while (ok && outbox->Pop(&out)) {
      ok = stream->Write(EncodeActorMessage(out));
      pool->Give(std::move(out));
    }
    if (ok && outbox->graceful()) {
      stream->WritesDone();
    } else if (!ok) {
      ctx->TryCancel();
    }
  });

  while (stream->Read(&msg)) {
    switch (msg.kind_case()) {
      case rlvr::v1::LearnerMessage::kLease:
        HandleLease(epoch, std::move(*msg.mutable_lease()));
        break;
      case rlvr::v1::LearnerMessage::kAck:
        HandleAck(msg.ack());
        break;
      case rlvr::v1::LearnerMessage::kLeaseBatch:
        for (rlvr::v1::WorkLease& lease : *msg.mutable_lease_batch()->mutable_leases()) {
          HandleLease(epoch, std::move(lease));
        }
        break;
      case rlvr::v1::LearnerMessage::kAckBatch:
        for (const rlvr::v1::Ack& ack : msg.ack_batch().acks()) HandleAck(ack);
        break;
      case rlvr::v1::LearnerMessage::kWeightsAvailable: {
        std::lock_guard<std::mutex> lock(mu_);
        latest_known_version_ = std::max(latest_known_version_, msg.weights_available().version());
        backoff_cv_.notify_all();
        break;
      }
      default:
        break;
    }
  }

  {
    std::lock_guard<std::mutex> lock(mu_);
    session_up_ = false;
    outbox_.reset();
    session_ctx_.reset();
    // The learner re-queues every lease of a broken session; drop ours.
    stats_.leases_dropped += pending_.size();
    pending_.clear();
    UpdateLeaseGaugeLocked();
  }
  gen_cv_.notify_all();
  outbox->Close(/*graceful=*/false);
  writer.join();
  grpc::Status status = stream->Finish();
  metrics_.session_up.Set(0);
  UpdateHealth();
  LOG(INFO) << "actor session ended: " << status.error_code() << " " << status.error_message();
  return true;
}

void ActorImpl::HandleLease(uint64_t epoch, rlvr::v1::WorkLease lease) {
  const uint64_t id = lease.lease_id();
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.leases_received;
  if (draining_ || stop_) {
    ReturnLeasesLocked(epoch, {id}, "shutting down");
    return;
  }
  absl::Status valid = ValidateLease(lease, vocab_size_, options_.model.max_seq_len);
  if (!valid.ok()) {
    LOG_EVERY_N(WARNING, 10) << "returning invalid lease " << id << ": " << valid.message();
    ReturnLeasesLocked(epoch, {id}, absl::StrCat("invalid lease: ", valid.message()));
    return;
  }
  if (HeldLocked() >= capacity_) {
    LOG_EVERY_N(WARNING, 10) << "learner granted more than capacity " << capacity_
                             << "; returning lease " << id;
    ReturnLeasesLocked(epoch, {id}, "over capacity");
    return;
  }
  if (lease.min_policy_version() > latest_known_version_) {
    // Evidence of a newer version: wake a weight watch waiting in backoff.
    latest_known_version_ = lease.min_policy_version();
    backoff_cv_.notify_all();
  }
  pending_.push_back(HeldLease{std::move(lease), epoch, Clock::now()});
  stats_.max_leases_held = std::max(stats_.max_leases_held, HeldLocked());
  UpdateLeaseGaugeLocked();
  gen_cv_.notify_all();
}

void ActorImpl::HandleAck(const rlvr::v1::Ack& ack) {
  if (ack.accepted()) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.groups_accepted;
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.groups_rejected;
  }
  metrics_.groups_rejected.Increment();
  LOG_EVERY_N(WARNING, 10) << "learner rejected group of lease " << ack.lease_id() << ": "
                           << rlvr::v1::RejectReason_Name(ack.reason()) << " " << ack.detail();
}

void ActorImpl::ReturnLeasesLocked(uint64_t epoch, const std::vector<uint64_t>& ids,
                                   const std::string& reason) {
  if (ids.empty() || !session_up_ || epoch != session_epoch_ || !outbox_) return;
  rlvr::v1::ActorMessage msg;
  auto* ret = msg.mutable_return_leases();
  for (uint64_t id : ids) ret->add_lease_ids(id);
  ret->set_reason(reason);
  if (outbox_->Push(std::move(msg))) stats_.leases_returned += ids.size();
}

int ActorImpl::HeldLocked() const {
  int held = static_cast<int>(pending_.size());
  if (session_up_ && batch_epoch_ == session_epoch_) held += static_cast<int>(in_batch_.size());
  return held;
}

void ActorImpl::UpdateLeaseGaugeLocked() { metrics_.leases_in_flight.Set(HeldLocked()); }

void ActorImpl::UpdateHealth() {
  std::lock_guard<std::mutex> health_lock(health_mu_);
  bool serving;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool has_weights = policy_version_.load() > 0 || !staged_.is_empty();
    serving = has_weights && session_up_ && !draining_ && !stop_;
  }
  if (serving != serving_.load()) {
    LOG(INFO) << (serving ? "actor ready: SERVING with policy version "
                          : "actor NOT_SERVING (policy version ")
              << policy_version_.load() << (serving ? "" : ")");
  }
  serving_.store(serving);
  if (health_server_) health_server_->GetHealthCheckService()->SetServingStatus(serving);
}

// ---------------------------------------------------------------- weights

void ActorImpl::WeightLoop() {
  int failures = 0;
  // One assembler for the actor's lifetime: the buffer of each version is
  // reused by the next, across reconnects too. Its first buffer is faulted in
  // now, while there are no weights to wait for anyway, so that the first
  // version is received as fast as the later ones.
  WeightAssembler assembler;
  assembler.Reserve(policy::WeightsBlobBytes(options_.model, vocab_size_));
  // Likewise the model the first version is loaded into.
  try {
    torch::NoGradGuard no_grad;
    policy::Transformer first(options_.model, vocab_size_);
    std::lock_guard<std::mutex> lock(mu_);
    if (spare_.is_empty()) spare_ = first;
  } catch (const std::exception& e) {
    LOG(WARNING) << "could not build a model ahead of the first weights: " << e.what();
  }
  while (true) {
    auto ctx = std::make_shared<grpc::ClientContext>();
    rlvr::v1::WatchWeightsRequest request;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) break;
      weight_ctx_ = ctx;
      request.set_have_version(std::max(policy_version_.load(), staged_version_));
    }
    request.set_watcher_id(options_.actor_id);
    AttachToken(ctx.get(), options_.auth_token);
    // Chunks are checked and assembled on gRPC's threads; each complete
    // blob is installed here (model code stays off those threads).
    WeightStream stream(weight_channel_.get(), ctx.get(), request, &assembler);
    bool failed = false;
    bool installed = false;
    WeightStream::Event event = stream.Next();
    for (; event.kind == WeightStream::Event::kBlob; event = stream.Next()) {
      absl::Status status = InstallBlob(event.blob, event.version);
      if (status.ok()) {
        metrics_.weight_sync_seconds.Observe(SecondsSince(event.first_chunk));
        installed = true;
      } else {
        LOG(WARNING) << "discarding weight transfer of version " << event.version << ": "
                     << status;
        failed = true;
        ctx->TryCancel();
      }
      // The weights are copied into the model: the next version reuses the buffer.
      stream.Resume(std::move(event.blob));
    }
    if (!event.transfer_error.ok()) {
      LOG(WARNING) << "discarding weight transfer of version " << event.chunk_version << ": "
                   << event.transfer_error;
      failed = true;
    } else if (!failed && event.mid_transfer) {
      LOG(WARNING) << "weight stream ended mid-transfer of version " << assembler.version();
      failed = true;
    }
    const grpc::Status& status = event.status;
    if (failed) {
      metrics_.weight_sync_failures.Increment();
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.weight_sync_failures;
    }
    failures = (installed && !failed) ? 1 : failures + 1;
    const double delay = BackoffSeconds(failures);
    std::unique_lock<std::mutex> lock(mu_);
    weight_ctx_.reset();
    if (stop_) break;
    const uint64_t have = std::max(policy_version_.load(), staged_version_);
    // Retry after the backoff, or as soon as the learner announces a version
    // we do not have (it is evidently up).
    backoff_cv_.wait_for(lock, Seconds(delay),
                         [&] { return stop_ || latest_known_version_ > have; });
    if (!failed && !installed && !status.ok()) {
      LOG_EVERY_N(INFO, 20) << "weight watch ended: " << status.error_code() << " "
                            << status.error_message();
    }
  }
}

absl::Status ActorImpl::InstallBlob(const std::string& blob, uint64_t announced_version) {
  uint64_t version = 0;
  policy::Transformer target{nullptr};
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::swap(target, spare_);
  }
  const bool reused = !target.is_empty();
  absl::Status loaded;
  try {
    torch::NoGradGuard no_grad;
    if (!reused) target = policy::Transformer(options_.model, vocab_size_);
    // On a bad blob LoadWeights leaves the model untouched; either way its
    // values are all overwritten by the next load.
    loaded = policy::LoadWeights(blob, target, &version);
    target->eval();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("loading weights: ", e.what()));  // `target` dropped.
  }
  if (loaded.ok() && version != announced_version) {
    loaded = absl::DataLossError(absl::StrCat("blob holds version ", version,
                                              ", chunks announced ", announced_version));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!loaded.ok() || version <= std::max(policy_version_.load(), staged_version_)) {
      if (spare_.is_empty()) spare_ = target;
      return loaded;
    }
    // A staged version generation never took is replaced: free now.
    if (!staged_.is_empty() && spare_.is_empty()) spare_ = staged_;
    staged_ = target;
    staged_version_ = version;
    ++stats_.weight_syncs;
    if (reused) ++stats_.weight_loads_reused;
    latest_known_version_ = std::max(latest_known_version_, version);
  }
  gen_cv_.notify_all();
  LOG(INFO) << "actor received weights of policy version " << version << " (" << blob.size()
            << " bytes" << (reused ? ", loaded into an existing model)" : ")");
  UpdateHealth();
  return absl::OkStatus();
}

// ---------------------------------------------------------------- generation

ActorImpl::LeaseFate ActorImpl::FateLocked(const HeldLease& held, int64_t now_ms) const {
  if (!session_up_ || held.epoch != session_epoch_) return LeaseFate::kDrop;
  const auto& lease = held.lease;
  if (lease.deadline_unix_ms() > 0 && now_ms > lease.deadline_unix_ms()) {
    return LeaseFate::kReturnExpired;
  }
  const uint64_t version = policy_version_.load();
  if (version == 0 || lease.min_policy_version() > version) {
    // The learner only asks for versions it has published, so the weights
    // are on their way (staged, or arriving on the watch stream): wait, but
    // not forever — a watch that keeps failing must not pin the credit.
    if (SecondsSince(held.received) > options_.stale_lease_wait_s) {
      return LeaseFate::kReturnStale;
    }
    return LeaseFate::kWait;
  }
  return LeaseFate::kReady;
}

bool ActorImpl::AnyActionableLocked() const {
  const int64_t now_ms = NowUnixMs();
  for (const HeldLease& h : pending_) {
    if (FateLocked(h, now_ms) != LeaseFate::kWait) return true;
  }
  return false;
}

void ActorImpl::GenerationLoop() {
  torch::NoGradGuard no_grad;
  while (true) {
    std::vector<HeldLease> batch;
    std::vector<uint64_t> stale, expired;
    policy::Transformer model{nullptr};
    uint64_t version = 0;
    uint64_t epoch = 0;
    bool swapped = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      // Timed: a lease waiting for weights becomes returnable with time.
      while (!(stop_ || draining_ || !staged_.is_empty() || AnyActionableLocked())) {
        gen_cv_.wait_for(lock, std::chrono::milliseconds(pending_.empty() ? 1000 : 100));
      }
      if (stop_ || draining_) break;
      // Weights change only here, between batches.
      if (!staged_.is_empty()) {
        // The previous model is free: the last batch's reference to it went
        // with the loop iteration.
        if (!model_.is_empty()) spare_ = model_;
        model_ = staged_;
        staged_ = policy::Transformer{nullptr};
        policy_version_.store(staged_version_);
        metrics_.policy_version.Set(static_cast<double>(staged_version_));
        swapped = true;
      }
      if (!model_.is_empty() && static_cast<int>(pending_.size()) < capacity_ &&
          options_.batch_fill_wait_s > 0 && AnyActionableLocked()) {
        gen_cv_.wait_for(lock, Seconds(options_.batch_fill_wait_s), [&] {
          return stop_ || draining_ || static_cast<int>(pending_.size()) >= capacity_;
        });
        if (stop_ || draining_) break;
      }
      const int64_t now_ms = NowUnixMs();
      std::deque<HeldLease> keep;
      for (HeldLease& h : pending_) {
        switch (FateLocked(h, now_ms)) {
          case LeaseFate::kReady:
            if (static_cast<int>(batch.size()) < capacity_) {
              batch.push_back(std::move(h));
            } else {
              keep.push_back(std::move(h));
            }
            break;
          case LeaseFate::kWait:
            keep.push_back(std::move(h));
            break;
          case LeaseFate::kDrop:
            ++stats_.leases_dropped;
            break;
          case LeaseFate::kReturnStale:
            stale.push_back(h.lease.lease_id());
            break;
          case LeaseFate::kReturnExpired:
            expired.push_back(h.lease.lease_id());
            break;
        }
      }
      pending_ = std::move(keep);
      ReturnLeasesLocked(session_epoch_, stale, "weights for min_policy_version did not arrive");
      ReturnLeasesLocked(session_epoch_, expired, "lease deadline passed");
      if (!batch.empty()) {
        in_batch_ = batch;
        batch_epoch_ = session_epoch_;
        epoch = batch_epoch_;
        gen_busy_ = true;
        abandon_batch_ = false;
        model = model_;
        version = policy_version_.load();
      }
      UpdateLeaseGaugeLocked();
    }
    if (swapped) {
      LOG(INFO) << "actor now generates with policy version " << policy_version_.load();
      UpdateHealth();
    }
    if (batch.empty()) continue;

    std::vector<const rlvr::v1::WorkLease*> leases;
    leases.reserve(batch.size());
    for (const HeldLease& h : batch) leases.push_back(&h.lease);
    absl::StatusOr<BatchResult> result =
        GenerateGroups(model, version, *tokenizer_, *task_, leases, &group_pool_);

    std::vector<uint64_t> failed_ids;
    {
      std::lock_guard<std::mutex> lock(mu_);
      gen_busy_ = false;
      const bool deliver =
          !abandon_batch_ && session_up_ && epoch == session_epoch_ && outbox_ != nullptr;
      if (!result.ok()) {
        LOG(ERROR) << "generation batch failed: " << result.status();
        if (deliver) {
          for (const HeldLease& h : batch) failed_ids.push_back(h.lease.lease_id());
          ReturnLeasesLocked(epoch, failed_ids, "generation error");
        }
      } else {
        ++stats_.batches;
        stats_.tokens_generated += result->tokens;
        stats_.generate_seconds += result->generate_seconds;
        if (deliver) {
          // The batch's groups finish together: as few messages as the
          // learner's Welcome allows (one RolloutBatch, answered by one AckBatch).
          for (rlvr::v1::ActorMessage& msg :
               PackGroups(std::move(result->groups), session_batches_,
                          session_max_message_bytes_)) {
            const int n = msg.has_group_batch() ? msg.group_batch().groups_size() : 1;
            if (outbox_->Push(std::move(msg))) {
              stats_.groups_sent += n;
              metrics_.groups_sent.Increment(n);
            }
          }
        } else if (!abandon_batch_) {
          // The session broke mid-batch: the learner re-leases this work.
          stats_.leases_dropped += batch.size();
        }
      }
      in_batch_.clear();
      UpdateLeaseGaugeLocked();
    }
    done_cv_.notify_all();
    if (result.ok()) {
      metrics_.tokens.Increment(static_cast<double>(result->tokens));
      metrics_.generation_seconds.Observe(result->total_seconds);
      if (result->completions > 0) {
        metrics_.reward_mean.Set(result->reward_sum / static_cast<double>(result->completions));
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  gen_done_ = true;
  done_cv_.notify_all();
}

// ---------------------------------------------------------------- shutdown

bool ActorImpl::Shutdown() {
  const auto deadline = Clock::now() + Seconds(options_.actor.shutdown_deadline_s);
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (shutdown_done_ || !started_) {
      shutdown_done_ = true;
      return shutdown_clean_;
    }
    if (draining_) {
      // Another thread is shutting down; wait for it.
      done_cv_.wait(lock, [&] { return shutdown_done_; });
      return shutdown_clean_;
    }
    draining_ = true;
  }
  LOG(INFO) << "actor shutting down (deadline " << options_.actor.shutdown_deadline_s << " s)";
  gen_cv_.notify_all();
  backoff_cv_.notify_all();
  UpdateHealth();

  bool clean = true;
  {
    std::unique_lock<std::mutex> lock(mu_);
    // Finish the batch in progress if it completes within the deadline.
    done_cv_.wait_until(lock, deadline, [&] { return !gen_busy_; });
    std::vector<uint64_t> unfinished;
    if (gen_busy_) {
      abandon_batch_ = true;
      if (batch_epoch_ == session_epoch_) {
        for (const HeldLease& h : in_batch_) unfinished.push_back(h.lease.lease_id());
      }
      LOG(WARNING) << "abandoning a generation batch of " << in_batch_.size()
                   << " leases at the shutdown deadline";
    }
    for (const HeldLease& h : pending_) {
      if (h.epoch == session_epoch_) unfinished.push_back(h.lease.lease_id());
    }
    pending_.clear();
    ReturnLeasesLocked(session_epoch_, unfinished, "sigterm");
    UpdateLeaseGaugeLocked();
    // Half-close after the queued groups and returns are written; the
    // learner then ends the stream and the session thread finishes.
    if (outbox_) outbox_->Close(/*graceful=*/true);
    if (!done_cv_.wait_until(lock, deadline, [&] { return session_thread_done_; })) {
      if (session_ctx_) session_ctx_->TryCancel();
    }
    stop_ = true;
    if (weight_ctx_) weight_ctx_->TryCancel();
  }
  gen_cv_.notify_all();
  backoff_cv_.notify_all();
  if (session_thread_.joinable()) session_thread_.join();
  if (weight_thread_.joinable()) weight_thread_.join();
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (done_cv_.wait_until(lock, deadline + Seconds(kJoinGraceS), [&] { return gen_done_; })) {
      lock.unlock();
      if (gen_thread_.joinable()) gen_thread_.join();
    } else {
      clean = false;
      LOG(WARNING) << "generation thread still busy after the shutdown deadline";
    }
  }
  if (health_server_) {
    health_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  }
  metrics_.session_up.Set(0);
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_done_ = true;
    shutdown_clean_ = clean;
  }
  done_cv_.notify_all();
  LOG(INFO) << "actor stopped" << (clean ? "" : " (generation abandoned)");
  return clean;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Actor>> Actor::Create(
    const ActorOptions& options, std::shared_ptr<prometheus::Registry> registry) {
  if (options.learner_address.empty()) {
    return absl::InvalidArgumentError("actor: learner address is required");
  }
  if (options.actor.max_batch_prompts < 1) {
    return absl::InvalidArgumentError("actor: max_batch_prompts must be >= 1");
  }
  if (options.actor_id.empty() || options.actor_id.size() > 128) {
    return absl::InvalidArgumentError("actor: actor_id must be 1..128 bytes");
  }
  std::unique_ptr<Tokenizer> tokenizer = MakeCharTokenizer();
  TaskOptions task_options;
  task_options.load_prompts = false;  // The actor only verifies.
  ASSIGN_OR_RETURN(std::unique_ptr<Task> task, MakeTask(options.task, *tokenizer, task_options));
  return std::unique_ptr<Actor>(
      new ActorImpl(options, std::move(registry), std::move(tokenizer), std::move(task)));
}

}  // namespace rlvr::actor
