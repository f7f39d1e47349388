// ActorImpl: the threaded shell of the actor (see actor/actor.h for what it
// guarantees). It owns the mutex, the threads and gRPC; every decision about
// leases is LeaseBook's (actor/lease_book.h) and every decision about which
// model loads or generates is ModelSlots' (actor/model_slots.h); rollout.h
// turns leases into groups. Internal to actor/.
//
// Its member functions live in one file per thread, each with its contract:
//   actor.cc            Create, Start, Shutdown, health, stats, shared helpers
//   session_loop.cc     the session thread (connect, Hello/Welcome, read) and
//                       its per-session writer thread
//   weight_loop.cc      the weight thread (WatchWeights, load, stage)
//   generation_loop.cc  the generation thread, static batching (swap, batch,
//                       generate, send)
//   engine_loop.cc      the generation thread, continuous batching (swap when
//                       idle, leases into the engine, step, send each group)
//
// Lock order: health_mu_ -> mu_. Nothing blocks on the network or runs model
// code while holding mu_ (Outbox::Push never blocks).
#ifndef RLVR_ACTOR_ACTOR_IMPL_H_
#define RLVR_ACTOR_ACTOR_IMPL_H_

#include <grpcpp/grpcpp.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "actor/actor.h"
#include "actor/actor_metrics.h"
#include "actor/group_pool.h"
#include "actor/lease_book.h"
#include "actor/model_slots.h"
#include "actor/outbox.h"
#include "common/policy/engine.h"
#include "common/policy/model.h"
#include "common/policy/placement.h"
#include "common/tasks/task.h"
#include "common/tokenizer/tokenizer.h"
#include "rlvr/v1/session.pb.h"

namespace rlvr::actor {

// The engine options of `options` (actor.max_batch_rows, kv_cache_tokens
// with its default resolved against model.max_seq_len, kv_block_tokens).
policy::EngineOptions EngineOptionsFor(const ActorOptions& options);

class ActorImpl final : public Actor {
 public:
  // `engine`: the continuous-batching engine (null for actor.engine = static).
  ActorImpl(const ActorOptions& options, std::shared_ptr<prometheus::Registry> registry,
            std::unique_ptr<Tokenizer> tokenizer, int vocab_size, std::unique_ptr<Task> task,
            const policy::Placement& placement, std::unique_ptr<policy::Engine> engine);
  ~ActorImpl() override;

  absl::Status Start() override;
  bool Shutdown() override;
  int health_port() const override { return health_port_; }
  uint64_t policy_version() const override { return policy_version_.load(); }
  bool serving() const override { return serving_.load(); }
  ActorStats stats() const override;

 private:
  // session_loop.cc. The session thread: sessions one after another, with
  // backoff, until draining or stopped; sets session_thread_done_.
  void SessionLoop();
  // One session from connect to end; true if it was established (Welcome).
  bool RunOneSession();
  void HandleLease(uint64_t session, rlvr::v1::WorkLease lease);
  void HandleAck(const rlvr::v1::Ack& ack);

  // weight_loop.cc. The weight thread: one WatchWeights call after another
  // until stopped; each verified blob is loaded into a free model slot and
  // staged.
  void WeightLoop();
  absl::Status InstallBlob(const std::string& blob, uint64_t announced_version);
  // A model of the configured shape with unspecified weights (the one place
  // models are made). May throw c10::Error.
  policy::Transformer NewModel() const;

  // generation_loop.cc. The generation thread: StaticGenerationLoop or
  // ContinuousGenerationLoop (engine_loop.cc); sets gen_done_ when it ends.
  void GenerationLoop();
  // Between batches swaps staged weights in, takes a batch from the book,
  // generates it without the lock and queues its groups.
  void StaticGenerationLoop();
  // engine_loop.cc. Swaps staged weights in while the engine holds no group;
  // otherwise moves leases from the book into the engine as it has room,
  // runs engine steps without the lock and queues each finished group.
  void ContinuousGenerationLoop();
  // Queues the groups of `groups` (of leases the book said to submit) on the
  // open session, as few messages as its Welcome allows.
  void SendGroupsLocked(std::vector<rlvr::v1::RolloutGroup> groups)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Publishes the engine's (or a static batch's) figures: stats_ and metrics.
  void NoteEngineStatsLocked(const policy::EngineStats& now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // actor.cc.
  // Queues a ReturnLeases for `give_back` on the open session (if any ids).
  void SendGiveBackLocked(const GiveBack& give_back) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateLeaseGaugeLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateHealth() ABSL_LOCKS_EXCLUDED(mu_, health_mu_);
  // Reconnect delay after `failures` failed attempts in a row (>= 1), with jitter.
  absl::Duration Backoff(int failures) ABSL_LOCKS_EXCLUDED(mu_);
  bool StoppingLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || draining_; }

