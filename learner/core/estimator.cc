#include "learner/core/estimator.h"

#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace rlvr::learner {
namespace {

// [D] Log-ratios entering exp() with gradient are clamped to +-kMaxLogRatio:
// beyond it a token's (unselected) branch would overflow and turn a zero
// gradient into NaN (0 * inf). Irrelevant in any sane training regime.
constexpr double kMaxLogRatio = 20.0;

// How an estimator turns per-token terms x[i,t] into a scalar.
enum class Aggregation {
  kTokenSum,      // (1/Z) sum_i sum_t x            (dfpo, dr_grpo, dapo)
  kGroupSeqMean,  // (1/Z) sum_i (1/G_g) (1/T_i) sum_t x   (grpo; Z = groups in step)
};

// Per-row 1/T_i (T_i = real tokens of the row, at least 1).
torch::Tensor InverseLengths(const torch::Tensor& mask) { return 1.0 / mask.sum(1).clamp_min(1.0); }

// Per-row 1/G_g where G_g is the number of rows of row i's group.
torch::Tensor InverseGroupSizes(const EstimatorInput& in) {
  torch::Tensor ones = torch::ones({in.group_ids.size(0)}, in.mask.options());
  return 1.0 / GroupSum(ones, in.group_ids, in.num_groups).index_select(0, in.group_ids);
}

torch::Tensor Aggregate(const torch::Tensor& x, const EstimatorInput& in, Aggregation how) {
  torch::Tensor per_row = (x * in.mask).sum(1);
  if (how == Aggregation::kGroupSeqMean) {
    per_row = per_row * InverseLengths(in.mask) * InverseGroupSizes(in);
  }
  return per_row.sum() / in.normalizer;
}

// Adds the k3 KL to the reference policy, aggregated like the estimator's
// own objective: kl = exp(lp_ref - lp_new) - (lp_ref - lp_new) - 1 >= 0.
void AddReferenceKl(const EstimatorInput& in, double kl_coef, Aggregation how,
                    EstimatorOutput* out) {
  if (kl_coef <= 0.0) return;
  TORCH_CHECK(in.lp_ref.defined(), "kl_coef > 0 needs reference log-probs");
  torch::Tensor d = in.lp_ref - in.lp_new;
  torch::Tensor kl = d.exp() - d - 1.0;
  out->loss = out->loss + kl_coef * Aggregate(kl, in, how);
  out->kl_ref = (kl.detach() * in.mask);
}

void CheckInput(const EstimatorInput& in) {
  TORCH_CHECK(in.lp_new.dim() == 2, "lp_new must be [N,T]");
  TORCH_CHECK(in.lp_old.sizes() == in.lp_new.sizes(), "lp_old shape differs from lp_new");
  TORCH_CHECK(in.mask.sizes() == in.lp_new.sizes(), "mask shape differs from lp_new");
  TORCH_CHECK(in.advantages.dim() == 1 && in.advantages.size(0) == in.lp_new.size(0),
              "advantages must be [N]");
  TORCH_CHECK(in.group_ids.dim() == 1 && in.group_ids.size(0) == in.lp_new.size(0) &&
                  in.group_ids.scalar_type() == torch::kInt64,
              "group_ids must be int64 [N]");
  TORCH_CHECK(in.normalizer > 0.0, "normalizer must be positive");
}

// Token-level PPO clip (grpo, dr_grpo, dapo). A token is "clipped" when the
// clipped branch of min(r A, clip(r) A) is the active one, i.e. its gradient
// is zero: A > 0 and r > 1 + eps_high, or A < 0 and r < 1 - eps_low.
class PpoTokenEstimator final : public Estimator {
 public:
  PpoTokenEstimator(std::string name, double eps_low, double eps_high, Aggregation how,
                    double kl_coef)
      : name_(std::move(name)),
        eps_low_(eps_low),
        eps_high_(eps_high),
        how_(how),
        kl_coef_(kl_coef) {}
  std::string name() const override { return name_; }

  EstimatorOutput Compute(const EstimatorInput& in) const override {
    CheckInput(in);
    EstimatorOutput out;
    torch::Tensor a = in.advantages.unsqueeze(1);
    torch::Tensor r = (in.lp_new - in.lp_old).clamp(-kMaxLogRatio, kMaxLogRatio).exp();
    torch::Tensor rd = r.detach();
    torch::Tensor clipped = ((a > 0) & (rd > 1.0 + eps_high_)) | ((a < 0) & (rd < 1.0 - eps_low_));
    torch::Tensor rc = rd.clamp(1.0 - eps_low_, 1.0 + eps_high_);
    torch::Tensor objective = torch::where(clipped, rc * a, r * a);
    out.loss = -Aggregate(objective, in, how_);
    out.ratio = rd;
    out.clipped = clipped.to(in.mask.scalar_type()) * in.mask;
    AddReferenceKl(in, kl_coef_, how_, &out);
    return out;
  }

