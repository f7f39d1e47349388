#include "learner/core/step.h"

#include <torch/torch.h>

#include <algorithm>
#include <exception>
#include <limits>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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

absl::StatusOr<StepDiagnostics> RunMicroBatch(policy::Transformer& model, const Rows& rows,
                                              double normalizer, const ParsedEstimator& estimator,
                                              const OldLogProbs* old,
                                              policy::Transformer* reference) {
  const LossConfig& loss = estimator.config();
  StepDiagnostics d;
  const int64_t n = static_cast<int64_t>(rows.rollouts.size());
  policy::CompletionLogProbs out = policy::ComputeCompletionLogProbs(
      model, rows.prompts, rows.completions, /*with_entropy=*/true);
  torch::Tensor lp = out.logprobs;
  const auto dtype = lp.scalar_type();
  const int64_t t = lp.size(1);
  torch::Tensor mask = out.mask.to(dtype);

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
  torch::Tensor lp_old;
  if (loss.old_logprobs == "behaviour") {
    for (int64_t i = 0; i < n; ++i) {
      if (!has_behaviour[i]) {
        return absl::InvalidArgumentError(
            absl::StrCat("behaviour log-probs missing or of the wrong "
                         "length for group ",
                         rows.ids[i].first, " rollout ", rows.ids[i].second));
      }
    }
    lp_old = lp_behav;
  } else {
    lp_old = recomputed;
  }

  torch::Tensor lp_ref;
  if (loss.kl_coef > 0.0) {
    if (reference == nullptr) {
      return absl::InvalidArgumentError("loss.kl_coef > 0 needs a reference policy");
    }
    torch::NoGradGuard no_grad;
    lp_ref = policy::ComputeCompletionLogProbs(*reference, rows.prompts, rows.completions, false)
                 .logprobs.to(dtype);
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
  EstimatorOutput res = estimator.loss().Compute(in);

  torch::Tensor coeff;
  if (res.loss.requires_grad()) {
    coeff = torch::autograd::grad({res.loss}, {leaf}, /*grad_outputs=*/{}, /*retain_graph=*/false,
                                  /*create_graph=*/false, /*allow_unused=*/true)[0];
  }
  if (!coeff.defined()) coeff = torch::zeros_like(leaf);
  if (lp.requires_grad()) lp.backward(coeff);

  torch::NoGradGuard no_grad;
  d.loss = res.loss.item<double>();
  d.groups = rows.num_groups;
  d.rollouts = n;
  d.tokens = static_cast<int64_t>(mask.sum().item<double>());
  for (int64_t i = 0; i < n; ++i) {
    const double a = rows.advantages[i];
    if (a > 0) ++d.positive_rollouts;
    if (a < 0) ++d.negative_rollouts;
    d.reward_sum += rows.rollouts[i]->reward;
    if (rows.rollouts[i]->reward >= kCorrectRewardThreshold) ++d.correct_rollouts;
  }
  d.clipped_tokens = static_cast<int64_t>(std::llround(res.clipped.sum().item<double>()));
  torch::Tensor ratio = res.ratio * mask;
  d.ratio_sum = ratio.sum().item<double>();
  d.ratio_max = n > 0 && t > 0 ? ratio.max().item<double>() : 0.0;
  if (out.entropy.defined()) d.entropy_sum = out.entropy.sum().item<double>();
  // k3 estimate of KL(behav || recomputed) on samples from behav:
  // rho = pi_rec / pi_behav, k3 = rho - 1 - log rho >= 0.
  std::vector<double> has_behaviour_row(has_behaviour.begin(), has_behaviour.end());
  torch::Tensor behav_mask =
      mask * torch::tensor(has_behaviour_row, torch::kFloat64).to(dtype).unsqueeze(1);
  torch::Tensor log_rho = (recomputed - lp_behav) * behav_mask;
  d.kl_behaviour_sum = ((log_rho.exp() - 1.0 - log_rho) * behav_mask).sum().item<double>();
  d.kl_behaviour_tokens = static_cast<int64_t>(behav_mask.sum().item<double>());
  if (res.kl_ref.defined()) d.kl_reference_sum = res.kl_ref.sum().item<double>();
  d.orthogonality_abs = res.orthogonality_abs;
  d.orthogonality_scale = res.orthogonality_scale;
  d.groups_dropped_trust_region = res.groups_dropped_trust_region;
  CancellationSums cancel =
      SharedPrefixCancellation(coeff, in.group_ids, rows.num_groups, rows.shared_len);
  d.cancellation_net = cancel.net;
  d.cancellation_abs = cancel.abs;
  d.shared_cells = cancel.cells;
  return d;
}

double Ratio(double num, double den) { return den > 0 ? num / den : 0.0; }

}  // namespace

