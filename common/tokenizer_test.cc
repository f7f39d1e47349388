#include "common/tokenizer.h"

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

}  // namespace
}  // namespace rlvr