 private:
  std::string name_;
  double eps_low_;
  double eps_high_;
  Aggregation how_;
  double kl_coef_;
};

// DFPO (ALGORITHMS.md): value-only geometric-mean sequence ratio, symmetric
// clip, in-group transform, stop-gradient, token-sum / Z.
class DfpoEstimator final : public Estimator {
 public:
  DfpoEstimator(std::string transform, double eps, double max_abs_log_ratio, double kl_coef)
      : transform_(std::move(transform)),
        eps_(eps),
        max_abs_log_ratio_(max_abs_log_ratio),
        kl_coef_(kl_coef) {}
  std::string name() const override { return "dfpo"; }

  EstimatorOutput Compute(const EstimatorInput& in) const override {
    CheckInput(in);
    EstimatorOutput out;
    torch::Tensor weights;
    {
      torch::NoGradGuard no_grad;
      torch::Tensor log_ratio = in.lp_new.detach() - in.lp_old;
      out.ratio = log_ratio.exp();
      // [D] geometric mean over the rollout's tokens: value only, never differentiated.
      torch::Tensor seq_log_ratio = (log_ratio * in.mask).sum(1) * InverseLengths(in.mask);
      torch::Tensor w = seq_log_ratio.exp();
      // [D] symmetric clip, the same rule for both signs of A.
      torch::Tensor c = w.clamp(1.0 - eps_, 1.0 + eps_);
      torch::Tensor outside = (w < 1.0 - eps_) | (w > 1.0 + eps_);
      out.clipped = outside.to(in.mask.scalar_type()).unsqueeze(1) * in.mask;
      weights = DfpoTransform(c, in.advantages, in.group_ids, in.num_groups, transform_);

      // Groups that contribute nothing: zero variance (max |A| < 1e-12), and,
      // with the trust-region guard on, any group with a rollout whose
      // |mean log ratio| exceeds the limit (the whole group is dropped).
      torch::Tensor keep_group =
          GroupReduce(in.advantages.abs(), in.group_ids, in.num_groups, /*max=*/true) >= 1e-12;
      if (max_abs_log_ratio_ > 0.0) {
        torch::Tensor bad_row =
            (seq_log_ratio.abs() > max_abs_log_ratio_).to(in.mask.scalar_type());
        torch::Tensor bad_group = GroupSum(bad_row, in.group_ids, in.num_groups) > 0;
        out.groups_dropped_trust_region = (bad_group & keep_group).sum().item<int64_t>();
        keep_group = keep_group & bad_group.logical_not();
      }
      weights = weights * keep_group.index_select(0, in.group_ids).to(weights.scalar_type());
      torch::Tensor wa = weights * in.advantages;
      out.orthogonality_abs = GroupSum(wa, in.group_ids, in.num_groups).abs().sum().item<double>();
      out.orthogonality_scale = wa.abs().sum().item<double>();
      out.sequence_weights = weights;
    }
    // Every token of row i gets the coefficient -w~_i A_i / Z: no 1/T_i.
    torch::Tensor coef = (weights * in.advantages).unsqueeze(1);
    out.loss = -Aggregate(coef * in.lp_new, in, Aggregation::kTokenSum);
    AddReferenceKl(in, kl_coef_, Aggregation::kTokenSum, &out);
    return out;
  }

 private:
  std::string transform_;
  double eps_;
  double max_abs_log_ratio_;
  double kl_coef_;
};

// GSPO: s_i = exp(mean_t log r_{i,t}) with gradient, sequence-level PPO clip
// with gspo_eps, (1/G_g) per group, Z = groups in the step. A row counts as
// clipped (all its tokens) when the clipped branch is active.
class GspoEstimator final : public Estimator {
 public:
  GspoEstimator(double eps, double kl_coef) : eps_(eps), kl_coef_(kl_coef) {}
  std::string name() const override { return "gspo"; }

