#include "learner/diagnostics/update_diagnostics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "learner/diagnostics/update_metrics.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "rlvr/v1/status.pb.h"

namespace rlvr::learner {
namespace {

TEST(UpdateDiagnosticsTest, MergePackUnpackFinalize) {
  UpdateDiagnostics a, b;
  a.set_loss_sum(1.5);
  a.set_tokens(10);
  a.set_clipped_tokens(2);
  a.set_ratio_sum(11.0);
  a.set_ratio_max(1.4);
  a.set_cancellation_net(0.1);
  a.set_cancellation_abs(1.0);
  b.set_loss_sum(-0.5);
  b.set_tokens(30);
  b.set_clipped_tokens(6);
  b.set_ratio_sum(29.0);
  b.set_ratio_max(1.2);
  b.set_cancellation_net(0.3);
  b.set_cancellation_abs(3.0);
  b.set_rollouts(4);
  b.set_reward_sum(2.0);
  b.set_correct_rollouts(2);
  b.set_reward_mean(0.7);  // Not reduced: stays a's.
  MergeDiagnostics(b, &a);
  EXPECT_EQ(a.reward_mean(), 0.0);
  EXPECT_EQ(a.tokens(), 40);
  auto c = UnpackDiagnostics(PackDiagnostics(a));
  ASSERT_TRUE(c.ok()) << c.status();
  c->set_optimizer_steps(2);
  FinalizeDiagnostics(&*c);
  EXPECT_DOUBLE_EQ(c->loss_sum(), 1.0);
  EXPECT_DOUBLE_EQ(c->loss(), 0.5);
  EXPECT_DOUBLE_EQ(c->clip_fraction(), 0.2);
  EXPECT_DOUBLE_EQ(c->ratio_mean(), 1.0);
  EXPECT_DOUBLE_EQ(c->ratio_max(), 1.4);
  EXPECT_DOUBLE_EQ(c->cancellation_residual(), 0.1);
  EXPECT_DOUBLE_EQ(c->trained_reward_mean(), 0.5);
  EXPECT_DOUBLE_EQ(c->trained_accuracy(), 0.5);
  EXPECT_EQ(c->kl_behaviour_recomputed(), 0.0);  // 0 / 0.
  EXPECT_FALSE(UnpackDiagnostics({{1.0, 2.0}, {}}).ok());
}

// Across ranks: a sum all-reduce of the packed sums and a max all-reduce of
// the packed maxima give what merging the messages gives.
TEST(UpdateDiagnosticsTest, PackedReductionEqualsMerge) {
  UpdateDiagnostics r0, r1;
  r0.set_tokens(7);
  r0.set_ratio_max(3.0);
  r0.set_entropy_sum(0.25);
  r1.set_tokens(5);
  r1.set_ratio_max(2.0);
  r1.set_entropy_sum(0.5);
  r1.set_groups_dropped_trust_region(1);
  PackedDiagnostics p0 = PackDiagnostics(r0), p1 = PackDiagnostics(r1);
  ASSERT_EQ(p0.sum.size(), p1.sum.size());
  ASSERT_EQ(p0.max.size(), 1u);  // ratio_max.
  for (size_t i = 0; i < p0.sum.size(); ++i) p0.sum[i] += p1.sum[i];
  for (size_t i = 0; i < p0.max.size(); ++i) p0.max[i] = std::max(p0.max[i], p1.max[i]);
  auto reduced = UnpackDiagnostics(p0);
  ASSERT_TRUE(reduced.ok());
  UpdateDiagnostics merged = r0;
  MergeDiagnostics(r1, &merged);
  EXPECT_EQ(reduced->SerializeAsString(), merged.SerializeAsString());
}

// The published keys and names are a contract (scripts/compare,
// services/runner/report.cc, foreign GetStatus clients): pinned here.
TEST(UpdateDiagnosticsTest, JsonKeysAndStatusFieldsAreTheContract) {
  UpdateDiagnostics d;
  d.set_tokens(12);
  d.set_reward_mean(0.25);
  d.set_kept_positive_rollouts(3);
  d.set_groups_dropped_balance(2);
  d.set_kl_behaviour_recomputed(0.125);
  nlohmann::json j;
  DiagnosticsToJson(d, &j);
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.insert(it.key());
  const std::set<std::string> expected = {"accuracy",
                                          "behaviour_weight_mean",
                                          "behaviour_weight_truncated",
                                          "cancellation_residual",
                                          "clip_fraction",
                                          "entropy",
                                          "grad_norm",
                                          "groups_dropped",
                                          "kl",
                                          "loss",
                                          "lr",
                                          "negative_rollouts",
                                          "orthogonality_residual",
                                          "positive_rollouts",
                                          "ratio_max",
                                          "ratio_mean",
                                          "reward",
                                          "shared_cells",
                                          "tokens",
                                          "zero_variance_fraction"};
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(j["groups_dropped"].size(), 3u);
  EXPECT_TRUE(j["groups_dropped"]["balance"].is_number_integer());
  EXPECT_EQ(j["groups_dropped"]["balance"].get<int64_t>(), 2);
  EXPECT_TRUE(j["tokens"].is_number_integer());
  EXPECT_TRUE(j["positive_rollouts"].is_number_integer());
  EXPECT_TRUE(j["reward"].is_number_float());
  EXPECT_EQ(j["kl"].get<double>(), 0.125);

  rlvr::v1::LearnerStatus s;
  s.set_step(9);
  DiagnosticsToStatus(d, &s);
  EXPECT_EQ(s.reward_mean(), 0.25);
  EXPECT_EQ(s.kl_behaviour_recomputed(), 0.125);
  EXPECT_EQ(s.step(), 9u);
}

// `status: true` fills the LearnerStatus field of the field's name: with
// every field set, exactly these (GetStatus clients read them).
TEST(UpdateDiagnosticsTest, StatusFieldsOfEveryFieldSet) {
  UpdateDiagnostics d;
  const google::protobuf::Descriptor* descriptor = d.GetDescriptor();
  const google::protobuf::Reflection* r = d.GetReflection();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = descriptor->field(i);
    if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_INT64) {
      r->SetInt64(&d, f, f->number());
    } else {
      r->SetDouble(&d, f, f->number() + 0.5);
    }
  }
  rlvr::v1::LearnerStatus s;
  DiagnosticsToStatus(d, &s);
  std::vector<const google::protobuf::FieldDescriptor*> set;
  s.GetReflection()->ListFields(s, &set);
  std::set<std::string> names;
  for (const google::protobuf::FieldDescriptor* f : set) names.insert(f->name());
  EXPECT_EQ(names, (std::set<std::string>{"reward_mean", "accuracy", "entropy", "clip_fraction",
                                          "grad_norm", "kl_behaviour_recomputed",
                                          "cancellation_residual"}));
  EXPECT_EQ(s.grad_norm(), d.grad_norm());
  EXPECT_EQ(s.cancellation_residual(), d.cancellation_residual());
}

