#include "learner/core/step.h"

#include <torch/torch.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "common/base/status_macros.h"
#include "common/policy/logprobs.h"
#include "learner/core/diagnostics.h"
#include "learner/core/estimator.h"

namespace rlvr::learner {
namespace {

// Consecutive whole SelectedGroups with at most `limit` rows (a larger group
// alone). Returns [begin, end) index pairs into `shard`.
std::vector<std::pair<size_t, size_t>> MicroBatches(const std::vector<SelectedGroup>& shard,
                                                    int limit) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t begin = 0;
  int64_t rows = 0;
  for (size_t i = 0; i < shard.size(); ++i) {
    const int64_t n = static_cast<int64_t>(shard[i].rollouts.size());
    if (i > begin && rows + n > limit) {
      out.emplace_back(begin, i);
      begin = i;
      rows = 0;
    }
    rows += n;
  }
  if (begin < shard.size()) out.emplace_back(begin, shard.size());
  return out;
}

absl::Status CheckSelection(const std::vector<Group>& groups,
                            const std::vector<SelectedGroup>& selection) {
  for (const SelectedGroup& sg : selection) {
    if (sg.group < 0 || static_cast<size_t>(sg.group) >= groups.size()) {
      return absl::InvalidArgumentError(absl::StrCat("selected group ", sg.group, " out of range"));
    }
    if (sg.advantages.size() != sg.rollouts.size()) {
      return absl::InvalidArgumentError("advantages and rollouts differ in count");
    }
    for (int r : sg.rollouts) {
      if (r < 0 || static_cast<size_t>(r) >= groups[sg.group].rollouts.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("rollout ", r, " of group ", sg.group, " out of range"));
      }
    }
  }
  return absl::OkStatus();
}

// The rows of one micro-batch, flattened.
struct Rows {
  std::vector<const std::vector<int>*> prompts;
  std::vector<const std::vector<int>*> completions;
  std::vector<const Rollout*> rollouts;
  std::vector<std::pair<int, int>> ids;  // (group, rollout)
  std::vector<double> advantages;
  std::vector<int64_t> group_ids;   // Local group index per row.
  std::vector<int64_t> shared_len;  // Per local group.
  int64_t num_groups = 0;
};

Rows Flatten(const std::vector<Group>& groups, const std::vector<SelectedGroup>& shard,
             size_t begin, size_t end) {
  Rows rows;
  for (size_t k = begin; k < end; ++k) {
    const SelectedGroup& sg = shard[k];
    const Group& g = groups[sg.group];
    std::vector<const std::vector<int>*> completions;
    for (size_t j = 0; j < sg.rollouts.size(); ++j) {
      const Rollout& r = g.rollouts[sg.rollouts[j]];
      rows.prompts.push_back(&g.prompt);
      rows.completions.push_back(&r.tokens);
      completions.push_back(&r.tokens);
      rows.rollouts.push_back(&r);
      rows.ids.emplace_back(sg.group, sg.rollouts[j]);
      rows.advantages.push_back(sg.advantages[j]);
      rows.group_ids.push_back(rows.num_groups);
    }
    rows.shared_len.push_back(CommonPrefixLength(completions));
    ++rows.num_groups;
  }
  return rows;
}

// Packs per-row float vectors into [N,T] (zeros past each row's length).
// Returns an undefined tensor (and sets *missing) if a row's vector does not
// have exactly the row's token count.
torch::Tensor PackRows(const std::vector<const std::vector<float>*>& values,
                       const std::vector<const std::vector<int>*>& completions, int64_t t,
                       std::vector<bool>* present) {
  const int64_t n = static_cast<int64_t>(values.size());
  torch::Tensor out = torch::zeros({n, t}, torch::kFloat32);
  auto acc = out.accessor<float, 2>();
  present->assign(values.size(), false);
  for (int64_t i = 0; i < n; ++i) {
    if (values[i] == nullptr || values[i]->size() != completions[i]->size()) continue;
    (*present)[i] = true;
    for (size_t j = 0; j < values[i]->size(); ++j)
      acc[i][static_cast<int64_t>(j)] = (*values[i])[j];
  }
  return out;
}