  const ActorOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;
  ActorMetrics metrics_;
  // The single place the tokenizer lives (made in Actor::Create).
  const std::unique_ptr<Tokenizer> tokenizer_;
  const std::unique_ptr<Task> task_;
  const int vocab_size_;
  // actor.device and model.compute_dtype, resolved in Actor::Create: the
  // models' device, their parameters in the compute dtype.
  const policy::Placement placement_;
  const int capacity_;
  std::string incarnation_;
  // Sent groups, handed back by the session writer for generation to fill.
  GroupPool group_pool_;
  // The continuous-batching engine (its KV pool allocated in Create); null
  // for static batching. Used only by the generation thread.
  const std::unique_ptr<policy::Engine> engine_;
  // The engine's figures when they were last published (NoteEngineStatsLocked).
  policy::EngineStats engine_noted_ ABSL_GUARDED_BY(mu_);

  // Set in Start(), before the threads; read-only after.
  std::shared_ptr<grpc::Channel> session_channel_;
  // Weights travel on their own channel (connection) with large HTTP/2
  // windows, so a 4 MiB chunk never queues session messages behind it.
  std::shared_ptr<grpc::Channel> weight_channel_;
  std::unique_ptr<grpc::Server> health_server_;
  int health_port_ = 0;
  std::thread session_thread_;
  std::thread weight_thread_;
  std::thread gen_thread_;

  std::atomic<uint64_t> policy_version_{0};  // slots_.active_version(), lock-free.
  std::atomic<bool> serving_{false};
  absl::Mutex health_mu_;  // Serialises health computations and updates.

  mutable absl::Mutex mu_;
  absl::CondVar gen_cv_;      // Leases queued, weights staged, stop.
  absl::CondVar backoff_cv_;  // Wakes backoff sleeps (stop, new version, session up).
  absl::CondVar done_cv_;     // A batch or a thread finished.

  LeaseBook book_ ABSL_GUARDED_BY(mu_);
  ModelSlots slots_ ABSL_GUARDED_BY(mu_);
  // The models, by slot (empty until built). The handle of a slot is copied
  // out under mu_ by the thread whose role holds it (ModelSlots), which then
  // uses the model without the lock.
  static_assert(ModelSlots::kSlots == 3);
  std::array<policy::Transformer, ModelSlots::kSlots> models_ ABSL_GUARDED_BY(mu_) = {
      nullptr, nullptr, nullptr};

  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;  // Shutdown began: no new batches.
  bool stop_ ABSL_GUARDED_BY(mu_) = false;      // Threads end.
  bool shutdown_done_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_clean_ ABSL_GUARDED_BY(mu_) = true;
  bool session_thread_done_ ABSL_GUARDED_BY(mu_) = false;
  bool gen_done_ ABSL_GUARDED_BY(mu_) = false;

  // The open session's writer queue and its Welcome: RolloutBatch allowed,
  // the largest ActorMessage the learner accepts. Set iff book_.session_open().
  std::shared_ptr<Outbox> outbox_ ABSL_GUARDED_BY(mu_);
  bool session_batches_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t session_max_message_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::shared_ptr<grpc::ClientContext> session_ctx_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<grpc::ClientContext> weight_ctx_ ABSL_GUARDED_BY(mu_);
  // Newest version the learner is known to have (Welcome, WeightsAvailable,
  // a lease's min_policy_version): wakes a weight watch in backoff.
  uint64_t latest_known_version_ ABSL_GUARDED_BY(mu_) = 0;
  // Counters kept here; lease counts come from book_ in stats().
  ActorStats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rlvr::actor

#endif  // RLVR_ACTOR_ACTOR_IMPL_H_
