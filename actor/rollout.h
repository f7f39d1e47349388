// Turning leased prompts into scored RolloutGroups: the actor's model-facing
// step, kept free of networking so that it can be tested and benchmarked on
// its own.
//
// A batch of leases becomes one policy::Generate call per distinct set of
// sampling parameters (normally exactly one): every prompt is repeated
// group_size times and row j of a lease samples with RowSeed(lease seed, j),
// so a group's completions depend only on (weights, prompt, lease seed,
// sampling params), never on which other leases shared the batch.
//
// Thread-compatible: functions touch only their arguments; the model must not
// be used concurrently by another thread.
#ifndef RLVR_ACTOR_ROLLOUT_H_
#define RLVR_ACTOR_ROLLOUT_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actor/group_pool.h"
#include "common/policy/model.h"
#include "common/policy/sampler.h"
#include "common/tasks/task.h"
#include "common/tokenizer/tokenizer.h"
#include "rlvr/v1/rollout.pb.h"
#include "rlvr/v1/session.pb.h"

namespace rlvr::actor {

// Seed of row `row_in_group` of a lease whose SamplingParams.seed is
// `lease_seed` (a SplitMix64 mix of both, so neighbouring seeds decorrelate).
uint64_t RowSeed(uint64_t lease_seed, int row_in_group);

// The sampler options a lease asks for.
policy::SamplingOptions SamplingFromLease(const rlvr::v1::SamplingParams& params);

// Checks a lease before it is accepted for generation: group_size >= 1,
// a non-empty prompt of in-vocabulary tokens, sane sampling parameters and a
// prompt + completion that fits the model's max_seq_len. INVALID_ARGUMENT
// with the reason otherwise.
absl::Status ValidateLease(const rlvr::v1::WorkLease& lease, int vocab_size, int max_seq_len);

struct BatchResult {
  // One group per input lease, in input order, policy_version filled in.
  std::vector<rlvr::v1::RolloutGroup> groups;
  // Wall time inside policy::Generate (the model's forward passes), seconds.
  double generate_seconds = 0;
  // Wall time of the whole call (generation + decoding + verification).
  double total_seconds = 0;
  // Completion tokens sampled (stop tokens included).
  int64_t tokens = 0;
  // Sum of rewards and number of completions, for the reward-mean gauge.
  double reward_sum = 0;
  int64_t completions = 0;
};

// Generates and scores the groups of `leases` (each previously accepted by
// ValidateLease) with `model`, whose weights are policy version `version`.
// Completion text for the verifier = tokenizer.Decode(tokens without the
// trailing stop token); the reference answer comes from the lease.
// generation_seconds of every group is the batch's total_seconds (the groups
// were produced together). Errors from LibTorch become INTERNAL. The groups
// are built in groups taken from `pool` (nullable) where it has some.
absl::StatusOr<BatchResult> GenerateGroups(policy::Transformer& model, uint64_t version,
                                           const Tokenizer& tokenizer, const Task& task,
                                           const std::vector<const rlvr::v1::WorkLease*>& leases,
                                           GroupPool* pool = nullptr);

}  // namespace rlvr::actor

#endif  // RLVR_ACTOR_ROLLOUT_H_