const std::vector<float>* OldFor(const OldLogProbs* old, int g, int r) {
  if (old == nullptr || static_cast<size_t>(g) >= old->logprobs.size() ||
      static_cast<size_t>(r) >= old->logprobs[g].size()) {
    return nullptr;
  }
  return &old->logprobs[g][r];
}

absl::StatusOr<UpdateDiagnostics> RunMicroBatch(policy::Transformer& model, const Rows& rows,
                                                double normalizer, const ParsedEstimator& estimator,
                                                const OldLogProbs* old,
                                                policy::Transformer* reference) {
  const LossConfig& loss = estimator.config();
  const int64_t n = static_cast<int64_t>(rows.rollouts.size());
  policy::CompletionLogProbs out = policy::ComputeCompletionLogProbs(
      model, rows.prompts, rows.completions, /*with_entropy=*/true);
  // The graph lives on the model's device; the estimator and the diagnostics
  // run on CPU copies of the [N, T] log-probs (the same tensors on a CPU
  // model), and the per-token coefficients go back for the backward.
  const torch::Tensor lp_graph = out.logprobs;
  torch::Tensor lp = lp_graph.detach().to(torch::kCPU);
  const auto dtype = lp.scalar_type();
  const int64_t t = lp.size(1);
  torch::Tensor mask = out.mask.to(torch::kCPU, dtype);
  if (out.entropy.defined()) out.entropy = out.entropy.to(torch::kCPU);

  // Behaviour log-probs (for lp_old in behaviour mode and for the KL metric).
  std::vector<const std::vector<float>*> behaviour, precomputed;
  for (int64_t i = 0; i < n; ++i) {
    behaviour.push_back(&rows.rollouts[i]->behaviour_logprobs);
    precomputed.push_back(OldFor(old, rows.ids[i].first, rows.ids[i].second));
  }
  std::vector<bool> has_behaviour, has_old;
  torch::Tensor lp_behav = PackRows(behaviour, rows.completions, t, &has_behaviour).to(dtype);
  torch::Tensor lp_pre;
  if (old != nullptr) {
    lp_pre = PackRows(precomputed, rows.completions, t, &has_old).to(dtype);
    for (int64_t i = 0; i < n; ++i) {
      if (!has_old[i]) {
        return absl::InvalidArgumentError(absl::StrCat("no precomputed old log-probs for group ",
                                                       rows.ids[i].first, " rollout ",
                                                       rows.ids[i].second));
      }
    }
  }
  torch::Tensor recomputed = lp_pre.defined() ? lp_pre : lp.detach();
  // log(pi_prox / pi_behav) per token: the behaviour weights and the KL metric.
  const torch::Tensor prox_log_ratio = recomputed - lp_behav;
  // OK when every row has behaviour log-probs of its completion's length;
  // else InvalidArgument naming the first row without and what needs them.
  auto require_behaviour = [&](absl::string_view user) -> absl::Status {
    for (int64_t i = 0; i < n; ++i) {
      if (!has_behaviour[i]) {
        return absl::InvalidArgumentError(absl::StrCat(
            user, " needs behaviour log-probs: missing or of the wrong length for group ",
            rows.ids[i].first, " rollout ", rows.ids[i].second));
      }
    }
    return absl::OkStatus();
  };
  torch::Tensor lp_old;
  if (loss.old_logprobs == "behaviour") {
    RETURN_IF_ERROR(require_behaviour("loss.old_logprobs behaviour"));
    lp_old = lp_behav;
  } else {
    lp_old = recomputed;
  }

  // Behaviour weights (loss.behaviour_weight = truncated): min(pi_prox /
  // pi_behav, cap) per token, 1 on padding. `recomputed` is pi_prox, the
  // policy at the update's start.
  torch::Tensor token_weights;
  int64_t truncated_tokens = 0;
  double weight_sum = 0.0;
  if (loss.behaviour_weight == "truncated") {
    RETURN_IF_ERROR(require_behaviour("loss.behaviour_weight truncated"));
    torch::NoGradGuard no_grad;
    torch::Tensor rho = prox_log_ratio.clamp(-kMaxLogRatio, kMaxLogRatio).exp();
    torch::Tensor over = (rho > loss.behaviour_weight_cap).to(dtype) * mask;
    token_weights = rho.clamp_max(loss.behaviour_weight_cap) * mask + (1.0 - mask);
    truncated_tokens = static_cast<int64_t>(std::llround(over.sum().item<double>()));
    weight_sum = (token_weights * mask).sum().item<double>();
  }

  torch::Tensor lp_ref;
  if (loss.kl_coef > 0.0) {
    if (reference == nullptr) {
      return absl::InvalidArgumentError("loss.kl_coef > 0 needs a reference policy");
    }
    torch::NoGradGuard no_grad;
    lp_ref = policy::ComputeCompletionLogProbs(*reference, rows.prompts, rows.completions, false)
                 .logprobs.to(torch::kCPU, dtype);
  }

  torch::Tensor leaf = lp.detach().requires_grad_(true);
  EstimatorInput in;
  in.lp_new = leaf;
  in.lp_old = lp_old;
  in.mask = mask;
  in.advantages = torch::tensor(rows.advantages, torch::kFloat64).to(dtype);
  in.group_ids = torch::tensor(rows.group_ids, torch::kInt64);
  in.num_groups = rows.num_groups;
  in.lp_ref = lp_ref;
  in.normalizer = normalizer;
  in.token_weights = token_weights;
  EstimatorOutput res = estimator.loss().Compute(in);

  torch::Tensor coeff;
  if (res.loss.requires_grad()) {
    coeff = torch::autograd::grad({res.loss}, {leaf}, /*grad_outputs=*/{}, /*retain_graph=*/false,
                                  /*create_graph=*/false, /*allow_unused=*/true)[0];
  }
  if (!coeff.defined()) coeff = torch::zeros_like(leaf);
  if (lp_graph.requires_grad()) lp_graph.backward(coeff.to(lp_graph.device()));

  torch::NoGradGuard no_grad;
  // Plain local sums, written into the message once at the end.
  int64_t positive = 0, negative = 0, correct = 0;
  double reward_sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double a = rows.advantages[i];
    if (a > 0) ++positive;
    if (a < 0) ++negative;
    reward_sum += rows.rollouts[i]->reward;
    if (rows.rollouts[i]->reward >= kCorrectRewardThreshold) ++correct;
  }
  UpdateDiagnostics d;
  d.set_loss_sum(res.loss.item<double>());
  d.set_groups(rows.num_groups);
  d.set_rollouts(n);
  d.set_tokens(static_cast<int64_t>(mask.sum().item<double>()));
  d.set_positive_rows(positive);
  d.set_negative_rows(negative);
  d.set_reward_sum(reward_sum);
  d.set_correct_rollouts(correct);
  d.set_clipped_tokens(static_cast<int64_t>(std::llround(res.clipped.sum().item<double>())));
  torch::Tensor ratio = res.ratio * mask;
  d.set_ratio_sum(ratio.sum().item<double>());
  d.set_ratio_max(n > 0 && t > 0 ? ratio.max().item<double>() : 0.0);
  if (out.entropy.defined()) d.set_entropy_sum(out.entropy.sum().item<double>());
  // k3 estimate of KL(behav || recomputed) on samples from behav:
  // rho = pi_rec / pi_behav, k3 = rho - 1 - log rho >= 0.
  std::vector<double> has_behaviour_row(has_behaviour.begin(), has_behaviour.end());
  torch::Tensor behav_mask =
      mask * torch::tensor(has_behaviour_row, torch::kFloat64).to(dtype).unsqueeze(1);
  torch::Tensor log_rho = prox_log_ratio * behav_mask;
  d.set_kl_behaviour_sum(((log_rho.exp() - 1.0 - log_rho) * behav_mask).sum().item<double>());
  d.set_kl_behaviour_tokens(static_cast<int64_t>(behav_mask.sum().item<double>()));
  d.set_behaviour_weight_sum(weight_sum);
  d.set_behaviour_weight_truncated_tokens(truncated_tokens);
  if (res.kl_ref.defined()) d.set_kl_reference_sum(res.kl_ref.sum().item<double>());
  d.set_orthogonality_abs(res.orthogonality_abs);
  d.set_orthogonality_scale(res.orthogonality_scale);
  d.set_groups_dropped_trust_region(res.groups_dropped_trust_region);
  CancellationSums cancel =
      SharedPrefixCancellation(coeff, in.group_ids, rows.num_groups, rows.shared_len);
  d.set_cancellation_net(cancel.net);
  d.set_cancellation_abs(cancel.abs);
  d.set_shared_cells(cancel.cells);
  return d;
}

}  // namespace

