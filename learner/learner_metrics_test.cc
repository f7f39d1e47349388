#include "learner/learner_metrics.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/metrics/phase.h"
#include "common/net/auth.h"
#include "prometheus/registry.h"

namespace rlvr::learner {
namespace {

// One owner per metric family: everything a learner process registers (its
// LearnerMetrics, the UpdateMetrics inside it that the Trainer records into,
// the auth counter, RunLearner's phase gauge) goes into a registry that throws on a second
// registration of a name, and every learner name of the metrics contract is
// there with one help text.
TEST(LearnerMetricsTest, OneOwnerPerFamily) {
  auto registry =
      std::make_shared<prometheus::Registry>(prometheus::Registry::InsertBehavior::Throw);
  std::unique_ptr<LearnerMetrics> metrics;
  ASSERT_NO_THROW(metrics = std::make_unique<LearnerMetrics>(registry));
  ASSERT_NO_THROW(TokenChecker("token", registry.get(), "learner"));
  std::unique_ptr<PhaseGauge> phase;
  ASSERT_NO_THROW(
      phase = std::make_unique<PhaseGauge>(
          *registry, "rlvr_learner_phase", kLearnerPhaseHelp,
          std::vector<std::string>(std::begin(kLearnerPhases), std::end(kLearnerPhases))));
  // A second owner of any learner family is refused.
  EXPECT_ANY_THROW(UpdateMetrics again(*registry));

  std::map<std::string, std::string> help;
  for (const auto& family : registry->Collect()) {
    EXPECT_TRUE(help.emplace(family.name, family.help).second) << family.name;
    EXPECT_FALSE(family.help.empty()) << family.name;
  }
  const char* src = std::getenv("RLVR_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  std::ifstream contract(std::string(src) + "/deploy/checks/metrics-contract.txt");
  ASSERT_TRUE(contract.good());
  std::string line;
  int checked = 0;
  while (std::getline(contract, line)) {
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    if (name.rfind("rlvr_learner_", 0) != 0) continue;
    EXPECT_TRUE(help.count(name)) << name << " is in the contract but not registered";
    ++checked;
  }
  EXPECT_GT(checked, 30);
}

}  // namespace
}  // namespace rlvr::learner
