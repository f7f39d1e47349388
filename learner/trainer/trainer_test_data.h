// Test data shared by the trainer's tests (not part of the library): the
// groups both the unit tests and the device checks train on, and the
// parameters of a model as one float64 CPU tensor for comparisons.
#ifndef RLVR_LEARNER_TRAINER_TRAINER_TEST_DATA_H_
#define RLVR_LEARNER_TRAINER_TRAINER_TEST_DATA_H_

#include <cstdint>
#include <vector>

#include "common/policy/model.h"
#include "learner/core/group.h"

namespace rlvr::learner::testing {

// Completions in MakeTestGroups are 1..kTestMaxNewTokens tokens long.
inline constexpr int kTestMaxNewTokens = 6;

// `n` groups of 4 rollouts with mixed rewards (group 0 all zero, so the
// estimator drops it), deterministic in `seed`; prompts start with the char
// tokenizer's BOS, and every token id fits the char and the HF fixtures'
// vocabularies.
std::vector<Group> MakeTestGroups(int n, uint64_t seed);

// Every parameter of `model`, flattened and concatenated, on the CPU in
// float64.
torch::Tensor FlatParams(policy::Transformer& model);

}  // namespace rlvr::learner::testing

#endif  // RLVR_LEARNER_TRAINER_TRAINER_TEST_DATA_H_
