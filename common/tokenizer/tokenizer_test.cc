#include "common/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

namespace rlvr {
namespace {

TEST(CharTokenizerTest, RoundTripsPrintableAsciiAndNewline) {
  auto tok = MakeCharTokenizer();
  std::string text;
  for (char c = ' '; c <= '~'; ++c) text.push_back(c);
  text += "\nab";
  auto ids = tok->Encode(text);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(ids->size(), text.size());
  for (int id : *ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, tok->vocab_size());
    EXPECT_NE(id, tok->bos_id());
    EXPECT_NE(id, tok->eos_id());
    EXPECT_NE(id, tok->pad_id());
  }
  EXPECT_EQ(tok->Decode(*ids), text);
  EXPECT_EQ(tok->vocab_size(), 99);
}

TEST(CharTokenizerTest, SpecialTokensAreDistinctAndDecodeToNothing) {
  auto tok = MakeCharTokenizer();
  EXPECT_NE(tok->bos_id(), tok->eos_id());
  EXPECT_NE(tok->bos_id(), tok->pad_id());
  EXPECT_NE(tok->eos_id(), tok->pad_id());
  auto ids = tok->Encode("7");
  ASSERT_TRUE(ids.ok());
  std::vector<int> seq = {tok->bos_id(), (*ids)[0], tok->eos_id(), tok->pad_id()};
  EXPECT_EQ(tok->Decode(seq), "7");
  EXPECT_EQ(tok->Decode({-1, 1000}), "??");
}

TEST(CharTokenizerTest, UnknownCharactersAreErrors) {
  auto tok = MakeCharTokenizer();
  for (std::string bad : {std::string("12\t3"), std::string("caf\xc3\xa9"), std::string("a\x01"),
                          std::string(1, '\0'), std::string("\x7f")}) {
    auto ids = tok->Encode(bad);
    EXPECT_FALSE(ids.ok()) << "accepted: " << bad;
    if (!ids.ok()) {
      EXPECT_EQ(ids.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_NE(ids.status().message().find("unknown character"), absl::string_view::npos);
    }
  }
  EXPECT_TRUE(tok->Encode("").ok());
}

TEST(CharTokenizerTest, ExtendedInterface) {
  auto tok = MakeCharTokenizer();
  EXPECT_TRUE(tok->adds_bos());
  EXPECT_EQ(tok->stop_ids(), std::vector<int>{tok->eos_id()});
  EXPECT_EQ(tok->TokenId("<eos>"), tok->eos_id());
  EXPECT_EQ(tok->TokenId("<bos>"), tok->bos_id());
  EXPECT_EQ(tok->TokenId("<pad>"), tok->pad_id());
  auto seven = tok->Encode("7");
  ASSERT_TRUE(seven.ok());
  EXPECT_EQ(tok->TokenId("7"), (*seven)[0]);
  EXPECT_EQ(tok->TokenId("\n"), 3);
  EXPECT_FALSE(tok->TokenId("ab").has_value());
  EXPECT_FALSE(tok->TokenId("\t").has_value());
  EXPECT_EQ(tok->DecodeWithSpecial({tok->bos_id(), (*seven)[0], tok->eos_id(), 5000}),
            "<bos>7<eos>?");
}

}  // namespace
}  // namespace rlvr
