// PhaseGauge: one series per phase, exactly the current one at 1, in the
// text a scrape returns.
#include "common/metrics/phase.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <sstream>

#include "prometheus/text_serializer.h"

namespace rlvr {
namespace {

using ::testing::HasSubstr;

std::string Scrape(prometheus::Registry& registry) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry.Collect());
  return out.str();
}

TEST(PhaseGaugeTest, EveryPhaseIsASeriesAndOnlyTheCurrentOneIsOne) {
  prometheus::Registry registry;
  PhaseGauge phase(registry, "rlvr_test_phase", "What the process does.",
                   {"starting", "rendezvous", "training"});
  EXPECT_EQ(phase.current(), "starting");
  std::string text = Scrape(registry);
  EXPECT_THAT(text, HasSubstr("# TYPE rlvr_test_phase gauge"));
  EXPECT_THAT(text, HasSubstr("rlvr_test_phase{phase=\"starting\"} 1"));
  EXPECT_THAT(text, HasSubstr("rlvr_test_phase{phase=\"rendezvous\"} 0"));
  EXPECT_THAT(text, HasSubstr("rlvr_test_phase{phase=\"training\"} 0"));

  phase.Set("training");
  phase.Set("training");  // Setting the current phase again changes nothing.
  EXPECT_EQ(phase.current(), "training");
  text = Scrape(registry);
  EXPECT_THAT(text, HasSubstr("rlvr_test_phase{phase=\"starting\"} 0"));
  EXPECT_THAT(text, HasSubstr("rlvr_test_phase{phase=\"rendezvous\"} 0"));
  EXPECT_THAT(text, HasSubstr("rlvr_test_phase{phase=\"training\"} 1"));
}

TEST(PhaseGaugeDeathTest, AnUnknownPhaseIsAProgrammingError) {
  prometheus::Registry registry;
  PhaseGauge phase(registry, "rlvr_test_phase", "What the process does.", {"a", "b"});
  EXPECT_DEATH(phase.Set("c"), "unknown phase c");
}

}  // namespace
}  // namespace rlvr
