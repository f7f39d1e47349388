#include "learner/trainer/trainer_test_data.h"

#include <torch/torch.h>

#include <random>

#include "absl/strings/str_cat.h"
#include "common/tokenizer/tokenizer.h"

namespace rlvr::learner::testing {

std::vector<Group> MakeTestGroups(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&rng](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const int bos = MakeCharTokenizer()->bos_id();
  std::vector<Group> groups;
  for (int i = 0; i < n; ++i) {
    Group g;
    g.prompt_id = absl::StrCat("p", seed, "_", i);
    g.prompt_index = i;
    g.prompt.push_back(bos);
    for (int t = uniform(2, 5); t > 0; --t) g.prompt.push_back(uniform(10, 60));
    for (int r = 0; r < 4; ++r) {
      Rollout ro;
      for (int t = uniform(1, kTestMaxNewTokens); t > 0; --t) {
        ro.tokens.push_back(uniform(10, 60));
        ro.behaviour_logprobs.push_back(-1.0f - 0.1f * uniform(0, 20));
      }
      ro.reward = i == 0 ? 0.0 : static_cast<double>((r + i) % 3 == 0);
      g.rollouts.push_back(std::move(ro));
    }
    groups.push_back(std::move(g));
  }
  return groups;
}

torch::Tensor FlatParams(policy::Transformer& model) {
  std::vector<torch::Tensor> pieces;
  for (const auto& p : model->parameters()) {
    pieces.push_back(p.detach().reshape(-1).to(torch::kCPU, torch::kFloat64));
  }
  return torch::cat(pieces);
}

}  // namespace rlvr::learner::testing
