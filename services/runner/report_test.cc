#include "services/runner/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>

namespace rlvr::runner {
namespace {

using ::testing::HasSubstr;

TEST(MetricsTailTest, ReadsAppendedLinesAndWaitsForPartialOnes) {
  std::string path = testing::TempDir() + "/metrics_tail.jsonl";
  std::ofstream(path) << R"({"step":1,"version":2,"reward_mean":0.25,"time":10})"
                      << "\n"
                      << R"({"step":2,"ver)";
  MetricsTail tail(path);
  auto first = tail.ReadNew();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].step, 1);
  EXPECT_DOUBLE_EQ(first[0].reward, 0.25);
  EXPECT_TRUE(std::isnan(first[0].heldout_accuracy));
  std::ofstream(path, std::ios::app) << R"(sion":3,"reward":0.5,"heldout_accuracy":0.4,"time":12})"
                                     << "\n";
  auto second = tail.ReadNew();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].version, 3);
  EXPECT_DOUBLE_EQ(second[0].heldout_accuracy, 0.4);
  EXPECT_TRUE(tail.ReadNew().empty());
}

TEST(ReportTest, ReadAllRejectsMalformedLinesByNumber) {
  std::string path = testing::TempDir() + "/metrics_bad.jsonl";
  std::ofstream(path) << R"({"step":1})"
                      << "\n"
                      << "not json\n";
  std::vector<UpdateRecord> out;
  absl::Status s = ReadAllMetrics(path, &out);
  EXPECT_THAT(s.message(), HasSubstr(":2:"));
}

TEST(ReportTest, ReadsWasteCountsByReason) {
  std::string path = testing::TempDir() + "/metrics_waste.jsonl";
  std::ofstream(path) << R"({"step":1,"groups_accepted":70,"leases_revoked":2,)"
                      << R"("groups_dropped":{"stale":3,"zero_variance":4},)"
                      << R"("groups_rejected":{"rate_limited":5,"stale_version":6}})"
                      << "\n"
                      << R"({"step":2})"
                      << "\n";
  std::vector<UpdateRecord> out;
  ASSERT_TRUE(ReadAllMetrics(path, &out).ok());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].groups_accepted, 70);
  EXPECT_EQ(out[0].leases_revoked, 2);
  EXPECT_EQ(out[0].groups_dropped,
            (std::map<std::string, double>{{"stale", 3}, {"zero_variance", 4}}));
  EXPECT_EQ(out[0].groups_rejected,
            (std::map<std::string, double>{{"rate_limited", 5}, {"stale_version", 6}}));
  EXPECT_TRUE(std::isnan(out[1].groups_accepted));
  EXPECT_TRUE(out[1].groups_dropped.empty());
  EXPECT_TRUE(out[1].groups_rejected.empty());
}

TEST(ReportTest, ProgressLineShowsStepRewardHeldoutAndEta) {
  std::vector<UpdateRecord> h(3);
  for (int i = 0; i < 3; ++i) {
    h[i].step = i + 1;
    h[i].version = i + 2;
    h[i].reward = 0.1 * (i + 1);
    h[i].tokens = 1000;
    h[i].time = 100 + 10 * i;
    h[i].heldout_accuracy = std::nan("");
    h[i].staleness = 0.5;
  }
  h[1].heldout_accuracy = 0.375;
  std::string line = ProgressLine(h, 10, 30);
  EXPECT_THAT(line, HasSubstr("step 3/10"));
  EXPECT_THAT(line, HasSubstr("v4"));
  EXPECT_THAT(line, HasSubstr("reward 0.300"));
  EXPECT_THAT(line, HasSubstr("heldout 37.5%"));
  EXPECT_THAT(line, HasSubstr("100 tok/s"));
  EXPECT_THAT(line, HasSubstr("ETA 1m10s"));
}

}  // namespace
}  // namespace rlvr::runner
