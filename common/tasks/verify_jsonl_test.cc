#include "common/tasks/verify_jsonl.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"

namespace rlvr {
namespace {

std::vector<nlohmann::json> Lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(VerifyJsonlTest, OneResultPerLineInOrder) {
  std::istringstream in(R"({"completion": "so \\boxed{\\dfrac{2}{4}}", "answer": "\\frac{1}{2}"})"
                        "\n"
                        "\n"
                        R"({"completion": "#### 72", "answer": 72, "verifier": "gsm8k"})"
                        "\n"
                        R"({"completion": "\\boxed{2x}", "answer": "x^2"})"
                        "\n"
                        "not json\n"
                        R"({"completion": 5, "answer": "5"})"
                        "\n"
                        R"({"completion": "5", "answer": ["5"]})"
                        "\n"
                        R"({"completion": "5", "answer": "5", "verifier": "regex"})"
                        "\n"
                        R"([1, 2])"
                        "\n"
                        R"({"completion": "\\boxed{3:4}", "answer": "3:4"})"
                        "\n");
  std::ostringstream out;
  absl::StatusOr<VerifyJsonlStats> stats = VerifyJsonl(in, out, VerifyJsonlOptions());
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->lines, 9);
  EXPECT_EQ(stats->errors, 5);
  EXPECT_EQ(stats->correct, 3);
  EXPECT_EQ(stats->well_formed, 3);
  EXPECT_DOUBLE_EQ(stats->reward_sum, 3.0);
  std::vector<nlohmann::json> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 9u);
  // The key order is the documented one.
  EXPECT_EQ(out.str().substr(0, 30), R"({"reward":1.0,"extracted":"\\d)");
  EXPECT_EQ(lines[0]["reward"], 1.0);
  EXPECT_EQ(lines[0]["extracted"], "\\dfrac{2}{4}");
  EXPECT_EQ(lines[0]["parsed"]["completion"], "2/4");
  EXPECT_EQ(lines[0]["parsed"]["answer"], "1/2");
  EXPECT_EQ(lines[0]["well_formed"], true);
  EXPECT_NE(lines[0]["reason"].get<std::string>().find("exact"), std::string::npos);
  EXPECT_EQ(lines[1]["reward"], 1.0);  // gsm8k, a numeric answer
  EXPECT_EQ(lines[1]["parsed"]["answer"], "72");
  EXPECT_EQ(lines[2]["reward"], 0.0);
  EXPECT_NE(lines[2]["reason"].get<std::string>().find("differ at x="), std::string::npos);
  // Bad lines name their line number (blank lines count).
  EXPECT_EQ(lines[3]["line"], 5);
  EXPECT_EQ(lines[3]["error"], "invalid JSON");
  EXPECT_EQ(lines[4]["error"], "\"completion\" must be a string");
  EXPECT_EQ(lines[5]["error"], "\"answer\" must be a string or a number");
  EXPECT_NE(lines[6]["error"].get<std::string>().find("unknown verifier 'regex'"),
            std::string::npos);
  EXPECT_EQ(lines[7]["error"], "not a JSON object");
  // What does not parse shows null.
  EXPECT_TRUE(lines[8]["parsed"]["completion"].is_null());
  EXPECT_EQ(lines[8]["reward"], 1.0);
}

TEST(VerifyJsonlTest, ThreadsKeepTheOrder) {
  std::string input;
  for (int i = 0; i < 3000; ++i) {
    input +=
        absl::StrCat(R"({"completion": "\\boxed{)", i % 7, R"(}", "answer": ")", i % 5, "\"}\n");
  }
  VerifyJsonlOptions one;
  one.batch_lines = 500;
  VerifyJsonlOptions four = one;
  four.threads = 4;
  std::istringstream in1(input), in4(input);
  std::ostringstream out1, out4;
  auto s1 = VerifyJsonl(in1, out1, one);
  auto s4 = VerifyJsonl(in4, out4, four);
  ASSERT_TRUE(s1.ok() && s4.ok());
  EXPECT_EQ(out1.str(), out4.str());
  EXPECT_EQ(s1->lines, 3000);
  EXPECT_EQ(s1->correct, s4->correct);
  // i % 7 == i % 5 for i in [0, 35) when i < 5: 5 of every 35.
  EXPECT_EQ(s1->correct, 3000 / 35 * 5 + 5);
}

TEST(VerifyJsonlTest, OptionsAreChecked) {
  std::istringstream in("");
  std::ostringstream out;
  VerifyJsonlOptions options;
  options.verifier = "regex";
  EXPECT_EQ(VerifyJsonl(in, out, options).status().code(), absl::StatusCode::kInvalidArgument);
  options.verifier = "math";
  options.verifier_options.format_reward = 1.0;
  EXPECT_EQ(VerifyJsonl(in, out, options).status().code(), absl::StatusCode::kInvalidArgument);
  options.verifier_options.format_reward = 0.1;
  options.threads = 0;
  EXPECT_EQ(VerifyJsonl(in, out, options).status().code(), absl::StatusCode::kInvalidArgument);
  options.threads = 2;
  auto empty = VerifyJsonl(in, out, options);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->lines, 0);
  EXPECT_EQ(out.str(), "");
}

TEST(VerifyJsonlTest, FormatRewardAndDefaultVerifier) {
  std::istringstream in(R"({"completion": "#### 5", "answer": "#### 6"})"
                        "\n");
  std::ostringstream out;
  VerifyJsonlOptions options;
  options.verifier = "gsm8k";
  options.verifier_options.format_reward = 0.25;
  auto stats = VerifyJsonl(in, out, options);
  ASSERT_TRUE(stats.ok());
  std::vector<nlohmann::json> lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["reward"], 0.25);
  EXPECT_EQ(lines[0]["well_formed"], true);
  EXPECT_DOUBLE_EQ(stats->reward_sum, 0.25);
}

}  // namespace
}  // namespace rlvr