  EstimatorOutput Compute(const EstimatorInput& in) const override {
    CheckInput(in);
    EstimatorOutput out;
    torch::Tensor log_ratio = in.lp_new - in.lp_old;
    out.ratio = log_ratio.detach().exp();
    torch::Tensor s = ((log_ratio * in.mask).sum(1) * InverseLengths(in.mask))
                          .clamp(-kMaxLogRatio, kMaxLogRatio)
                          .exp();
    torch::Tensor sd = s.detach();
    torch::Tensor a = in.advantages;
    torch::Tensor clipped = ((a > 0) & (sd > 1.0 + eps_)) | ((a < 0) & (sd < 1.0 - eps_));
    torch::Tensor objective = torch::where(clipped, sd.clamp(1.0 - eps_, 1.0 + eps_) * a, s * a);
    out.loss = -(objective * InverseGroupSizes(in)).sum() / in.normalizer;
    out.clipped = clipped.to(in.mask.scalar_type()).unsqueeze(1) * in.mask;
    AddReferenceKl(in, kl_coef_, Aggregation::kGroupSeqMean, &out);
    return out;
  }

 private:
  double eps_;
  double kl_coef_;
};

}  // namespace

torch::Tensor GroupReduce(const torch::Tensor& x, const torch::Tensor& group_ids,
                          int64_t num_groups, bool max) {
  // Dense [groups, N] membership: tiny at micro-batch sizes, and avoids the
  // beta index_reduce/scatter_reduce APIs (which log a warning).
  torch::Tensor member =
      torch::arange(num_groups, group_ids.options()).unsqueeze(1) == group_ids.unsqueeze(0);
  const double fill =
      max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  torch::Tensor spread = torch::where(member, x.unsqueeze(0), torch::full({}, fill, x.options()));
  return max ? std::get<0>(spread.max(1)) : std::get<0>(spread.min(1));
}

torch::Tensor GroupSum(const torch::Tensor& x, const torch::Tensor& group_ids, int64_t num_groups) {
  std::vector<int64_t> shape = x.sizes().vec();
  shape[0] = num_groups;
  return torch::zeros(shape, x.options()).index_add(0, group_ids, x);
}

torch::Tensor DfpoTransform(const torch::Tensor& c, const torch::Tensor& advantages,
                            const torch::Tensor& group_ids, int64_t num_groups,
                            const std::string& transform) {
  if (transform == "min_replace") {
    torch::Tensor mins = GroupReduce(c, group_ids, num_groups, /*max=*/false);
    return mins.index_select(0, group_ids);
  }
  TORCH_CHECK(transform == "adv_orthogonal", "unknown dfpo transform ", transform);
  torch::Tensor dot = GroupSum(advantages * c, group_ids, num_groups);
  torch::Tensor norm2 = GroupSum(advantages * advantages, group_ids, num_groups);
  torch::Tensor ok = norm2 > 1e-24;
  torch::Tensor coef = torch::where(ok, dot / torch::where(ok, norm2, torch::ones_like(norm2)),
                                    torch::zeros_like(norm2));
  return c - coef.index_select(0, group_ids) * advantages;
}

absl::StatusOr<std::unique_ptr<Estimator>> MakeEstimator(const LossConfig& loss) {
  if (loss.clip_eps < 0 || loss.clip_eps_high < 0 || loss.gspo_eps < 0 || loss.kl_coef < 0) {
    return absl::InvalidArgumentError("clip epsilons and kl_coef must be >= 0");
  }
  const std::string& e = loss.estimator;
  if (e == "dfpo") {
    if (loss.dfpo_transform != "min_replace" && loss.dfpo_transform != "adv_orthogonal") {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown loss.dfpo_transform: ", loss.dfpo_transform));
    }
    return std::unique_ptr<Estimator>(std::make_unique<DfpoEstimator>(
        loss.dfpo_transform, loss.clip_eps, loss.dfpo_max_abs_log_ratio, loss.kl_coef));
  }
  if (e == "grpo") {
    return std::unique_ptr<Estimator>(std::make_unique<PpoTokenEstimator>(
        "grpo", loss.clip_eps, loss.clip_eps, Aggregation::kGroupSeqMean, loss.kl_coef));
  }
  if (e == "dr_grpo") {
    return std::unique_ptr<Estimator>(std::make_unique<PpoTokenEstimator>(
        "dr_grpo", loss.clip_eps, loss.clip_eps, Aggregation::kTokenSum, loss.kl_coef));
  }
  if (e == "dapo") {
    // DAPO has no KL term; kl_coef is ignored here on purpose.
    return std::unique_ptr<Estimator>(std::make_unique<PpoTokenEstimator>(
        "dapo", loss.clip_eps, loss.clip_eps_high, Aggregation::kTokenSum, 0.0));
  }
  if (e == "gspo") {
    return std::unique_ptr<Estimator>(std::make_unique<GspoEstimator>(loss.gspo_eps, loss.kl_coef));
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown loss.estimator: ", e));
}

}  // namespace rlvr::learner
