#include "learner/core/batcher.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/base/splitmix.h"
#include "learner/core/advantage.h"
#include "learner/core/packing.h"

namespace rlvr::learner {
namespace {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(SplitMix64(seed)) {}
  uint64_t Next() { return state_ = SplitMix64(state_); }
  // Uniform in [0, n); n > 0. The modulo bias is irrelevant at these sizes.
  uint64_t Below(uint64_t n) { return Next() % n; }
  template <typename T>
  void Shuffle(std::vector<T>* v) {
    for (size_t i = v->size(); i > 1; --i) std::swap((*v)[i - 1], (*v)[Below(i)]);
  }

 private:
  uint64_t state_;
};

// Seeds for the independent random streams of one plan.
constexpr uint64_t kDownsampleStream = 0x646f776e;  // "down"
constexpr uint64_t kEpochStream = 0x65706f63;       // "epoc"

uint64_t StreamSeed(uint64_t seed, uint64_t stream, uint64_t index) {
  return SplitMix64(SplitMix64(seed ^ SplitMix64(stream)) + index);
}

// Indices (into `subset`, or 0..n-1 when null) of positive and negative values.
void SplitBySign(const std::vector<double>& adv, const std::vector<int>* subset,
                 std::vector<int>* pos, std::vector<int>* neg) {
  for (size_t j = 0; j < adv.size(); ++j) {
    const int id = subset ? (*subset)[j] : static_cast<int>(j);
    if (adv[j] > 0) pos->push_back(id);
    if (adv[j] < 0) neg->push_back(id);
  }
}

// n random elements of each of *pos and *neg (seeded shuffle), ascending.
std::vector<int> KeepBalanced(std::vector<int>* pos, std::vector<int>* neg, size_t n, Rng* rng) {
  if (n == 0) return {};
  rng->Shuffle(pos);
  rng->Shuffle(neg);
  std::vector<int> kept(pos->begin(), pos->begin() + static_cast<std::ptrdiff_t>(n));
  kept.insert(kept.end(), neg->begin(), neg->begin() + static_cast<std::ptrdiff_t>(n));
  std::sort(kept.begin(), kept.end());
  return kept;
}

// Reward-balanced downsampling with recomputed advantages [D]: the fixed point
// of "keep k = min(n+, n-) random rollouts of each sign, then recompute the
// advantages on the kept subset". Signs are taken w.r.t. the current subset's
// mean, so a kept rollout whose sign flips on recomputation (continuous
// rewards: (0.21, 1, 0.19, 0.19, 0, 0, 0, 0) keeps (0.21, 1, 0, 0), where 0.21
// is below the new mean 0.3025) triggers another round on the subset.
// Terminates: a round that does not stop removes at least one rollout (either
// n+ != n- or some rollout has A = 0, so 2 min(n+, n-) < |S|), and |S| >= 0.
// Never ends at a non-empty zero-variance subset: a kept subset has at least
// one rollout above and one below the previous mean, hence unequal rewards.
// Returns the kept rollout indices (ascending; empty when the group has no
// rollout of one sign) and their recomputed advantages, which satisfy
// n+ = n- >= 1 and contain no zero.
std::vector<int> BalancedSubset(const std::vector<double>& rewards, bool std_norm, uint64_t seed,
                                size_t group, std::vector<double>* advantages) {
  Rng rng(StreamSeed(seed, kDownsampleStream, group));
  std::vector<int> subset(rewards.size());
  std::iota(subset.begin(), subset.end(), 0);
  while (true) {
    std::vector<double> sub_rewards;
    for (int i : subset) sub_rewards.push_back(rewards[i]);
    std::vector<double> adv = GroupAdvantages(sub_rewards, std_norm);
    std::vector<int> pos, neg;
    SplitBySign(adv, &subset, &pos, &neg);
    if (pos.size() == neg.size() && pos.size() * 2 == subset.size()) {
      *advantages = std::move(adv);
      return subset;
    }
    subset = KeepBalanced(&pos, &neg, std::min(pos.size(), neg.size()), &rng);
    if (subset.empty()) {
      advantages->clear();
      return subset;
    }
  }
}

// A group after advantage computation and balancing.
struct Kept {
  int group;
  std::vector<int> rollouts;
  std::vector<double> advantages;
  int64_t tokens = 0;
  double pos_unit = 0.0;  // Positive mass in balance_unit.
  double neg_unit = 0.0;  // Negative mass in balance_unit.
};

// Positive/negative mass of one rollout in the balance unit.
void AddUnit(const std::string& unit, double advantage, int64_t tokens, double* pos, double* neg) {
  double amount = 1.0;
  if (unit == "adv_mass") amount = std::fabs(advantage);
  if (unit == "tokens") amount = static_cast<double>(tokens);
  if (advantage > 0) *pos += amount;
  if (advantage < 0) *neg += amount;
}

// Splits n items into `parts` contiguous chunk sizes differing by at most 1.
std::vector<size_t> ChunkSizes(size_t n, size_t parts) {
  std::vector<size_t> sizes(parts, n / parts);
  for (size_t i = 0; i < n % parts; ++i) ++sizes[i];
  return sizes;
}

void FinishStep(const std::vector<Group>& groups, const ParsedEstimator& estimator,
                int max_new_tokens, OptimizerStep* step) {
  step->tokens = 0;
  step->rollouts = 0;
  for (SelectedGroup& sg : step->groups) {
    sg.tokens = 0;
    for (int r : sg.rollouts)
      sg.tokens += static_cast<int64_t>(groups[sg.group].rollouts[r].tokens.size());
    step->tokens += sg.tokens;
    step->rollouts += static_cast<int64_t>(sg.rollouts.size());
  }
  step->normalizer = estimator.StepNormalizer(static_cast<int64_t>(step->groups.size()),
                                              step->rollouts, step->tokens, max_new_tokens);
}

double Imbalance(double pos, double neg) {
  return pos + neg > 0 ? std::fabs(pos - neg) / (pos + neg) : 0.0;
}

absl::Status Validate(const std::vector<Group>& groups, const BatchingConfig& b,
                      int max_new_tokens) {
  auto one_of = [](const std::string& v, std::initializer_list<const char*> options) {
    for (const char* o : options) {
      if (v == o) return true;
    }
    return false;
  };
  if (!one_of(b.reward_balance, {"downsample", "pack", "none"})) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown batching.reward_balance: ", b.reward_balance));
  }
  if (!one_of(b.balance_unit, {"count", "adv_mass", "tokens"})) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown batching.balance_unit: ", b.balance_unit));
  }
  if (b.mini_batches < 1 || b.epochs < 1 || max_new_tokens < 1) {
    return absl::InvalidArgumentError("mini_batches, epochs and max_new_tokens must be >= 1");
  }
  if (b.reward_balance == "pack" && !b.query_preserved) {
    return absl::InvalidArgumentError(
        "batching.reward_balance=pack assigns whole groups; it needs "
        "batching.query_preserved=true");
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].rollouts.size() < 2) {
      return absl::InvalidArgumentError(absl::StrCat("group ", g, " has fewer than 2 rollouts"));
    }
    for (const Rollout& r : groups[g].rollouts) {
      if (r.tokens.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("group ", g, " has an empty completion"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

double StepNormalizer(const LossConfig& loss, int64_t groups, int64_t rollouts, int64_t tokens,
                      int max_new_tokens) {
  absl::StatusOr<ParsedEstimator> estimator = ParsedEstimator::Parse(loss);
  if (!estimator.ok()) return 1.0;
  return estimator->StepNormalizer(groups, rollouts, tokens, max_new_tokens);
}

absl::StatusOr<UpdatePlan> PlanUpdate(const std::vector<Group>& groups,
                                      const BatchingConfig& batching, const LossConfig& loss,
                                      int max_new_tokens, uint64_t seed) {
  absl::StatusOr<ParsedEstimator> estimator = ParsedEstimator::Parse(loss);
  if (!estimator.ok()) return estimator.status();
  return PlanUpdate(groups, batching, *estimator, max_new_tokens, seed);
}

absl::StatusOr<UpdatePlan> PlanUpdate(const std::vector<Group>& groups,
                                      const BatchingConfig& batching,
                                      const ParsedEstimator& estimator, int max_new_tokens,
                                      uint64_t seed) {
  absl::Status valid = Validate(groups, batching, max_new_tokens);
  if (!valid.ok()) return valid;

  UpdatePlan plan;
  BatchStats& st = plan.stats;
  const bool std_norm = estimator.std_normalized_advantages();
  const bool downsample = batching.reward_balance == "downsample";
  // An estimator may be defined with dynamic sampling; downsample leaves
  // nothing of a zero-variance group anyway (k = 0), so it counts as dynamic
  // sampling too.
  const bool drop_zero_variance =
      batching.dynamic_sampling || estimator.implies_dynamic_sampling() || downsample;

  std::vector<Kept> kept;
  double reward_sum = 0.0;
  int64_t correct = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const Group& group = groups[g];
    std::vector<double> rewards;
    for (const Rollout& r : group.rollouts) {
      rewards.push_back(r.reward);
      reward_sum += r.reward;
      if (r.reward >= kCorrectRewardThreshold) ++correct;
    }
    ++st.groups_in;
    st.rollouts_in += static_cast<int64_t>(rewards.size());
    const bool zero_var = IsZeroVariance(rewards);
    if (zero_var) ++st.groups_zero_variance;
    if (zero_var && drop_zero_variance) {
      ++st.groups_dropped_zero_variance;
      continue;
    }
    std::vector<double> adv = GroupAdvantages(rewards, std_norm);
    Kept k;
    k.group = static_cast<int>(g);
    if (downsample) {
      if (batching.recompute_advantage) {
        k.rollouts = BalancedSubset(rewards, std_norm, seed, g, &k.advantages);
      } else {
        // Signs w.r.t. the full group: k = min(n+, n-) of each, balanced by
        // construction; the rows keep the full-group advantages.
        std::vector<int> pos, neg;
        SplitBySign(adv, nullptr, &pos, &neg);
        const size_t n = std::min(pos.size(), neg.size());
        Rng rng(StreamSeed(seed, kDownsampleStream, g));
        k.rollouts = KeepBalanced(&pos, &neg, n, &rng);
        for (int i : k.rollouts) k.advantages.push_back(adv[i]);
      }
      if (k.rollouts.empty()) {
        ++st.groups_dropped_balance;
        st.rollouts_dropped_balance += static_cast<int64_t>(adv.size());
        continue;
      }
      st.rollouts_dropped_balance += static_cast<int64_t>(adv.size() - k.rollouts.size());
    } else {
      k.rollouts.resize(adv.size());
      std::iota(k.rollouts.begin(), k.rollouts.end(), 0);
      k.advantages = adv;
    }
    for (size_t j = 0; j < k.rollouts.size(); ++j) {
      const int64_t t = static_cast<int64_t>(group.rollouts[k.rollouts[j]].tokens.size());
      k.tokens += t;
      AddUnit(batching.balance_unit, k.advantages[j], t, &k.pos_unit, &k.neg_unit);
      if (k.advantages[j] > 0) ++st.positive_rollouts;
      if (k.advantages[j] < 0) ++st.negative_rollouts;
    }
    st.rollouts_used += static_cast<int64_t>(k.rollouts.size());
    kept.push_back(std::move(k));
  }
  st.groups_used = static_cast<int64_t>(kept.size());
  if (st.rollouts_in > 0) {
    st.reward_mean = reward_sum / static_cast<double>(st.rollouts_in);
    st.accuracy = static_cast<double>(correct) / static_cast<double>(st.rollouts_in);
  }
  if (st.groups_in > 0) {
    st.zero_variance_fraction =
        static_cast<double>(st.groups_zero_variance) / static_cast<double>(st.groups_in);
  }
  if (kept.empty()) return plan;

  const size_t mini = static_cast<size_t>(batching.mini_batches);
  for (int epoch = 0; epoch < batching.epochs; ++epoch) {
    Rng rng(StreamSeed(seed, kEpochStream, static_cast<uint64_t>(epoch)));
    std::vector<OptimizerStep> epoch_steps;
    if (!batching.query_preserved) {
      // Ablation: rollouts leave their groups. Each keeps the advantage computed
      // on its full (kept) group; a step holds fragments, merged per group.
      struct Item {
        size_t kept_index;
        size_t j;
      };
      std::vector<Item> items;
      for (size_t k = 0; k < kept.size(); ++k) {
        for (size_t j = 0; j < kept[k].rollouts.size(); ++j) items.push_back({k, j});
      }
      rng.Shuffle(&items);
      const std::vector<size_t> sizes = ChunkSizes(items.size(), std::min(mini, items.size()));
      size_t at = 0;
      for (size_t size : sizes) {
        std::map<size_t, std::vector<size_t>> by_group;
        for (size_t i = at; i < at + size; ++i) by_group[items[i].kept_index].push_back(items[i].j);
        at += size;
        OptimizerStep step;
        for (auto& [k, js] : by_group) {
          std::sort(js.begin(), js.end());
          SelectedGroup sg;
          sg.group = kept[k].group;
          for (size_t j : js) {
            sg.rollouts.push_back(kept[k].rollouts[j]);
            sg.advantages.push_back(kept[k].advantages[j]);
          }
          step.groups.push_back(std::move(sg));
        }
        epoch_steps.push_back(std::move(step));
      }
    } else {
      std::vector<size_t> order(kept.size());
      std::iota(order.begin(), order.end(), 0);
      rng.Shuffle(&order);
      const size_t parts = std::min(mini, order.size());
      const std::vector<size_t> sizes = ChunkSizes(order.size(), parts);
      std::vector<std::vector<size_t>> batches(parts);
      if (batching.reward_balance == "pack") {
        // Whole groups onto mini-batches of the same sizes, minimising the
        // worst |U+ - U-| (packing.h: exact search up to kExactPackLimit
        // groups, else balanced largest differencing). Ties follow the
        // shuffled order, so the packing depends on the seed.
        std::vector<double> diff;
        for (size_t k : order) diff.push_back(kept[k].pos_unit - kept[k].neg_unit);
        const std::vector<int> where = PackMiniBatches(diff, parts);
        for (size_t i = 0; i < order.size(); ++i) {
          batches[static_cast<size_t>(where[i])].push_back(order[i]);
        }
      } else {
        size_t at = 0;
        for (size_t b = 0; b < parts; ++b) {
          batches[b].assign(order.begin() + static_cast<std::ptrdiff_t>(at),
                            order.begin() + static_cast<std::ptrdiff_t>(at + sizes[b]));
          at += sizes[b];
        }
      }
      for (const std::vector<size_t>& batch : batches) {
        OptimizerStep step;
        for (size_t k : batch) {
          step.groups.push_back({kept[k].group, kept[k].rollouts, kept[k].advantages, 0});
        }
        epoch_steps.push_back(std::move(step));
      }
    }
    for (OptimizerStep& step : epoch_steps) {
      FinishStep(groups, estimator, max_new_tokens, &step);
      double pos = 0.0, neg = 0.0;
      for (const SelectedGroup& sg : step.groups) {
        for (size_t j = 0; j < sg.rollouts.size(); ++j) {
          AddUnit(batching.balance_unit, sg.advantages[j],
                  static_cast<int64_t>(groups[sg.group].rollouts[sg.rollouts[j]].tokens.size()),
                  &pos, &neg);
        }
      }
      st.max_step_imbalance = std::max(st.max_step_imbalance, Imbalance(pos, neg));
      plan.steps.push_back(std::move(step));
    }
  }
  return plan;
}

std::vector<SelectedGroup> ShardStep(const OptimizerStep& step, int rank, int world_size) {
  if (world_size <= 1) return step.groups;
  if (rank < 0 || rank >= world_size) return {};
  // Weight = rows. Every rank calls this on its own copy of the step, so the
  // weight may only use fields that every transport of a plan carries (group,
  // rollouts, advantages); SelectedGroup::tokens is informational.
  std::vector<size_t> order(step.groups.size());
  std::iota(order.begin(), order.end(), 0);
  std::vector<int64_t> weight(step.groups.size());
  for (size_t i = 0; i < step.groups.size(); ++i) {
    weight[i] = static_cast<int64_t>(step.groups[i].rollouts.size());
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return weight[a] > weight[b]; });
  std::vector<int64_t> load(static_cast<size_t>(world_size), 0);
  std::vector<int> owner(step.groups.size(), 0);
  for (size_t i : order) {
    const size_t r = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
    owner[i] = static_cast<int>(r);
    load[r] += weight[i];
  }
  std::vector<SelectedGroup> shard;
  for (size_t i = 0; i < step.groups.size(); ++i) {
    if (owner[i] == rank) shard.push_back(step.groups[i]);
  }
  return shard;
}

std::vector<SelectedGroup> SelectionForRank(const UpdatePlan& plan, int rank, int world_size) {
  std::map<int, SelectedGroup> merged;
  for (const OptimizerStep& step : plan.steps) {
    for (SelectedGroup& sg : ShardStep(step, rank, world_size)) {
      auto it = merged.find(sg.group);
      if (it == merged.end()) {
        merged.emplace(sg.group, std::move(sg));
        continue;
      }
      SelectedGroup& m = it->second;
      for (size_t j = 0; j < sg.rollouts.size(); ++j) {
        if (std::find(m.rollouts.begin(), m.rollouts.end(), sg.rollouts[j]) == m.rollouts.end()) {
          m.rollouts.push_back(sg.rollouts[j]);
          m.advantages.push_back(sg.advantages[j]);
        }
      }
    }
  }
  std::vector<SelectedGroup> out;
  for (auto& [g, sg] : merged) {
    std::vector<size_t> idx(sg.rollouts.size());
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(),
              [&](size_t a, size_t b) { return sg.rollouts[a] < sg.rollouts[b]; });
    SelectedGroup sorted{sg.group, {}, {}, 0};
    sorted.tokens = sg.tokens;
    for (size_t i : idx) {
      sorted.rollouts.push_back(sg.rollouts[i]);
      sorted.advantages.push_back(sg.advantages[i]);
    }
    out.push_back(std::move(sorted));
  }
  return out;
}

}  // namespace rlvr::learner