void StepDiagnostics::Merge(const StepDiagnostics& o) {
  loss += o.loss;
  groups += o.groups;
  rollouts += o.rollouts;
  tokens += o.tokens;
  positive_rollouts += o.positive_rollouts;
  negative_rollouts += o.negative_rollouts;
  reward_sum += o.reward_sum;
  correct_rollouts += o.correct_rollouts;
  clipped_tokens += o.clipped_tokens;
  ratio_sum += o.ratio_sum;
  ratio_max = std::max(ratio_max, o.ratio_max);
  entropy_sum += o.entropy_sum;
  kl_behaviour_sum += o.kl_behaviour_sum;
  kl_behaviour_tokens += o.kl_behaviour_tokens;
  kl_reference_sum += o.kl_reference_sum;
  orthogonality_abs += o.orthogonality_abs;
  orthogonality_scale += o.orthogonality_scale;
  cancellation_net += o.cancellation_net;
  cancellation_abs += o.cancellation_abs;
  shared_cells += o.shared_cells;
  groups_dropped_trust_region += o.groups_dropped_trust_region;
}

void StepDiagnostics::Finalize() {
  const double tok = static_cast<double>(tokens);
  clip_fraction = Ratio(static_cast<double>(clipped_tokens), tok);
  ratio_mean = Ratio(ratio_sum, tok);
  entropy = Ratio(entropy_sum, tok);
  kl_behaviour_recomputed = Ratio(kl_behaviour_sum, static_cast<double>(kl_behaviour_tokens));
  kl_reference = Ratio(kl_reference_sum, tok);
  orthogonality_residual = Ratio(orthogonality_abs, orthogonality_scale);
  cancellation_residual = Ratio(cancellation_net, cancellation_abs);
  reward_mean = Ratio(reward_sum, static_cast<double>(rollouts));
  accuracy = Ratio(static_cast<double>(correct_rollouts), static_cast<double>(rollouts));
}

std::vector<double> StepDiagnostics::Pack() const {
  auto f = [](int64_t v) { return static_cast<double>(v); };
  return {loss,
          f(groups),
          f(rollouts),
          f(tokens),
          f(positive_rollouts),
          f(negative_rollouts),
          reward_sum,
          f(correct_rollouts),
          f(clipped_tokens),
          ratio_sum,
          ratio_max,
          entropy_sum,
          kl_behaviour_sum,
          f(kl_behaviour_tokens),
          kl_reference_sum,
          orthogonality_abs,
          orthogonality_scale,
          cancellation_net,
          cancellation_abs,
          f(shared_cells),
          f(groups_dropped_trust_region)};
}

absl::StatusOr<StepDiagnostics> StepDiagnostics::Unpack(const std::vector<double>& p) {
  if (p.size() != 21) {
    return absl::InvalidArgumentError(
        absl::StrCat("packed diagnostics have ", p.size(), " values, want 21"));
  }
  auto i = [](double v) { return static_cast<int64_t>(std::llround(v)); };
  StepDiagnostics d;
  d.loss = p[0];
  d.groups = i(p[1]);
  d.rollouts = i(p[2]);
  d.tokens = i(p[3]);
  d.positive_rollouts = i(p[4]);
  d.negative_rollouts = i(p[5]);
  d.reward_sum = p[6];
  d.correct_rollouts = i(p[7]);
  d.clipped_tokens = i(p[8]);
  d.ratio_sum = p[9];
  d.ratio_max = p[10];
  d.entropy_sum = p[11];
  d.kl_behaviour_sum = p[12];
  d.kl_behaviour_tokens = i(p[13]);
  d.kl_reference_sum = p[14];
  d.orthogonality_abs = p[15];
  d.orthogonality_scale = p[16];
  d.cancellation_net = p[17];
  d.cancellation_abs = p[18];
  d.shared_cells = i(p[19]);
  d.groups_dropped_trust_region = i(p[20]);
  return d;
}

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
              .logprobs.to(torch::kFloat32)
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

absl::StatusOr<StepDiagnostics> AccumulateStepGradients(
    policy::Transformer& model, const std::vector<Group>& groups,
    const std::vector<SelectedGroup>& shard, double normalizer, const LossConfig& loss,
    const BatchingConfig& batching, const OldLogProbs* old, policy::Transformer* reference) {
  absl::StatusOr<ParsedEstimator> estimator = ParsedEstimator::Parse(loss);
  if (!estimator.ok()) return estimator.status();
  return AccumulateStepGradients(model, groups, shard, normalizer, *estimator, batching, old,
                                 reference);
}

absl::StatusOr<StepDiagnostics> AccumulateStepGradients(
    policy::Transformer& model, const std::vector<Group>& groups,
    const std::vector<SelectedGroup>& shard, double normalizer, const ParsedEstimator& estimator,
    const BatchingConfig& batching, const OldLogProbs* old, policy::Transformer* reference) {
  absl::Status valid = CheckSelection(groups, shard);
  if (!valid.ok()) return valid;
  if (!(normalizer > 0.0)) return absl::InvalidArgumentError("normalizer must be positive");
  StepDiagnostics total;
  try {
    for (auto [begin, end] : MicroBatches(shard, std::max(1, batching.micro_batch_rollouts))) {
      Rows rows = Flatten(groups, shard, begin, end);
      absl::StatusOr<StepDiagnostics> d =
          RunMicroBatch(model, rows, normalizer, estimator, old, reference);
      if (!d.ok()) return d.status();
      total.Merge(*d);
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("step gradient accumulation failed: ", e.what()));
  }
  return total;
}

}  // namespace rlvr::learner
