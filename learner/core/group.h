// In-memory rollout groups, as the learner's data path sees them after
// validation. Torch-free and gRPC-free: the learner converts a validated
// rlvr.v1.RolloutGroup into a Group; the learning core consumes Groups.
#ifndef RLVR_LEARNER_CORE_GROUP_H_
#define RLVR_LEARNER_CORE_GROUP_H_

#include <cstdint>
#include <string>
#include <vector>

namespace rlvr::learner {

// One sampled completion.
struct Rollout {
  std::vector<int> tokens;                // Completion token ids (no prompt), non-empty.
  std::vector<float> behaviour_logprobs;  // log pi_behaviour per token, same length as tokens.
  double reward = 0.0;                    // Verifier reward in [0, 1].
};

// The G completions of one prompt, all sampled by one policy version.
struct Group {
  std::string prompt_id;          // Dataset id of the prompt.
  uint64_t prompt_index = 0;      // Position of the prompt in the dataset (for ledgers).
  uint64_t lease_id = 0;          // Lease that produced the group.
  std::vector<int> prompt;        // Prompt token ids (BOS included); never carries loss.
  uint64_t policy_version = 0;    // Version whose weights generated every rollout.
  std::vector<Rollout> rollouts;  // G >= 2 rollouts.
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_GROUP_H_
