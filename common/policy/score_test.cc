#include "common/policy/score.h"

#include <gtest/gtest.h>

#include "common/policy/model.h"

namespace rlvr::policy {
namespace {

TEST(ScoreSequenceTest, MatchesFullForwardInAnyChunking) {
  torch::set_num_threads(1);
  ModelConfig c;
  c.d_model = 32;
  c.n_layers = 2;
  c.n_heads = 4;
  c.d_ff = 40;
  c.max_seq_len = 16;
  c.init_std = 0.3;
  auto m = CreateTransformer(c, 29, 9);
  ASSERT_TRUE(m.ok());
  // Longer than max_seq_len: positions past the RoPE table are computed.
  const std::vector<int> ids = {1, 4, 9, 16, 25, 7, 3, 3, 3, 28, 0, 5, 11, 13, 17, 19, 23, 2, 6};
  torch::Tensor logits;
  {
    torch::NoGradGuard ng;
    std::vector<int64_t> ids64(ids.begin(), ids.end());
    logits = (*m)->forward(torch::tensor(ids64, torch::kInt64).unsqueeze(0))[0];
  }
  torch::Tensor logp = torch::log_softmax(logits, -1);
  for (int64_t chunk : {1, 4, 0}) {
    auto score = ScoreSequence(*m, ids, chunk);
    ASSERT_TRUE(score.ok()) << score.status();
    ASSERT_EQ(score->logprobs.size(), ids.size() - 1);
    ASSERT_EQ(score->greedy.size(), ids.size());
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      EXPECT_NEAR(score->logprobs[i], logp[i][ids[i + 1]].item<double>(), 1e-6) << i;
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(score->greedy[i], logits[i].argmax().item<int64_t>()) << i;
    }
  }
  auto one = ScoreSequence(*m, {5});
  ASSERT_TRUE(one.ok());
  EXPECT_TRUE(one->logprobs.empty());
  EXPECT_EQ(one->greedy.size(), 1u);
  EXPECT_EQ(ScoreSequence(*m, {}).status().code(), absl::StatusCode::kInvalidArgument);
  absl::Status bad = ScoreSequence(*m, {1, 29}).status();
  EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("index 1"), std::string::npos) << bad;
}

}  // namespace
}  // namespace rlvr::policy
