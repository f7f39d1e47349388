// Shared by the benchmarks that time the learner's update: wall-clock
// helpers and synthetic, arithmetic-shaped rollout groups. Torch-free.
#ifndef RLVR_BENCH_BENCH_GROUPS_H_
#define RLVR_BENCH_BENCH_GROUPS_H_

#include <algorithm>
#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "learner/core/group.h"

namespace rlvr::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// `n` groups of `g` rollouts: BOS + 6 prompt tokens; completions of 2..8
// tokens drawn from [3, vocab); with probability `shared_first` a rollout
// starts with its group's common first token (shared prefixes, where the
// estimators' cancellation matters). Even rollouts are rewarded, so every
// group has mixed rewards and is trained on. Behaviour log-probs -4.
inline std::vector<learner::Group> MakeBenchGroups(int n, int g, int vocab, uint64_t seed,
                                                   double shared_first) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> tok(3, vocab - 1), len(2, 8);
  std::bernoulli_distribution coin(shared_first);
  std::vector<learner::Group> groups(n);
  for (int i = 0; i < n; ++i) {
    groups[i].prompt_id = "b" + std::to_string(i);
    groups[i].prompt = {0};
    for (int k = 0; k < 6; ++k) groups[i].prompt.push_back(tok(rng));
    const int first = tok(rng);
    for (int j = 0; j < g; ++j) {
      learner::Rollout r;
      const int l = len(rng);
      for (int k = 0; k < l; ++k) r.tokens.push_back(k == 0 && coin(rng) ? first : tok(rng));
      r.behaviour_logprobs.assign(r.tokens.size(), -4.0f);
      r.reward = j % 2 == 0 ? 1.0 : 0.0;
      groups[i].rollouts.push_back(std::move(r));
    }
  }
  return groups;
}

}  // namespace rlvr::bench

#endif  // RLVR_BENCH_BENCH_GROUPS_H_