absl::StatusOr<OldLogProbs> ComputeOldLogProbs(policy::Transformer& model,
                                               const std::vector<Group>& groups,
                                               const std::vector<SelectedGroup>& selection,
                                               int micro_batch_rollouts) {
  absl::Status valid = CheckSelection(groups, selection);
  if (!valid.ok()) return valid;
  OldLogProbs old;
  old.logprobs.resize(groups.size());
  for (size_t g = 0; g < groups.size(); ++g) old.logprobs[g].resize(groups[g].rollouts.size());
  try {
    torch::NoGradGuard no_grad;
    for (auto [begin, end] : MicroBatches(selection, std::max(1, micro_batch_rollouts))) {
      Rows rows = Flatten(groups, selection, begin, end);
      torch::Tensor lp =
          policy::ComputeCompletionLogProbs(model, rows.prompts, rows.completions, false)
              .logprobs.to(torch::kCPU, torch::kFloat32)
              .contiguous();
      auto acc = lp.accessor<float, 2>();
      for (size_t i = 0; i < rows.ids.size(); ++i) {
        std::vector<float>& dst = old.logprobs[rows.ids[i].first][rows.ids[i].second];
        dst.resize(rows.completions[i]->size());
        for (size_t j = 0; j < dst.size(); ++j)
          dst[j] = acc[static_cast<int64_t>(i)][static_cast<int64_t>(j)];
      }
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("old log-prob recompute failed: ", e.what()));
  }
  return old;
}

