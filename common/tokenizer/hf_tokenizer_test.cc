#include "common/tokenizer/hf_tokenizer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/base/utf8.h"
#include "common/tokenizer/onig_regex.h"
#include "nlohmann/json.hpp"

namespace rlvr {
namespace {

using Json = nlohmann::json;

// The GPT-2 byte-level alphabet, written independently of the library: the
// printable Latin-1 bytes stand for themselves, the rest take U+0100.. in
// byte order.
std::string ByteChar(int b) {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    int next = 0;
    for (int i = 0; i < 256; ++i) {
      const bool printable = (i >= 0x21 && i <= 0x7E) || (i >= 0xA1 && i <= 0xAC) || i >= 0xAE;
      std::string s;
      utf8::Append(printable ? i : 0x100 + next++, &s);
      t[i] = s;
    }
    return t;
  }();
  return table[b];
}

constexpr char kQwenPattern[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// A tiny tokenizer.json: the 256 byte tokens (id = byte), then merged tokens,
// then added tokens from id 1000.
struct TinyModel {
  Json vocab = Json::object();
  Json merges = Json::array();
  int next_id = 256;
  TinyModel() {
    for (int b = 0; b < 256; ++b) vocab[ByteChar(b)] = b;
  }
  int Merge(const std::string& a, const std::string& b, bool as_array = false) {
    if (as_array) {
      merges.push_back(Json::array({a, b}));
    } else {
      merges.push_back(a + " " + b);
    }
    if (!vocab.contains(a + b)) vocab[a + b] = next_id++;
    return vocab[a + b].get<int>();
  }
  int Add(const std::string& token) {
    vocab[token] = next_id;
    return next_id++;
  }
};

Json AddedToken(int id, const std::string& content, bool special) {
  return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", false}, {"special", special}};
}

Json TokenizerJson(const TinyModel& m, bool nfc = true, bool ignore_merges = false) {
  Json j;
  j["version"] = "1.0";
  j["added_tokens"] =
      Json::array({AddedToken(1000, "<|eos|>", true), AddedToken(1001, "<|bos|>", true),
                   AddedToken(1002, "<think>", false)});
  j["normalizer"] = nfc ? Json{{"type", "NFC"}} : Json();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers", Json::array({{{"type", "Split"},
                                                        {"pattern", {{"Regex", kQwenPattern}}},
                                                        {"behavior", "Isolated"},
                                                        {"invert", false}},
                                                       {{"type", "ByteLevel"},
                                                        {"add_prefix_space", false},
                                                        {"trim_offsets", false},
                                                        {"use_regex", false}}})}};
  j["post_processor"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
  j["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"byte_fallback", false},
                {"ignore_merges", ignore_merges},
                {"vocab", m.vocab},
                {"merges", m.merges}};
  return j;
}

HfTokenizerFiles Files(const Json& tokenizer, const Json& config = {{"eos_token", "<|eos|>"}},
                       const std::string& generation = "") {
  HfTokenizerFiles f;
  f.source = "tiny";
  f.tokenizer_json = tokenizer.dump();
  f.tokenizer_config_json = config.dump();
  f.generation_config_json = generation;
  return f;
}

std::unique_ptr<Tokenizer> MustMake(const HfTokenizerFiles& f, HfTokenizerOptions o = {}) {
  auto t = MakeHfTokenizer(f, o);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : nullptr;
}

std::vector<int> Bytes(absl::string_view s) {
  std::vector<int> ids;
  for (unsigned char c : s) ids.push_back(c);
  return ids;
}

std::vector<int> MustEncode(const Tokenizer& t, absl::string_view text) {
  auto ids = t.Encode(text);
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<int>{};
}

