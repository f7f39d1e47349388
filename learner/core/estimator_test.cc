// ALGORITHMS.md unit-test oracles 1-7 on plain float64 tensors (leaf
// log-probs), plus the cancellation residual on shared prefixes.
#include "learner/core/estimator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "learner/core/advantage.h"
#include "learner/core/diagnostics.h"
#include "learner/core/estimators/dfpo.h"

namespace rlvr::learner {
namespace {

using Matrix = std::vector<std::vector<double>>;

// A micro-batch built from per-row values; lp_new is a float64 leaf.
struct Batch {
  torch::Tensor lp_new, lp_old, mask, adv, gid;
  int64_t num_groups = 0;
  EstimatorInput Input(double z) const {
    EstimatorInput in;
    in.lp_new = lp_new;
    in.lp_old = lp_old;
    in.mask = mask;
    in.advantages = adv;
    in.group_ids = gid;
    in.num_groups = num_groups;
    in.normalizer = z;
    return in;
  }
};

torch::Tensor Padded(const Matrix& rows, int64_t t) {
  torch::Tensor out = torch::zeros({static_cast<int64_t>(rows.size()), t}, torch::kFloat64);
  for (size_t i = 0; i < rows.size(); ++i) {
    for (size_t j = 0; j < rows[i].size(); ++j) out[i][j] = rows[i][j];
  }
  return out;
}

Batch MakeBatch(const Matrix& lp_new, const Matrix& lp_old, const std::vector<double>& adv,
                const std::vector<int64_t>& gid) {
  int64_t t = 0;
  Matrix ones;
  for (const auto& r : lp_new) {
    t = std::max<int64_t>(t, static_cast<int64_t>(r.size()));
    ones.push_back(std::vector<double>(r.size(), 1.0));
  }
  Batch b;
  b.lp_new = Padded(lp_new, t).requires_grad_(true);
  b.lp_old = Padded(lp_old, t);
  b.mask = Padded(ones, t);
  b.adv = torch::tensor(adv, torch::kFloat64);
  b.gid = torch::tensor(gid, torch::kInt64);
  b.num_groups = b.gid.max().item<int64_t>() + 1;
  return b;
}

LossConfig Config(const std::string& estimator, const std::string& transform = "min_replace") {
  LossConfig c;
  c.estimator = estimator;
  c.dfpo_transform = transform;
  return c;
}

// d loss / d lp_new for `config` on `b` with normaliser z; also the loss.
torch::Tensor Coefficients(const LossConfig& config, const Batch& b, double z,
                           double* loss_out = nullptr, EstimatorOutput* out_copy = nullptr) {
  auto est = MakeEstimator(config);
  EXPECT_TRUE(est.ok()) << est.status();
  EstimatorOutput out = (*est)->Compute(b.Input(z));
  if (loss_out != nullptr) *loss_out = out.loss.item<double>();
  torch::Tensor g = torch::autograd::grad({out.loss}, {b.lp_new}, {}, false, false, true)[0];
  if (out_copy != nullptr) *out_copy = out;
  return g.defined() ? g : torch::zeros_like(b.lp_new);
}

// Random log-probs for rows of the given lengths.
Matrix RandomLogProbs(const std::vector<int>& lengths, std::mt19937_64* rng, double lo = -3.0,
                      double hi = -0.05) {
  std::uniform_real_distribution<double> u(lo, hi);
  Matrix m;
  for (int l : lengths) {
    std::vector<double> row;
    for (int t = 0; t < l; ++t) row.push_back(u(*rng));
    m.push_back(row);
  }
  return m;
}

Matrix Shift(const Matrix& m, const std::vector<double>& delta_per_row) {
  Matrix out = m;
  for (size_t i = 0; i < m.size(); ++i) {
    for (double& v : out[i]) v += delta_per_row[i];
  }
  return out;
}

// ---- Oracle 1: shared-token cancellation -----------------------------------

class SharedTokenTest : public ::testing::Test {
 protected:
  const std::vector<int> lengths_ = {3, 7, 5, 9};
  const std::vector<double> adv_ = {0.5, 0.5, -0.5, -0.5};
  const std::vector<int64_t> gid_ = {0, 0, 0, 0};
  // Column 0 is the shared token a* at the shared context h* (the prompt).
  double NetOnShared(const LossConfig& c, const Batch& b, double z) {
    torch::Tensor g = Coefficients(c, b, z);
    return g.select(1, 0).sum().item<double>();
  }
  Batch OnPolicy() {
    std::mt19937_64 rng(11);
    Matrix lp = RandomLogProbs(lengths_, &rng);
    for (auto& row : lp) row[0] = -0.7;  // Same token, same context: same log-prob.
    return MakeBatch(lp, lp, adv_, gid_);
  }
};

TEST_F(SharedTokenTest, DrGrpoCancelsExactly) {
  Batch b = OnPolicy();
  EXPECT_EQ(NetOnShared(Config("dr_grpo"), b, 8.0 * 4), 0.0);
}

TEST_F(SharedTokenTest, DfpoBothTransformsCancelExactly) {
  for (const char* transform : {"min_replace", "adv_orthogonal"}) {
    Batch b = OnPolicy();
    EXPECT_EQ(NetOnShared(Config("dfpo", transform), b, 24.0), 0.0) << transform;
  }
}

TEST_F(SharedTokenTest, GrpoDoesNotCancel) {
  Batch b = OnPolicy();
  const double z = 1.0;  // One group in the step.
  // coeff_i = -(1/Z)(1/G)(A_i/T_i).
  double expected = 0.0;
  for (int i = 0; i < 4; ++i) expected += -(1.0 / 4) * adv_[i] / lengths_[i];
  const double net = NetOnShared(Config("grpo"), b, z);
  EXPECT_NEAR(net, expected, 1e-15);
  EXPECT_GT(std::fabs(net), 1e-3);
}

TEST_F(SharedTokenTest, GspoLikeSequenceWeightingDoesNotCancel) {
  // Sequence ratios s = (1.2, 1, .9, .8), no clipping (eps large).
  const std::vector<double> w = {1.2, 1.0, 0.9, 0.8};
  std::mt19937_64 rng(12);
  Matrix lp_old = RandomLogProbs(lengths_, &rng);
  for (auto& row : lp_old) row[0] = -0.7;
  std::vector<double> shift;
  for (double x : w) shift.push_back(std::log(x));
  Matrix lp_new = Shift(lp_old, shift);
  Batch b = MakeBatch(lp_new, lp_old, adv_, gid_);
  LossConfig c = Config("gspo");
  c.gspo_eps = 10.0;
  const double net = NetOnShared(c, b, 1.0);
  double expected = 0.0;
  for (int i = 0; i < 4; ++i) expected += -(1.0 / 4) * w[i] * adv_[i] / lengths_[i];
  EXPECT_NEAR(net, expected, 1e-12);
  EXPECT_GT(std::fabs(net), 1e-3);
  // The same weights without 1/T_i still break exchangeability: sum w_i A_i != 0.
  double weighted = 0.0;
  for (int i = 0; i < 4; ++i) weighted += w[i] * adv_[i];
  EXPECT_NEAR(weighted, 0.25, 1e-15);
}

// ---- Oracle 2: asymmetric clip ----------------------------------------------

class AsymmetricClipTest : public ::testing::Test {
 protected:
  // One shared token per rollout with ratio 1.3.
  Batch Make() {
    Matrix lp_old = {{-1.0}, {-1.0}, {-1.0}, {-1.0}};
    Matrix lp_new = Shift(lp_old, std::vector<double>(4, std::log(1.3)));
    return MakeBatch(lp_new, lp_old, {0.5, 0.5, -0.5, -0.5}, {0, 0, 0, 0});
  }
  // dJ/dr = -(d loss/d lp) / r.
  std::vector<double> DjDr(const LossConfig& c, double z, double scale) {
    Batch b = Make();
    torch::Tensor g = Coefficients(c, b, z);
    std::vector<double> out;
    for (int i = 0; i < 4; ++i) out.push_back(-g[i][0].item<double>() / 1.3 * scale);
    return out;
  }
};

TEST_F(AsymmetricClipTest, PpoClipPrunesOnlyOneSign) {
  // dr_grpo: plain token-level PPO clip, Z = 1.  grpo: same, times 1/G (undo with scale G).
  for (auto [name, scale] : {std::pair<const char*, double>{"dr_grpo", 1.0}, {"grpo", 4.0}}) {
    std::vector<double> d = DjDr(Config(name), 1.0, scale);
    EXPECT_NEAR(d[0], 0.0, 1e-15) << name;
    EXPECT_NEAR(d[1], 0.0, 1e-15) << name;
    EXPECT_NEAR(d[2], -0.5, 1e-12) << name;
    EXPECT_NEAR(d[3], -0.5, 1e-12) << name;
    EXPECT_NEAR(d[0] + d[1] + d[2] + d[3], -1.0, 1e-12) << name;
  }
}

TEST_F(AsymmetricClipTest, DfpoSymmetricRuleNetsZero) {
  for (const char* transform : {"min_replace", "adv_orthogonal"}) {
    std::vector<double> d = DjDr(Config("dfpo", transform), 1.0, 1.0);
    EXPECT_EQ(d[0] + d[1] + d[2] + d[3], 0.0) << transform;
    // Every rollout was clamped to 1.2: coefficient 1.2 * A_i on lp.
    EXPECT_NEAR(d[0] * 1.3, 0.6, 1e-12) << transform;
  }
}

TEST_F(AsymmetricClipTest, ClipFractionCountsTheClippedSide) {
  Batch b = Make();
  EstimatorOutput out;
  Coefficients(Config("dr_grpo"), b, 1.0, nullptr, &out);
  EXPECT_EQ(out.clipped.sum().item<double>(), 2.0);
  Batch b2 = Make();
  Coefficients(Config("dfpo"), b2, 1.0, nullptr, &out);
  EXPECT_EQ(out.clipped.sum().item<double>(), 4.0);
}

// ---- Oracle 3: orthogonality --------------------------------------------------

std::vector<double> Transform(const std::vector<double>& c, const std::vector<double>& a,
                              const std::string& kind) {
  torch::Tensor gid = torch::zeros({static_cast<int64_t>(c.size())}, torch::kInt64);
  torch::Tensor w = DfpoTransform(torch::tensor(c, torch::kFloat64),
                                  torch::tensor(a, torch::kFloat64), gid, 1, kind);
  return std::vector<double>(w.data_ptr<double>(), w.data_ptr<double>() + w.numel());
}

TEST(OrthogonalityTest, FixedCases) {
  const std::vector<double> a = {0.5, 0.5, -0.5, -0.5};
  const std::vector<double> c = {1.2, 1.0, 0.9, 0.8};
  std::vector<double> ortho = Transform(c, a, "adv_orthogonal");
  const std::vector<double> expected = {1.075, 0.875, 1.025, 0.925};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(ortho[i], expected[i], 1e-15);
  for (double w : Transform(c, a, "min_replace")) EXPECT_EQ(w, 0.8);
  std::vector<double> same = Transform({1, 3, 2}, {1, 1, -2}, "adv_orthogonal");
  EXPECT_EQ(same, (std::vector<double>{1, 3, 2}));
}

TEST(OrthogonalityTest, RandomizedProperty) {
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> size(2, 16);
  std::uniform_real_distribution<double> reward(0.0, 1.0), ratio(0.3, 3.0);
  for (int trial = 0; trial < 200; ++trial) {
    // Several groups at once, to exercise the per-group reductions.
    std::vector<double> c, a;
    std::vector<int64_t> gid;
    const int groups = 1 + trial % 4;
    for (int g = 0; g < groups; ++g) {
      std::vector<double> r;
      const int n = size(rng);
      for (int i = 0; i < n; ++i)
        r.push_back(trial % 3 == 0 ? std::round(reward(rng)) : reward(rng));
      for (double x : GroupAdvantages(r, trial % 2 == 0)) a.push_back(x);
      for (int i = 0; i < n; ++i) {
        c.push_back(ratio(rng));
        gid.push_back(g);
      }
    }
    torch::Tensor at = torch::tensor(a, torch::kFloat64);
    torch::Tensor gt = torch::tensor(gid, torch::kInt64);
    for (const char* kind : {"min_replace", "adv_orthogonal"}) {
      torch::Tensor w = DfpoTransform(torch::tensor(c, torch::kFloat64), at, gt, groups, kind);
      torch::Tensor dot = GroupSum(w * at, gt, groups);
      torch::Tensor scale = GroupSum((w * at).abs(), gt, groups) + 1.0;
      EXPECT_TRUE(((dot.abs() <= 1e-9 * scale)).all().item<bool>()) << kind << " trial " << trial;
      EXPECT_TRUE(torch::isfinite(w).all().item<bool>());
    }
  }
}

// ---- Oracle 4: stop-gradient ----------------------------------------------------

TEST(StopGradientTest, AdvOrthogonalWithoutStopGradientHasZeroGradient) {
  std::mt19937_64 rng(21);
  const std::vector<int> lengths = {4, 6, 3, 5, 2};
  Matrix lp_old = RandomLogProbs(lengths, &rng);
  Matrix lp_new = Shift(lp_old, {0.05, -0.1, 0.02, 0.12, -0.03});
  const std::vector<double> adv = GroupAdvantages({1, 0, 1, 0, 0}, false);
  Batch b = MakeBatch(lp_new, lp_old, adv, {0, 0, 0, 0, 0});
  // The un-stopped surrogate J = sum_i w~_i(theta) A_i, with w~ differentiable.
  torch::Tensor seq = ((b.lp_new - b.lp_old) * b.mask).sum(1) / b.mask.sum(1);
  torch::Tensor c = seq.exp().clamp(0.8, 1.2);
  torch::Tensor w = DfpoTransform(c, b.adv, b.gid, 1, "adv_orthogonal");
  torch::Tensor j = (w * b.adv).sum();
  torch::Tensor g = torch::autograd::grad({j}, {b.lp_new})[0];
  EXPECT_LE(g.abs().max().item<double>(), 1e-15);
  EXPECT_LE(std::fabs(j.item<double>()), 1e-15);
}

TEST(StopGradientTest, WithStopGradientMatchesAnalytic) {
  std::mt19937_64 rng(22);
  const std::vector<int> lengths = {4, 6, 3, 5, 2};
  const std::vector<double> shift = {0.05, -0.1, 0.02, 0.3, -0.03};
  Matrix lp_old = RandomLogProbs(lengths, &rng);
  Matrix lp_new = Shift(lp_old, shift);
  const std::vector<double> adv = GroupAdvantages({1, 0, 1, 0, 0}, false);
  Batch b = MakeBatch(lp_new, lp_old, adv, {0, 0, 0, 0, 0});
  const double z = 20.0;
  // Analytic: c_i = clamp(exp(shift_i)), w~ = c - (A.c/|A|^2) A; coeff = -w~_i A_i / Z.
  std::vector<double> c;
  double dot = 0, norm = 0;
  for (int i = 0; i < 5; ++i) {
    c.push_back(std::clamp(std::exp(shift[i]), 0.8, 1.2));
    dot += adv[i] * c[i];
    norm += adv[i] * adv[i];
  }
  torch::Tensor g = Coefficients(Config("dfpo", "adv_orthogonal"), b, z);
  for (int i = 0; i < 5; ++i) {
    const double expected = -(c[i] - dot / norm * adv[i]) * adv[i] / z;
    for (int t = 0; t < 6; ++t) {
      EXPECT_NEAR(g[i][t].item<double>(), t < lengths[i] ? expected : 0.0, 1e-14) << i << "," << t;
    }
  }
}

// ---- Oracle 5: on-policy reduction ---------------------------------------------

TEST(OnPolicyReductionTest, DfpoEqualsDrGrpoUnderSameZ) {
  std::mt19937_64 rng(31);
  const std::vector<int> lengths = {3, 8, 5, 2, 6, 4, 7};
  Matrix lp = RandomLogProbs(lengths, &rng);
  std::vector<double> adv = GroupAdvantages({1, 0, 0, 1}, false);
  for (double a : GroupAdvantages({0.2, 0.9, 0.4}, true)) adv.push_back(a);
  const std::vector<int64_t> gid = {0, 0, 0, 0, 1, 1, 1};
  const double z = 35.0;
  double loss_ref = 0;
  Batch ref = MakeBatch(lp, lp, adv, gid);
  torch::Tensor g_ref = Coefficients(Config("dr_grpo"), ref, z, &loss_ref);
  for (const char* transform : {"min_replace", "adv_orthogonal"}) {
    Batch b = MakeBatch(lp, lp, adv, gid);
    double loss = 0;
    torch::Tensor g = Coefficients(Config("dfpo", transform), b, z, &loss);
    EXPECT_LE((g - g_ref).abs().max().item<double>(), 1e-16) << transform;
    // The losses differ (DFPO's is -sum w A lp, PPO's -sum r A); the gradients agree.
    EXPECT_TRUE(std::isfinite(loss));
  }
}

// ---- Oracle 6: permutation invariance --------------------------------------------

TEST(PermutationTest, LossAndGradientInvariantWithinGroup) {
  std::mt19937_64 rng(41);
  const std::vector<int> lengths = {3, 8, 5, 2, 6, 4};
  Matrix lp_old = RandomLogProbs(lengths, &rng);
  Matrix lp_new = Shift(lp_old, {0.1, -0.25, 0.02, 0.3, -0.05, 0.15});
  const std::vector<double> adv = GroupAdvantages({1, 0, 0, 1, 1, 0.5}, false);
  const std::vector<int> perm = {4, 2, 0, 5, 1, 3};
  Matrix lp_new_p, lp_old_p;
  std::vector<double> adv_p;
  for (int p : perm) {
    lp_new_p.push_back(lp_new[p]);
    lp_old_p.push_back(lp_old[p]);
    adv_p.push_back(adv[p]);
  }
  const std::vector<int64_t> gid(6, 0);
  for (const char* name : {"dfpo", "dfpo_o", "grpo", "dr_grpo", "dapo", "gspo"}) {
    LossConfig c = Config(std::string(name) == "dfpo_o" ? "dfpo" : name,
                          std::string(name) == "dfpo_o" ? "adv_orthogonal" : "min_replace");
    c.gspo_eps = 0.2;
    Batch a = MakeBatch(lp_new, lp_old, adv, gid);
    Batch b = MakeBatch(lp_new_p, lp_old_p, adv_p, gid);
    double la = 0, lb = 0;
    torch::Tensor ga = Coefficients(c, a, 28.0, &la);
    torch::Tensor gb = Coefficients(c, b, 28.0, &lb);
    EXPECT_NEAR(la, lb, 1e-14) << name;
    for (int k = 0; k < 6; ++k) {
      EXPECT_LE((gb[k] - ga[perm[k]]).abs().max().item<double>(), 1e-15) << name;
    }
  }
}

// ---- Oracle 7: all rewards equal ------------------------------------------------------

TEST(AllEqualRewardsTest, ZeroLossZeroGradientNoNaN) {
  std::mt19937_64 rng(51);
  const std::vector<int> lengths = {3, 5, 4, 6};
  Matrix lp_old = RandomLogProbs(lengths, &rng);
  Matrix lp_new = Shift(lp_old, {0.4, -0.4, 0.0, 0.1});
  for (bool std_norm : {false, true}) {
    const std::vector<double> adv = GroupAdvantages({1, 1, 1, 1}, std_norm);
    for (double a : adv) EXPECT_EQ(a, 0.0);
    for (const char* name : {"dfpo", "dfpo_o", "grpo", "dr_grpo", "dapo", "gspo"}) {
      LossConfig c = Config(std::string(name) == "dfpo_o" ? "dfpo" : name,
                            std::string(name) == "dfpo_o" ? "adv_orthogonal" : "min_replace");
      c.dfpo_max_abs_log_ratio = 0.2;
      Batch b = MakeBatch(lp_new, lp_old, adv, {0, 0, 0, 0});
      double loss = 1;
      EstimatorOutput out;
      torch::Tensor g = Coefficients(c, b, 18.0, &loss, &out);
      EXPECT_EQ(loss, 0.0) << name;
      EXPECT_EQ(g.abs().max().item<double>(), 0.0) << name;
      EXPECT_TRUE(torch::isfinite(g).all().item<bool>()) << name;
      EXPECT_TRUE(std::isfinite(out.orthogonality_abs) && std::isfinite(out.orthogonality_scale));
      if (out.sequence_weights.defined()) {
        EXPECT_TRUE(torch::isfinite(out.sequence_weights).all().item<bool>());
      }
    }
  }
}

TEST(ExtremeRatioTest, GradientsStayFinite) {
  Matrix lp_old = {{-50.0, -1.0}, {-1.0, -60.0}, {-1.0}, {-2.0}};
  Matrix lp_new = {{-0.1, -1.0}, {-1.0, -0.2}, {-80.0}, {-2.0}};
  for (const char* name : {"dfpo", "dfpo_o", "grpo", "dr_grpo", "dapo", "gspo"}) {
    LossConfig c = Config(std::string(name) == "dfpo_o" ? "dfpo" : name,
                          std::string(name) == "dfpo_o" ? "adv_orthogonal" : "min_replace");
    Batch b = MakeBatch(lp_new, lp_old, {0.5, -0.5, 0.5, -0.5}, {0, 0, 0, 0});
    double loss = 0;
    torch::Tensor g = Coefficients(c, b, 6.0, &loss);
    EXPECT_TRUE(torch::isfinite(g).all().item<bool>()) << name;
    EXPECT_TRUE(std::isfinite(loss)) << name;
  }
}

// ---- DFPO details ---------------------------------------------------------------------

TEST(DfpoTest, TrustRegionDropsWholeGroups) {
  std::mt19937_64 rng(61);
  const std::vector<int> lengths = {3, 5, 4, 6, 2, 3};
  Matrix lp_old = RandomLogProbs(lengths, &rng);
  // Group 0: one rollout far off-policy; group 1: all close.
  Matrix lp_new = Shift(lp_old, {0.5, 0.0, 0.01, 0.02, -0.01, 0.0});
  const std::vector<double> adv = {0.5, -0.5, 0.5, -0.5, 0.5, -0.5};
  Batch b = MakeBatch(lp_new, lp_old, adv, {0, 0, 0, 1, 1, 1});
  LossConfig c = Config("dfpo");
  c.dfpo_max_abs_log_ratio = 0.1;
  EstimatorOutput out;
  torch::Tensor g = Coefficients(c, b, 10.0, nullptr, &out);
  EXPECT_EQ(out.groups_dropped_trust_region, 1);
  EXPECT_EQ(g.slice(0, 0, 3).abs().max().item<double>(), 0.0);
  EXPECT_GT(g.slice(0, 3, 6).abs().max().item<double>(), 0.0);
}

TEST(DfpoTest, CoefficientHasNoLengthFactor) {
  std::mt19937_64 rng(62);
  const std::vector<int> lengths = {2, 9};
  Matrix lp_old = RandomLogProbs(lengths, &rng);
  Matrix lp_new = Shift(lp_old, {0.05, -0.05});
  Batch b = MakeBatch(lp_new, lp_old, {0.5, -0.5}, {0, 0});
  torch::Tensor g = Coefficients(Config("dfpo"), b, 11.0);
  // min-replace: w~ = exp(-0.05) for both; coeff_i = -w~ A_i / Z on every token.
  const double w = std::exp(-0.05);
  EXPECT_NEAR(g[0][0].item<double>(), -w * 0.5 / 11.0, 1e-15);
  EXPECT_NEAR(g[0][1].item<double>(), -w * 0.5 / 11.0, 1e-15);
  EXPECT_NEAR(g[1][8].item<double>(), w * 0.5 / 11.0, 1e-15);
}

TEST(KlTest, K3ReferenceTermAddsGradientOnlyWhenEnabled) {
  std::mt19937_64 rng(71);
  const std::vector<int> lengths = {3, 4};
  Matrix lp_old = RandomLogProbs(lengths, &rng);
  Batch b = MakeBatch(lp_old, lp_old, {0.0, 0.0}, {0, 0});
  Matrix ref = Shift(lp_old, {0.3, -0.2});
  LossConfig c = Config("dfpo");
  c.kl_coef = 0.5;
  EstimatorInput in = b.Input(7.0);
  in.lp_ref = Padded(ref, 4);
  auto est = MakeEstimator(c);
  ASSERT_TRUE(est.ok());
  EstimatorOutput out = (*est)->Compute(in);
  torch::Tensor g = torch::autograd::grad({out.loss}, {b.lp_new})[0];
  // d/dlp_new of kl_coef * (e^{ref-new} - (ref-new) - 1) / Z = kl_coef * (1 - e^{ref-new}) / Z.
  EXPECT_NEAR(g[0][0].item<double>(), 0.5 * (1 - std::exp(0.3)) / 7.0, 1e-15);
  EXPECT_NEAR(g[1][3].item<double>(), 0.5 * (1 - std::exp(-0.2)) / 7.0, 1e-15);
  EXPECT_EQ(g[0][3].item<double>(), 0.0);  // Padding.
}

// ---- Cancellation residual on shared prefixes ---------------------------------------

// Two groups with shared prefixes of different lengths and unequal completion
// lengths, off-policy ratios inside and outside the clip range.
struct CancellationCase {
  std::vector<std::vector<int>> tokens;
  std::vector<int64_t> gid;
  std::vector<double> adv;
};

CancellationCase MakeCancellationCase() {
  CancellationCase k;
  k.tokens = {{5, 6, 7, 1},
              {5, 6, 7, 9, 9, 9, 2},
              {5, 6, 7, 3, 3},
              {5, 6, 8},  // group 0
              {4, 4, 1, 2, 3, 5, 6, 7, 8},
              {4, 4, 9},
              {4, 4, 2, 2}};  // group 1
  k.gid = {0, 0, 0, 0, 1, 1, 1};
  for (double a : GroupAdvantages({1, 0, 1, 0}, false)) k.adv.push_back(a);
  for (double a : GroupAdvantages({1, 0, 0}, false)) k.adv.push_back(a);
  return k;
}

double Residual(const LossConfig& c, const CancellationCase& k) {
  std::vector<int> lengths;
  for (const auto& t : k.tokens) lengths.push_back(static_cast<int>(t.size()));
  std::mt19937_64 rng(81);
  Matrix lp_old = RandomLogProbs(lengths, &rng);
  Matrix lp_new = Shift(lp_old, {0.03, -0.02, 0.3, 0.01, -0.04, 0.02, -0.3});
  Batch b = MakeBatch(lp_new, lp_old, k.adv, k.gid);
  torch::Tensor g = Coefficients(c, b, 40.0);
  std::vector<int64_t> shared;
  for (int grp = 0; grp < 2; ++grp) {
    std::vector<const std::vector<int>*> members;
    for (size_t i = 0; i < k.tokens.size(); ++i) {
      if (k.gid[i] == grp) members.push_back(&k.tokens[i]);
    }
    shared.push_back(CommonPrefixLength(members));
  }
  EXPECT_EQ(shared, (std::vector<int64_t>{2, 2}));
  CancellationSums s = SharedPrefixCancellation(g, b.gid, 2, shared);
  EXPECT_EQ(s.cells, 4);
  EXPECT_GT(s.abs, 0.0);
  return s.net / s.abs;
}

TEST(CancellationResidualTest, NearZeroForDfpoClearlyNonZeroForGrpo) {
  CancellationCase k = MakeCancellationCase();
  EXPECT_LE(Residual(Config("dfpo", "min_replace"), k), 1e-6);
  EXPECT_LE(Residual(Config("dfpo", "adv_orthogonal"), k), 1e-6);
  EXPECT_GT(Residual(Config("grpo"), k), 0.05);
  EXPECT_GT(Residual(Config("gspo"), k), 0.05);
}

TEST(CancellationResidualTest, CommonPrefixLength) {
  std::vector<int> a = {1, 2, 3}, b = {1, 2, 4}, c = {1, 2};
  EXPECT_EQ(CommonPrefixLength({&a, &b}), 2);
  EXPECT_EQ(CommonPrefixLength({&a, &b, &c}), 2);
  EXPECT_EQ(CommonPrefixLength({&a, &a}), 3);
  EXPECT_EQ(CommonPrefixLength({&a}), 0);
}

// ---- Behaviour weights (loss.behaviour_weight) -------------------------------

// Per-token weights W scale each token's coefficient by exactly its weight for
// the token-level estimators (their loss is sum_t W x_t with W constant), off
// the policy as well as on it; gspo scales each row by the geometric mean of
// its tokens' weights.
TEST(BehaviourWeightTest, WeightsScaleEachTokensCoefficient) {
  const std::vector<int> lengths = {3, 7, 5, 9, 4, 6};
  const std::vector<double> adv = {0.5, 0.5, -0.5, -0.5, 1.0, -1.0};
  const std::vector<int64_t> gid = {0, 0, 0, 0, 1, 1};
  std::mt19937_64 rng(31);
  Matrix lp_old = RandomLogProbs(lengths, &rng);
  Matrix lp_new = Shift(lp_old, {0.05, -0.03, 0.3, -0.25, 0.01, 0.0});
  Matrix w_rows = RandomLogProbs(lengths, &rng, std::log(0.3), std::log(2.0));
  for (auto& row : w_rows) {
    for (double& v : row) v = std::exp(v);
  }
  for (const char* name : {"dfpo", "grpo", "dr_grpo", "dapo", "gspo"}) {
    Batch plain = MakeBatch(lp_new, lp_old, adv, gid);
    Batch weighted = MakeBatch(lp_new, lp_old, adv, gid);
    auto est = MakeEstimator(Config(name));
    ASSERT_TRUE(est.ok());
    EstimatorInput in = weighted.Input(10.0);
    in.token_weights = Padded(w_rows, in.mask.size(1)) + (1.0 - in.mask);  // 1 on padding.
    EstimatorOutput out = (*est)->Compute(in);
    torch::Tensor g =
        torch::autograd::grad({out.loss}, {weighted.lp_new}, {}, false, false, true)[0];
    torch::Tensor g0 = Coefficients(Config(name), plain, 10.0);
    torch::Tensor scale = in.token_weights;
    if (std::string(name) == "gspo") {
      torch::Tensor log_w = (in.token_weights.log() * in.mask).sum(1) / in.mask.sum(1);
      scale = log_w.exp().unsqueeze(1).expand_as(g0);
    }
    EXPECT_LE((g - scale * g0).abs().max().item<double>(), 1e-15) << name;
    EXPECT_GT(g0.abs().max().item<double>(), 1e-3) << name;
  }
}

// Oracle 1 with the weights on: the shared token a* at the shared context h*
// has one pi_prox and one pi_behav, hence one weight in every row, and
// dr_grpo and dfpo still cancel it exactly.
TEST_F(SharedTokenTest, CancellationSurvivesBehaviourWeights) {
  Batch b = OnPolicy();
  std::mt19937_64 rng(13);
  Matrix w_rows = RandomLogProbs(lengths_, &rng, std::log(0.5), std::log(2.0));
  for (auto& row : w_rows) {
    for (double& v : row) v = std::exp(v);
    row[0] = 1.7;
  }
  for (const char* name : {"dr_grpo", "dfpo"}) {
    auto est = MakeEstimator(Config(name));
    ASSERT_TRUE(est.ok());
    EstimatorInput in = b.Input(24.0);
    in.token_weights = Padded(w_rows, in.mask.size(1)) + (1.0 - in.mask);
    EstimatorOutput out = (*est)->Compute(in);
    torch::Tensor g = torch::autograd::grad({out.loss}, {b.lp_new}, {}, false, false, true)[0];
    EXPECT_EQ(g.select(1, 0).sum().item<double>(), 0.0) << name;
    EXPECT_GT(g.select(1, 0).abs().sum().item<double>(), 1e-3) << name;
  }
}

TEST(EstimatorFactoryTest, RejectsUnknownNames) {
  EXPECT_FALSE(MakeEstimator(Config("ppo")).ok());
  EXPECT_FALSE(MakeEstimator(Config("dfpo", "other")).ok());
  for (const char* name : {"dfpo", "grpo", "dr_grpo", "dapo", "gspo"}) {
    auto e = MakeEstimator(Config(name));
    ASSERT_TRUE(e.ok()) << name;
    EXPECT_EQ((*e)->name(), name);
  }
}

}  // namespace
}  // namespace rlvr::learner