absl::StatusOr<UpdateDiagnostics> AccumulateStepGradients(
    policy::Transformer& model, const std::vector<Group>& groups,
    const std::vector<SelectedGroup>& shard, double normalizer, const LossConfig& loss,
    const BatchingConfig& batching, const OldLogProbs* old, policy::Transformer* reference) {
  absl::StatusOr<ParsedEstimator> estimator = ParsedEstimator::Parse(loss);
  if (!estimator.ok()) return estimator.status();
  return AccumulateStepGradients(model, groups, shard, normalizer, *estimator, batching, old,
                                 reference);
}

absl::StatusOr<UpdateDiagnostics> AccumulateStepGradients(
    policy::Transformer& model, const std::vector<Group>& groups,
    const std::vector<SelectedGroup>& shard, double normalizer, const ParsedEstimator& estimator,
    const BatchingConfig& batching, const OldLogProbs* old, policy::Transformer* reference) {
  absl::Status valid = CheckSelection(groups, shard);
  if (!valid.ok()) return valid;
  if (!(normalizer > 0.0)) return absl::InvalidArgumentError("normalizer must be positive");
  UpdateDiagnostics total;
  try {
    for (auto [begin, end] : MicroBatches(shard, std::max(1, batching.micro_batch_rollouts))) {
      Rows rows = Flatten(groups, shard, begin, end);
      absl::StatusOr<UpdateDiagnostics> d =
          RunMicroBatch(model, rows, normalizer, estimator, old, reference);
      if (!d.ok()) return d.status();
      MergeDiagnostics(*d, &total);
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("step gradient accumulation failed: ", e.what()));
  }
  return total;
}

void FinishUpdateDiagnostics(const BatchStats& stats, int64_t optimizer_steps, double grad_norm_sum,
                             double lr, UpdateDiagnostics* d) {
  d->set_reward_mean(stats.reward_mean);
  d->set_accuracy(stats.accuracy);
  d->set_zero_variance_fraction(stats.zero_variance_fraction);
  d->set_kept_positive_rollouts(stats.positive_rollouts);
  d->set_kept_negative_rollouts(stats.negative_rollouts);
  d->set_groups_in(stats.groups_in);
  d->set_groups_used(stats.groups_used);
  d->set_groups_dropped_zero_variance(stats.groups_dropped_zero_variance);
  d->set_groups_dropped_balance(stats.groups_dropped_balance);
  d->set_optimizer_steps(optimizer_steps);
  d->set_grad_norm_sum(grad_norm_sum);
  d->set_lr(lr);
  FinalizeDiagnostics(d);
}

}  // namespace rlvr::learner
