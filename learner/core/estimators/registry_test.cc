// Every estimator of this folder is linked and registered, with the traits
// the batcher relies on; the parsed estimator answers from them; unknown
// names are rejected with the registered names listed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "learner/core/estimator.h"
#include "learner/core/estimator_registry.h"

namespace rlvr::learner {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Expected {
  const char* name;
  bool std_normalized_advantages;
  bool dynamic_sampling;
  StepNormalizerRule normalizer;
};

// docs/algorithms.md: "Advantages", "The normaliser Z", "dapo".
const Expected kExpected[] = {
    {"dapo", true, true, StepNormalizerRule::kTokens},
    {"dfpo", false, false, StepNormalizerRule::kConfigured},
    {"dr_grpo", false, false, StepNormalizerRule::kConstant},
    {"grpo", true, false, StepNormalizerRule::kGroups},
    {"gspo", true, false, StepNormalizerRule::kGroups},
};

LossConfig Loss(const std::string& estimator) {
  LossConfig loss;
  loss.estimator = estimator;
  return loss;
}

TEST(EstimatorRegistryTest, ListsExactlyTheFiveEstimators) {
  EXPECT_THAT(RegisteredEstimatorNames(), ElementsAre("dapo", "dfpo", "dr_grpo", "grpo", "gspo"));
}

TEST(EstimatorRegistryTest, TraitsAreTheMethodsDefinitions) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    const EstimatorDefinition* d = FindEstimator(e.name);
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->name, e.name);
    EXPECT_EQ(d->traits.std_normalized_advantages, e.std_normalized_advantages);
    EXPECT_EQ(d->traits.dynamic_sampling, e.dynamic_sampling);
    EXPECT_EQ(d->traits.normalizer, e.normalizer);
    EXPECT_NE(d->make, nullptr);
  }
  EXPECT_EQ(FindEstimator("ppo"), nullptr);
  EXPECT_EQ(FindEstimator(""), nullptr);
}

TEST(EstimatorRegistryTest, ParsedEstimatorAnswersFromTheTraits) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    LossConfig loss = Loss(e.name);
    auto parsed = ParsedEstimator::Parse(loss);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->name(), e.name);
    EXPECT_EQ(parsed->loss().name(), e.name);
    EXPECT_EQ(parsed->config().estimator, e.name);
    EXPECT_EQ(parsed->std_normalized_advantages(), e.std_normalized_advantages);
    EXPECT_EQ(parsed->implies_dynamic_sampling(), e.dynamic_sampling);
    // 3 groups, 24 rollouts, 100 tokens, max_new_tokens 8.
    const double z = parsed->StepNormalizer(3, 24, 100, 8);
    switch (e.normalizer) {
      case StepNormalizerRule::kTokens:
      case StepNormalizerRule::kConfigured:  // loss.normalizer defaults to tokens.
        EXPECT_EQ(parsed->normalizer_rule(), StepNormalizerRule::kTokens);
        EXPECT_EQ(z, 100.0);
        break;
      case StepNormalizerRule::kConstant:
        EXPECT_EQ(parsed->normalizer_rule(), StepNormalizerRule::kConstant);
        EXPECT_EQ(z, 192.0);
        break;
      case StepNormalizerRule::kGroups:
        EXPECT_EQ(parsed->normalizer_rule(), StepNormalizerRule::kGroups);
        EXPECT_EQ(z, 3.0);
        break;
    }
    EXPECT_EQ(parsed->StepNormalizer(0, 0, 0, 8), 1.0);  // Z >= 1.
    loss.std_normalize = true;
    parsed = ParsedEstimator::Parse(loss);
    ASSERT_TRUE(parsed.ok());
    EXPECT_TRUE(parsed->std_normalized_advantages());
  }
  // A configured normaliser is resolved once, at parse time.
  LossConfig dfpo = Loss("dfpo");
  dfpo.normalizer = "constant";
  auto parsed = ParsedEstimator::Parse(dfpo);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->normalizer_rule(), StepNormalizerRule::kConstant);
  EXPECT_EQ(parsed->StepNormalizer(3, 24, 100, 8), 192.0);
}

TEST(EstimatorRegistryTest, UnknownNameListsTheRegisteredOnes) {
  absl::Status s = CheckEstimatorName("ppo");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "config key 'loss.estimator': expected one of {dapo, dfpo, dr_grpo, grpo, gspo}, "
            "got 'ppo'");
  auto parsed = ParsedEstimator::Parse(Loss("ppo"));
  EXPECT_EQ(parsed.status(), s);
  EXPECT_EQ(MakeEstimator(Loss("ppo")).status(), s);
  EXPECT_TRUE(CheckEstimatorName("dfpo").ok());
}

TEST(EstimatorRegistryTest, ParseRejectsBadKnobsNamingTheKey) {
  LossConfig loss = Loss("grpo");
  loss.normalizer = "rows";
  EXPECT_THAT(ParsedEstimator::Parse(loss).status().message(), HasSubstr("loss.normalizer"));
  loss = Loss("grpo");
  loss.old_logprobs = "cached";
  EXPECT_THAT(ParsedEstimator::Parse(loss).status().message(), HasSubstr("loss.old_logprobs"));
  loss = Loss("dapo");
  loss.clip_eps_high = -0.1;
  EXPECT_FALSE(ParsedEstimator::Parse(loss).ok());
  loss = Loss("dfpo");
  loss.dfpo_transform = "other";
  EXPECT_THAT(ParsedEstimator::Parse(loss).status().message(), HasSubstr("loss.dfpo_transform"));
}

TEST(EstimatorRegistryTest, CopiesShareTheLoss) {
  auto parsed = ParsedEstimator::Parse(Loss("dfpo"));
  ASSERT_TRUE(parsed.ok());
  ParsedEstimator copy = *parsed;
  EXPECT_EQ(&copy.loss(), &parsed->loss());
}

absl::StatusOr<std::unique_ptr<Estimator>> NoEstimator(const LossConfig&) {
  return absl::UnimplementedError("test");
}

TEST(EstimatorRegistryDeathTest, BadRegistrationsAbortAtStartUp) {
  EXPECT_DEATH(RegisterEstimator({.name = "dfpo", .traits = {}, .make = &NoEstimator}),
               "dfpo: registered twice");
  EXPECT_DEATH(RegisterEstimator({.name = "", .traits = {}, .make = &NoEstimator}), "empty name");
  EXPECT_DEATH(RegisterEstimator({.name = "x", .traits = {}, .make = nullptr}), "null factory");
}

}  // namespace
}  // namespace rlvr::learner