TEST(Utf8Test, LossyReplacesMaximalInvalidSubparts) {
  // Each row: input bytes, expected output (the from_utf8_lossy answer).
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"abc", "abc"},
      {"\xC3\xA9", "\xC3\xA9"},
      {"\xFF", "\xEF\xBF\xBD"},
      {"\xE2\x82", "\xEF\xBF\xBD"},  // Truncated 3-byte: one U+FFFD.
      {"\xE2\x82"
       "a",
       "\xEF\xBF\xBD"
       "a"},
      {"\xF0\x9F\x98", "\xEF\xBF\xBD"},                          // Truncated 4-byte.
      {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},                  // U+1F600.
      {"\xC0\xAF", "\xEF\xBF\xBD\xEF\xBF\xBD"},                  // Overlong: two.
      {"\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // Surrogate: three.
      {"\xE0\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // Overlong 3-byte.
      {"\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // > U+10FFFF.
      {"\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD"},
      {"a\xE2\x82\xE2\x82\xAC", "a\xEF\xBF\xBD\xE2\x82\xAC"},
  };
  for (const auto& [in, want] : rows) EXPECT_EQ(utf8::Lossy(in), want) << in;
  EXPECT_EQ(utf8::FirstInvalid("ok\xC3\xA9"), absl::string_view::npos);
  EXPECT_EQ(utf8::FirstInvalid("ok\xC3"), 2u);
}

TEST(OnigRegexTest, SpaceEscapesBecomeOnigurumaClasses) {
  auto p = OnigToPcre2("\\s+(?!\\S)|[^\\s\\p{L}]");
  ASSERT_TRUE(p.ok()) << p.status();
  const std::string s = kOnigSpaceClassBody;
  EXPECT_EQ(*p, "[" + s + "]+(?![^" + s + "])|[^" + s + "\\p{L}]");
  EXPECT_NE(s.find("\\x{85}"), std::string::npos);
  EXPECT_EQ(s.find("FEFF"), std::string::npos);
  EXPECT_FALSE(OnigToPcre2("^a").ok());
  EXPECT_FALSE(OnigToPcre2("[^\\S]").ok());
  EXPECT_FALSE(OnigToPcre2("(?m:a)").ok());
  EXPECT_TRUE(OnigToPcre2("(?i:'s)|\\p{N}{1,3}").ok());
}

TEST(HfTokenizerTest, ByteLevelAlphabetAndNoMerges) {
  TinyModel m;
  auto t = MustMake(Files(TokenizerJson(m)));
  ASSERT_NE(t, nullptr);
  // Every byte is its own token: ids equal the UTF-8 bytes of the text.
  const std::string text = "Hi \n\t\xC2\xAD\xE4\xBD\xA0\xF0\x9F\x98\x80!";
  EXPECT_EQ(MustEncode(*t, text), Bytes(text));
  EXPECT_EQ(t->TokenId(ByteChar(' ')), ' ');
  EXPECT_EQ(ByteChar(' '), "\xC4\xA0");   // U+0120 'Ġ'.
  EXPECT_EQ(ByteChar('\n'), "\xC4\x8A");  // U+010A 'Ċ'.
  EXPECT_EQ(ByteChar(0xAD), "\xC5\x83");  // U+0143.
  EXPECT_EQ(t->Decode(Bytes(text)), text);
  EXPECT_EQ(t->vocab_size(), 1003);
  EXPECT_TRUE(t->Encode("").ok());
  EXPECT_TRUE(MustEncode(*t, "").empty());
}

TEST(HfTokenizerTest, MergesApplyLowestRankFirstInBothForms) {
  for (bool as_array : {false, true}) {
    TinyModel m;
    const int el = m.Merge("e", "l", as_array);  // Rank 0: beats "h e".
    const int he = m.Merge("h", "e", as_array);
    const int ll = m.Merge("l", "l", as_array);
    const int lo = m.Merge("l", "o", as_array);
    const int hel = m.Merge("h", "el", as_array);
    auto t = MustMake(Files(TokenizerJson(m)));
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(MustEncode(*t, "he"), std::vector<int>{he});
    // "hello": e+l (rank 0) first, then l+o (rank 3), then h+el (rank 4).
    EXPECT_EQ(MustEncode(*t, "hello"), (std::vector<int>{hel, lo}));
    // "lll": the leftmost of two equal-rank pairs merges first.
    EXPECT_EQ(MustEncode(*t, "lll"), (std::vector<int>{ll, 'l'}));
    EXPECT_EQ(t->Decode(MustEncode(*t, "hello lll")), "hello lll");
    EXPECT_EQ(t->TokenId("hel"), hel);
    (void)el;
  }
}

TEST(HfTokenizerTest, IgnoreMergesTakesWholeWordsFromTheVocab) {
  TinyModel m;
  m.Merge("a", "b");
  const int abc = m.Add("abc");  // Not reachable by merges.
  auto plain = MustMake(Files(TokenizerJson(m, true, /*ignore_merges=*/false)));
  auto ignore = MustMake(Files(TokenizerJson(m, true, /*ignore_merges=*/true)));
  ASSERT_NE(plain, nullptr);
  ASSERT_NE(ignore, nullptr);
  EXPECT_EQ(MustEncode(*plain, "abc"), (std::vector<int>{256, 'c'}));
  EXPECT_EQ(MustEncode(*ignore, "abc"), std::vector<int>{abc});
}

TEST(HfTokenizerTest, SplitUsesOnigurumaWhitespace) {
  // Merges that would join a space with U+0085 (C2 85 = "Âħ") or U+FEFF
  // (EF BB BF = "ï»¿") if they were in one pre-token.
  TinyModel m;
  const int nel = m.Merge(ByteChar(0xC2), ByteChar(0x85));
  const int space_nel = m.Merge(ByteChar(' '), ByteChar(0xC2) + ByteChar(0x85));
  const int ef = m.Merge(ByteChar(0xEF), ByteChar(0xBB));
  const int bom = m.Merge(ByteChar(0xEF) + ByteChar(0xBB), ByteChar(0xBF));
  const int space_bom = m.Merge(ByteChar(' '), ByteChar(0xEF) + ByteChar(0xBB) + ByteChar(0xBF));
  auto t = MustMake(Files(TokenizerJson(m)));
  ASSERT_NE(t, nullptr);
  // Oniguruma: U+0085 is \s, so " " is a pre-token (\s+(?!\S)) and "\u0085b"
  // another ([^\r\n\p{L}\p{N}]?\p{L}+); never " \u0085".
  EXPECT_EQ(MustEncode(*t,
                       "a \xC2\x85"
                       "b"),
            (std::vector<int>{'a', ' ', nel, 'b'}));
  // U+FEFF is not \s: " \uFEFF" is one pre-token ( ?[^\s\p{L}\p{N}]+).
  EXPECT_EQ(MustEncode(*t,
                       "a \xEF\xBB\xBF"
                       "b"),
            (std::vector<int>{'a', space_bom, 'b'}));
  (void)space_nel;
  (void)ef;
  (void)bom;
}

TEST(HfTokenizerTest, AddedTokensAreMatchedBeforeSplitting) {
  TinyModel m;
  auto t = MustMake(Files(TokenizerJson(m)));
  ASSERT_NE(t, nullptr);
  std::vector<int> want = Bytes("a");
  want.push_back(1000);
  for (int b : Bytes(" b")) want.push_back(b);
  want.push_back(1002);
  want.push_back(1002);
  for (int b : Bytes("<|eos")) want.push_back(b);
  EXPECT_EQ(MustEncode(*t, "a<|eos|> b<think><think><|eos"), want);
  EXPECT_EQ(t->Decode(want), "a b<think><think><|eos");  // Special skipped.
  EXPECT_EQ(t->DecodeWithSpecial(want), "a<|eos|> b<think><think><|eos");
  EXPECT_EQ(t->TokenId("<|eos|>"), 1000);
  EXPECT_EQ(t->TokenId("<think>"), 1002);
  EXPECT_FALSE(t->TokenId("<nope>").has_value());
}

TEST(HfTokenizerTest, AddedTokenStripAndSingleWordFlags) {
  TinyModel m;
  Json j = TokenizerJson(m);
  Json lr = AddedToken(1003, "<mask>", true);
  lr["lstrip"] = true;
  lr["rstrip"] = true;
  Json word = AddedToken(1004, "yes", false);
  word["single_word"] = true;
  j["added_tokens"].push_back(lr);
  j["added_tokens"].push_back(word);
  auto t = MustMake(Files(j));
  ASSERT_NE(t, nullptr);
  std::vector<int> want = Bytes("a");
  want.push_back(1003);
  want.push_back('b');
  EXPECT_EQ(MustEncode(*t, "a  <mask> \tb"), want);
  // single_word: "yes" inside "eyes" or after a non-ASCII letter is not a
  // match; standing alone it is.
  want = {1004};
  for (int b : Bytes(" eyes \xC3\xA9yes ")) want.push_back(b);
  want.push_back(1004);
  EXPECT_EQ(MustEncode(*t, "yes eyes \xC3\xA9yes yes"), want);
}

TEST(HfTokenizerTest, NfcNormalizesBeforeSplitting) {
  TinyModel m;
  auto nfc = MustMake(Files(TokenizerJson(m, /*nfc=*/true)));
  auto none = MustMake(Files(TokenizerJson(m, /*nfc=*/false)));
  ASSERT_NE(nfc, nullptr);
  ASSERT_NE(none, nullptr);
  // e + COMBINING ACUTE -> U+00E9; ANGSTROM SIGN -> U+00C5.
  EXPECT_EQ(MustEncode(*nfc, "cafe\xCC\x81"), Bytes("caf\xC3\xA9"));
  EXPECT_EQ(MustEncode(*nfc, "\xE2\x84\xAB"), Bytes("\xC3\x85"));
  EXPECT_EQ(MustEncode(*none, "cafe\xCC\x81"), Bytes("cafe\xCC\x81"));
  // Added tokens are matched in the raw text (normalized = false).
  EXPECT_EQ(MustEncode(*nfc, "<|eos|>"), std::vector<int>{1000});
}

TEST(HfTokenizerTest, DecodeReplacesInvalidUtf8LikeHuggingFace) {
  TinyModel m;
  auto t = MustMake(Files(TokenizerJson(m)));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->Decode({0xE2, 0x82, 'a'}),
            "\xEF\xBF\xBD"
            "a");
  EXPECT_EQ(t->Decode({0xF0, 0x9F, 0x98}), "\xEF\xBF\xBD");
  EXPECT_EQ(t->Decode({0xFF, 0xFE}), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(t->Decode({'o', 'k', -1, 5000, 1000}), "ok??");
  EXPECT_FALSE(t->Encode("bad \xFF input").ok());
}

TEST(HfTokenizerTest, ByteFallbackSpellsMissingBytes) {
  // Byte 0xBF has no token; its byte-level char is U+00BF (UTF-8 C2 BF).
  TinyModel m;
  m.vocab.erase(ByteChar(0xBF));
  const int f_c2 = m.Add("<0xC2>");
  const int f_bf = m.Add("<0xBF>");
  Json j = TokenizerJson(m);
  auto no_fallback = MakeHfTokenizer(Files(j));
  ASSERT_TRUE(no_fallback.ok()) << no_fallback.status();
  // '¿' (C2 BF): without byte fallback or unk the byte is an error, not a drop.
  auto err = (*no_fallback)->Encode("\xC2\xBF");
  ASSERT_FALSE(err.ok());
  EXPECT_NE(err.status().message().find("0xbf"), absl::string_view::npos) << err.status();
  j["model"]["byte_fallback"] = true;
  auto fallback = MakeHfTokenizer(Files(j));
  ASSERT_TRUE(fallback.ok()) << fallback.status();
  // As Hugging Face: the unknown char's own UTF-8 bytes become <0xNN> tokens.
  EXPECT_EQ(MustEncode(**fallback, "\xC2\xBF"), (std::vector<int>{0xC2, f_c2, f_bf}));
}

TEST(HfTokenizerTest, SpecialIdsFromConfigFiles) {
  TinyModel m;
  Json j = TokenizerJson(m);
  // Qwen-like: no BOS, pad given as an object, stop ids from generation_config.
  auto t = MustMake(Files(j, {{"eos_token", "<|eos|>"}, {"pad_token", {{"content", "<think>"}}}},
                          R"({"eos_token_id": [1002, 1000], "bos_token_id": null})"));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->bos_id(), -1);
  EXPECT_FALSE(t->adds_bos());
  EXPECT_EQ(t->eos_id(), 1000);
  EXPECT_EQ(t->pad_id(), 1002);
  EXPECT_EQ(t->stop_ids(), (std::vector<int>{1000, 1002}));
  // Pad falls back to EOS; BOS from a TemplateProcessing post-processor.
  j["post_processor"] = {
      {"type", "Sequence"},
      {"processors",
       Json::array(
           {{{"type", "ByteLevel"}},
            {{"type", "TemplateProcessing"},
             {"single", Json::array({{{"SpecialToken", {{"id", "<|bos|>"}, {"type_id", 0}}}},
                                     {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
             {"special_tokens",
              {{"<|bos|>", {{"id", "<|bos|>"}, {"ids", {1001}}, {"tokens", {"<|bos|>"}}}}}}}})}};
  auto l = MustMake(Files(j, {{"bos_token", "<|bos|>"}, {"eos_token", "<|eos|>"}}));
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->bos_id(), 1001);
  EXPECT_TRUE(l->adds_bos());
  EXPECT_EQ(l->pad_id(), 1000);
  EXPECT_EQ(l->stop_ids(), std::vector<int>{1000});
  EXPECT_EQ(l->Decode({1001, 'x', 1000}), "x");
}

TEST(HfTokenizerTest, ErrorsNameTheFileAndKey) {
  TinyModel m;
  Json j = TokenizerJson(m);
  auto expect_error = [](const HfTokenizerFiles& f, const std::string& needle) {
    auto t = MakeHfTokenizer(f);
    ASSERT_FALSE(t.ok()) << needle;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(needle), absl::string_view::npos) << t.status();
  };
  Json bad = j;
  bad["model"]["type"] = "WordPiece";
  expect_error(Files(bad), "tiny/tokenizer.json: model.type");
  bad = j;
  bad["model"]["merges"] = Json::array({"x zz"});
  expect_error(Files(bad), "model.merges[0]");
  bad = j;
  bad["normalizer"] = {{"type", "NFKC"}};
  expect_error(Files(bad), "normalizer.type");
  bad = j;
  bad["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "^a";
  expect_error(Files(bad), "pre_tokenizer.pretokenizers[0].pattern.Regex");
  expect_error(Files(j, {{"eos_token", "<|nope|>"}}), "tiny/tokenizer_config.json: eos_token");
  expect_error(Files(j, Json::object()), "eos_token");
  expect_error(Files(j, {{"eos_token", "<|eos|>"}}, R"({"eos_token_id": 99999})"),
               "tiny/generation_config.json: eos_token_id");
  HfTokenizerFiles broken = Files(j);
  broken.tokenizer_json = "{not json";
  expect_error(broken, "tiny/tokenizer.json: not valid JSON");
}

TEST(HfTokenizerTest, LoadTokenizerReadsADirectoryOrAFile) {
  TinyModel m;
  const std::filesystem::path dir =
      std::filesystem::path(testing::TempDir()) / "hf_tokenizer_load_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << TokenizerJson(m).dump();
  std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": "<|eos|>"})";
  std::ofstream(dir / "generation_config.json") << R"({"eos_token_id": [1000, 1002]})";
  for (const std::string& path : {dir.string(), (dir / "tokenizer.json").string()}) {
    auto t = LoadTokenizer(path);
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ((*t)->stop_ids(), (std::vector<int>{1000, 1002}));
  }
  auto missing = LoadTokenizer((dir / "nope").string());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

TEST(HfTokenizerTest, VeryLongRunsEncode) {
  // Long whitespace runs backtrack in \s+(?!\S) and \s*[\r\n]+; a long word
  // is one pre-token for the merge loop (beyond the cache's length bound).
  TinyModel m;
  m.Merge("a", "a");
  auto t = MustMake(Files(TokenizerJson(m)));
  ASSERT_NE(t, nullptr);
  for (const std::string& text :
       {std::string(200000, ' ') + "x", std::string(100000, '\n') + std::string(100000, ' '),
        std::string(200001, 'a'), std::string(50000, '7')}) {
    const std::vector<int> ids = MustEncode(*t, text);
    EXPECT_EQ(t->Decode(ids), text);
    if (text[0] == 'a') {
      EXPECT_EQ(ids.size(), 100001u);
    }
  }
}

TEST(HfTokenizerTest, ConcurrentEncodesAgreeWithTheCache) {
  TinyModel m;
  m.Merge("t", "h");
  m.Merge("th", "e");
  m.Merge(ByteChar(' '), "the");
  for (int cache : {0, 64}) {
    HfTokenizerOptions o;
    o.cache_entries = cache;  // 64 entries over 32 shards: shards fill and clear.
    auto t = MustMake(Files(TokenizerJson(m)), o);
    ASSERT_NE(t, nullptr);
    std::string text;
    for (int i = 0; i < 200; ++i) text += "the word" + std::to_string(i % 37) + " then\n";
    const std::vector<int> want = MustEncode(*t, text);
    std::vector<std::thread> threads;
    std::vector<int> ok(8, 0);
    for (int k = 0; k < 8; ++k) {
      threads.emplace_back([&, k] {
        for (int r = 0; r < 20; ++r) {
          auto ids = t->Encode(text);
          if (!ids.ok() || *ids != want) return;
        }
        ok[k] = 1;
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(ok, std::vector<int>(8, 1));
    EXPECT_EQ(t->Decode(want), text);
  }
}

}  // namespace
}  // namespace rlvr