TEST(UpdateDiagnosticsTest, ClampNamesTheClampedKeys) {
  UpdateDiagnostics d;
  d.set_ratio_max(std::numeric_limits<double>::infinity());
  d.set_kl_behaviour_recomputed(std::nan(""));
  d.set_entropy(0.5);
  d.set_tokens(std::numeric_limits<int64_t>::max());  // Integers are never clamped.
  std::vector<std::string> clamped = ClampDiagnostics(&d);
  EXPECT_EQ(clamped, (std::vector<std::string>{"ratio_max", "kl"}));
  EXPECT_EQ(d.ratio_max(), kDiagnosticLimit);
  EXPECT_EQ(d.kl_behaviour_recomputed(), kDiagnosticLimit);
  EXPECT_EQ(d.entropy(), 0.5);
}

double Value(prometheus::Registry& r, const std::string& name, const std::string& label = "") {
  for (const auto& family : r.Collect()) {
    if (family.name != name) continue;
    for (const auto& m : family.metric) {
      if (!label.empty() && (m.label.empty() || m.label[0].value != label)) continue;
      return family.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  ADD_FAILURE() << "no " << name << " " << label;
  return -1;
}

// Every family is registered once (a registry that throws on a second
// registration of a name) and a record reaches gauges and counters.
TEST(UpdateMetricsTest, RegistersOnceAndRecords) {
  prometheus::Registry registry(prometheus::Registry::InsertBehavior::Throw);
  UpdateMetrics metrics(registry);
  EXPECT_ANY_THROW(UpdateMetrics again(registry));
  UpdateDiagnostics d;
  d.set_tokens(40);
  d.set_groups_dropped_balance(2);
  d.set_kept_negative_rollouts(5);
  d.set_entropy(0.75);
  d.set_ratio_max(std::numeric_limits<double>::infinity());
  metrics.RecordUpdate(3, d, 0.5);
  metrics.RecordUpdate(4, d, 0.5);
  EXPECT_EQ(Value(registry, "rlvr_learner_step"), 4.0);
  EXPECT_EQ(Value(registry, "rlvr_learner_tokens_trained_total"), 80.0);
  EXPECT_EQ(Value(registry, "rlvr_learner_groups_dropped_total", "balance"), 4.0);
  EXPECT_EQ(Value(registry, "rlvr_learner_groups_dropped_total", "trust_region"), 0.0);
  EXPECT_EQ(Value(registry, "rlvr_learner_negative_rollouts"), 5.0);
  EXPECT_EQ(Value(registry, "rlvr_learner_entropy"), 0.75);
  EXPECT_EQ(Value(registry, "rlvr_learner_ratio_max"), kDiagnosticLimit);
  EXPECT_EQ(Value(registry, "rlvr_learner_diagnostics_clamped_total", "ratio_max"), 2.0);
  metrics.CounterFamily("rlvr_learner_groups_dropped_total").Add({{"reason", "stale"}}).Increment();
  EXPECT_EQ(Value(registry, "rlvr_learner_groups_dropped_total", "stale"), 1.0);
}

}  // namespace
}  // namespace rlvr::learner
