// The generation thread of ActorImpl (actor/actor_impl.h): the static
// batching loop (actor.engine = static; engine_loop.cc has the continuous
// one).
//
// Contract: until Shutdown begins, waits for something to do (a lease ready,
// one to give back, weights staged), swaps staged weights in between batches
// only (ModelSlots), takes a batch from the LeaseBook, generates and scores
// it with rollout.h without holding mu_, and hands the outcome back to the
// book, which says whether to send the groups, give the leases back or drop
// them. Never waits on the network: groups go to the session's Outbox.
#include <glog/logging.h>
#include <torch/torch.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "actor/actor_impl.h"
#include "actor/rollout.h"
#include "actor/transport.h"

namespace rlvr::actor {

void ActorImpl::GenerationLoop() {
  if (engine_ != nullptr) {
    ContinuousGenerationLoop();
  } else {
    StaticGenerationLoop();
  }
  absl::MutexLock lock(&mu_);
  gen_done_ = true;
  done_cv_.SignalAll();
}

void ActorImpl::StaticGenerationLoop() {
  torch::NoGradGuard no_grad;
  while (true) {
    LeaseBook::Take take;
    ModelSlots::Use use;
    policy::Transformer model{nullptr};
    bool swapped = false;
    {
      absl::MutexLock lock(&mu_);
      // Timed: a lease waiting for weights becomes returnable with time.
      while (!(StoppingLocked() || slots_.staged_version() != 0 ||
               book_.Actionable(slots_.active_version(), absl::Now()))) {
        gen_cv_.WaitWithTimeout(&mu_, absl::Milliseconds(book_.queued() == 0 ? 1000 : 100));
      }
      if (StoppingLocked()) break;
      // Weights change only here, between batches.
      if (slots_.SwapIn()) {
        swapped = true;
        policy_version_.store(slots_.active_version());
        metrics_.policy_version.Set(static_cast<double>(slots_.active_version()));
      }
      const uint64_t version = slots_.active_version();
      if (version > 0 && book_.queued() < capacity_ && options_.batch_fill_wait_s > 0 &&
          book_.Actionable(version, absl::Now())) {
        const absl::Time until = absl::Now() + absl::Seconds(options_.batch_fill_wait_s);
        while (!StoppingLocked() && book_.queued() < capacity_ &&
               !gen_cv_.WaitWithDeadline(&mu_, until)) {
        }
        if (StoppingLocked()) break;
      }
      // Re-read: the weights may have been reset during the wait.
      take = book_.TakeBatch(slots_.active_version(), absl::Now());
      for (const GiveBack& g : take.give_back) SendGiveBackLocked(g);
      if (!take.batch.empty()) {
        use = slots_.BeginGeneration();
        model = models_[use.slot];
      }
      UpdateLeaseGaugeLocked();
    }
    if (swapped) {
      LOG(INFO) << "actor now generates with policy version " << policy_version_.load();
      UpdateHealth();
    }
    if (take.batch.empty()) continue;

    std::vector<const rlvr::v1::WorkLease*> leases;
    leases.reserve(take.batch.size());
    for (const rlvr::v1::WorkLease& lease : take.batch) leases.push_back(&lease);
    absl::StatusOr<BatchResult> result =
        GenerateGroups(model, use.version, *tokenizer_, *task_, leases, &group_pool_);
    model = policy::Transformer{nullptr};

    {
      absl::MutexLock lock(&mu_);
      slots_.EndGeneration();
      const LeaseBook::Finish finish = book_.FinishBatch(result.ok());
      if (!result.ok()) {
        LOG(ERROR) << "generation batch failed: " << result.status();
      } else {
        ++stats_.batches;
        stats_.tokens_generated += result->tokens;
        stats_.generate_seconds += result->generate_seconds;
        // A static batch in the engine's terms: every row of the batch is a
        // slot of every decode step.
        const policy::GenerateStats& g = result->generate;
        policy::EngineStats now = engine_noted_;
        now.prefill_seconds += g.prefill_seconds;
        now.decode_seconds += g.decode_seconds;
        now.row_steps += g.useful_row_steps;
        now.slot_steps += g.row_steps;
        now.prefill_tokens += g.prefill_tokens;
        NoteEngineStatsLocked(now);
        // The batch's cache, allocated for it and freed after it.
        stats_.kv_cache_bytes = g.kv_cache_bytes;
        stats_.kv_cache_peak_used_bytes =
            std::max(stats_.kv_cache_peak_used_bytes, g.kv_cache_bytes);
        metrics_.kv_cache_capacity_bytes.Set(static_cast<double>(g.kv_cache_bytes));
      }
      if (finish.kind == LeaseBook::Finish::kGiveBack) SendGiveBackLocked(finish.give_back);
      if (finish.kind == LeaseBook::Finish::kSubmit && !finish.revoked.empty()) {
        // Revoked while generating: the learner re-queued them; never sent.
        std::erase_if(result->groups, [&](const rlvr::v1::RolloutGroup& g) {
          return std::find(finish.revoked.begin(), finish.revoked.end(), g.lease_id()) !=
                 finish.revoked.end();
        });
      }
      if (finish.kind == LeaseBook::Finish::kSubmit) {
        // The batch's groups finish together.
        SendGroupsLocked(std::move(result->groups));
      }
      UpdateLeaseGaugeLocked();
      done_cv_.SignalAll();
    }
    if (result.ok()) {
      metrics_.tokens.Increment(static_cast<double>(result->tokens));
      metrics_.generation_seconds.Observe(result->total_seconds);
      if (result->completions > 0) {
        metrics_.reward_mean.Set(result->reward_sum / static_cast<double>(result->completions));
      }
    }
  }
}

}  // namespace rlvr::actor
