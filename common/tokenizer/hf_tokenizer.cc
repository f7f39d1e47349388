#include "common/tokenizer/hf_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>
#include <unicode/uchar.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <queue>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "common/base/status_macros.h"
#include "common/base/utf8.h"
#include "common/tokenizer/onig_regex.h"
#include "nlohmann/json.hpp"

namespace rlvr {
namespace {

using Json = nlohmann::json;

// ---------------------------------------------------------------------------
// The GPT-2 byte <-> unicode mapping of the ByteLevel pre-tokenizer: printable
// Latin-1 bytes map to themselves, the other 68 bytes to U+0100.. in order.
struct ByteLevelTable {
  std::array<char32_t, 256> byte_to_cp;
  std::array<std::string, 256> byte_to_utf8;
  absl::flat_hash_map<char32_t, uint8_t> cp_to_byte;

  ByteLevelTable() {
    int next = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      byte_to_cp[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + next++);
      utf8::Append(byte_to_cp[b], &byte_to_utf8[b]);
      cp_to_byte[byte_to_cp[b]] = static_cast<uint8_t>(b);
    }
  }
};

const ByteLevelTable& ByteLevel() {
  static const ByteLevelTable* table = new ByteLevelTable();
  return *table;
}

// The bytes a token's text decodes to under the ByteLevel decoder: each char
// mapped back to its byte; a token with a char outside the table (an added
// token such as "<|im_end|>" written with plain characters beyond Latin-1)
// decodes to its own UTF-8 bytes, as Hugging Face's decoder does.
std::string ByteLevelDecodeToken(absl::string_view token) {
  const ByteLevelTable& t = ByteLevel();
  std::string out;
  size_t i = 0;
  while (i < token.size()) {
    char32_t cp;
    const int n = utf8::DecodeOne(token, i, &cp);
    if (n == 0) return std::string(token);
    auto it = t.cp_to_byte.find(cp);
    if (it == t.cp_to_byte.end()) return std::string(token);
    out.push_back(static_cast<char>(it->second));
    i += n;
  }
  return out;
}

std::string ByteLevelEncode(absl::string_view bytes) {
  const ByteLevelTable& t = ByteLevel();
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) out += t.byte_to_utf8[b];
  return out;
}

// ---------------------------------------------------------------------------
// A compiled PCRE2 pattern (JIT when available). Matching is thread-safe: the
// match data is per call.
class Pcre2Regex {
 public:
  static absl::StatusOr<std::unique_ptr<Pcre2Regex>> Compile(const std::string& pcre_pattern) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_compile_context* ctx = pcre2_compile_context_create(nullptr);
    pcre2_set_newline(ctx, PCRE2_NEWLINE_LF);
    pcre2_code* code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pcre_pattern.data()), pcre_pattern.size(),
                      PCRE2_UTF | PCRE2_UCP, &error, &offset, ctx);
    pcre2_compile_context_free(ctx);
    if (code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(error, msg, sizeof(msg));
      return absl::InvalidArgumentError(absl::StrFormat("PCRE2 rejects '%s' at offset %d: %s",
                                                        pcre_pattern, offset,
                                                        reinterpret_cast<char*>(msg)));
    }
    const bool jit = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
    return std::unique_ptr<Pcre2Regex>(new Pcre2Regex(code, jit));
  }

  ~Pcre2Regex() { pcre2_code_free(code_); }

  // Appends to `out` the pieces of `text` (valid UTF-8) that Hugging Face's
  // Split(behavior = Isolated) makes: every non-empty match, and every
  // non-empty stretch between matches.
  absl::Status SplitIsolated(absl::string_view text, std::vector<absl::string_view>* out) const {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(code_, nullptr);
    pcre2_match_context* mctx = nullptr;
    pcre2_jit_stack* stack = nullptr;
    absl::Status status;
    size_t start = 0, prev = 0;
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    while (start <= text.size()) {
      int rc = pcre2_match(code_, subject, text.size(), start, PCRE2_NO_UTF_CHECK, md, mctx);
      if (rc == PCRE2_ERROR_JIT_STACKLIMIT && stack == nullptr) {
        // Deep backtracking (very long runs): retry with a large JIT stack.
        mctx = pcre2_match_context_create(nullptr);
        stack = pcre2_jit_stack_create(1 << 16, 256 << 20, nullptr);
        pcre2_jit_stack_assign(mctx, nullptr, stack);
        continue;
      }
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(rc, msg, sizeof(msg));
        status =
            absl::InternalError(absl::StrCat("PCRE2 match failed: ", reinterpret_cast<char*>(msg)));
        break;
      }
      const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
      const size_t ms = ov[0], me = ov[1];
      if (me == ms) {
        // An empty match produces no piece; step over one character, as
        // Oniguruma's find_iter does.
        if (ms >= text.size()) break;
        char32_t cp;
        const int n = utf8::DecodeOne(text, ms, &cp);
        start = ms + (n > 0 ? n : 1);
        continue;
      }
      if (ms > prev) out->push_back(text.substr(prev, ms - prev));
      out->push_back(text.substr(ms, me - ms));
      prev = start = me;
    }
    if (status.ok() && prev < text.size()) out->push_back(text.substr(prev));
    if (stack != nullptr) pcre2_jit_stack_free(stack);
    if (mctx != nullptr) pcre2_match_context_free(mctx);
    pcre2_match_data_free(md);
    return status;
  }

 private:
  Pcre2Regex(pcre2_code* code, bool jit) : code_(code), jit_(jit) {}
  pcre2_code* code_;
  [[maybe_unused]] bool jit_;
};

// ---------------------------------------------------------------------------
struct AddedToken {
  int id = -1;
  std::string content;
  // The text matched in the input: `content`, NFC-normalized when the token is
  // `normalized` and the tokenizer has an NFC normalizer (HF builds its
  // normalized trie from the normalized contents).
  std::string match_content;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

// Leftmost-longest, non-overlapping matching of a set of added tokens, as
// Hugging Face's AddedVocabulary does (aho-corasick, LeftmostLongest), with
// its single_word / lstrip / rstrip rules.
class AddedTokenMatcher {
 public:
  void Add(const AddedToken* t) {
    if (t->match_content.empty()) return;
    const unsigned char first = static_cast<unsigned char>(t->match_content[0]);
    by_first_[first].push_back(t);
    first_set_[first] = true;
  }
  void Finish() {
    for (auto& v : by_first_) {
      std::stable_sort(v.begin(), v.end(), [](const AddedToken* a, const AddedToken* b) {
        return a->match_content.size() > b->match_content.size();
      });
    }
  }
  bool empty() const {
    for (const auto& v : by_first_) {
      if (!v.empty()) return false;
    }
    return true;
  }

  // A piece of the input: text to tokenize further (token == nullptr) or one
  // added token.
  struct Piece {
    absl::string_view text;
    const AddedToken* token = nullptr;
  };

  void Split(absl::string_view s, std::vector<Piece>* out) const {
    size_t prev = 0;  // End of the last emitted piece.
    size_t i = 0;
    while (i < s.size()) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      if (!first_set_[c]) {
        ++i;
        continue;
      }
      const AddedToken* hit = nullptr;
      for (const AddedToken* t : by_first_[c]) {
        if (s.substr(i, t->match_content.size()) == t->match_content) {
          hit = t;
          break;
        }
      }
      if (hit == nullptr) {
        ++i;
        continue;
      }
      size_t start = i, stop = i + hit->match_content.size();
      i = stop;  // The match is consumed even when single_word rejects it.
      if (hit->single_word) {
        const bool left_ok = start == 0 || !EndsWithWordChar(s.substr(0, start));
        const bool right_ok = stop == s.size() || !StartsWithWordChar(s.substr(stop));
        if (!left_ok || !right_ok) continue;
      }
      if (hit->lstrip) {
        while (start > prev) {
          const size_t back = PrevCharStart(s, start);
          if (!IsWhitespace(s, back)) break;
          start = back;
        }
      }
      if (hit->rstrip) {
        while (stop < s.size() && IsWhitespace(s, stop)) stop += CharLen(s, stop);
        i = stop;
      }
      if (start > prev) out->push_back({s.substr(prev, start - prev), nullptr});
      out->push_back({s.substr(start, stop - start), hit});
      prev = stop;
    }
    if (prev < s.size()) out->push_back({s.substr(prev), nullptr});
  }

 private:
  static int CharLen(absl::string_view s, size_t i) {
    char32_t cp;
    const int n = utf8::DecodeOne(s, i, &cp);
    return n > 0 ? n : 1;
  }
  static size_t PrevCharStart(absl::string_view s, size_t i) {
    do {
      --i;
    } while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80);
    return i;
  }
  // Rust's char::is_whitespace: the White_Space property.
  static bool IsWhitespace(absl::string_view s, size_t i) {
    char32_t cp;
    if (utf8::DecodeOne(s, i, &cp) == 0) return false;
    return (cp >= 0x9 && cp <= 0xD) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
           cp == 0x205F || cp == 0x3000;
  }
  // Hugging Face's single_word boundary: the `regex` crate's Unicode \w
  // (Alphabetic, marks, decimal numbers, connector punctuation, join
  // controls) next to the match makes it part of a word.
  static bool IsWordChar(UChar32 c) {
    if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || u_hasBinaryProperty(c, UCHAR_JOIN_CONTROL)) {
      return true;
    }
    const int8_t t = u_charType(c);
    return t == U_NON_SPACING_MARK || t == U_ENCLOSING_MARK || t == U_COMBINING_SPACING_MARK ||
           t == U_DECIMAL_DIGIT_NUMBER || t == U_CONNECTOR_PUNCTUATION;
  }
  static bool EndsWithWordChar(absl::string_view s) {
    if (s.empty()) return false;
    char32_t cp;
    const size_t i = PrevCharStart(s, s.size());
    return utf8::DecodeOne(s, i, &cp) > 0 && IsWordChar(static_cast<UChar32>(cp));
  }
  static bool StartsWithWordChar(absl::string_view s) {
    char32_t cp;
    return utf8::DecodeOne(s, 0, &cp) > 0 && IsWordChar(static_cast<UChar32>(cp));
  }

  std::array<std::vector<const AddedToken*>, 256> by_first_;
  std::array<bool, 256> first_set_{};
};

// ---------------------------------------------------------------------------
// The per-pre-token merge cache: sharded maps, each under its own mutex. A
// full shard is cleared (the bound), so memory stays within
// cache_entries * (key + ids).
class MergeCache {
 public:
  explicit MergeCache(int entries) : per_shard_(entries / kShards) {}

  bool enabled() const { return per_shard_ > 0; }

  bool Lookup(absl::string_view key, std::vector<int>* out) const {
    Shard& s = shards_[ShardOf(key)];
    absl::MutexLock lock(&s.mu);
    auto it = s.map.find(key);
    if (it == s.map.end()) return false;
    out->insert(out->end(), it->second.begin(), it->second.end());
    return true;
  }

  void Insert(absl::string_view key, const int* ids, size_t n) const {
    Shard& s = shards_[ShardOf(key)];
    absl::MutexLock lock(&s.mu);
    if (static_cast<int>(s.map.size()) >= per_shard_) s.map.clear();
    s.map.try_emplace(std::string(key), ids, ids + n);
  }

 private:
  static constexpr int kShards = 32;
  struct Shard {
    absl::Mutex mu;
    absl::flat_hash_map<std::string, std::vector<int>> map;
  };
  static size_t ShardOf(absl::string_view key) {
    return absl::Hash<absl::string_view>()(key) % kShards;
  }
  const int per_shard_;
  mutable std::array<Shard, kShards> shards_;
};

// ---------------------------------------------------------------------------
// JSON helpers whose errors name the file and the key.
class JsonFile {
 public:
  JsonFile(std::string name) : name_(std::move(name)) {}

  absl::StatusOr<Json> Parse(const std::string& text) const {
    Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded())
      return absl::InvalidArgumentError(absl::StrCat(name_, ": not valid JSON"));
    return j;
  }
  absl::Status Error(absl::string_view key, absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": ", key, ": ", what));
  }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// A token name from tokenizer_config.json: a string, {"content": "..."}, or
// null/absent (nullopt).
absl::StatusOr<std::optional<std::string>> TokenName(const JsonFile& f, const Json& cfg,
                                                     const char* key) {
  if (!cfg.contains(key) || cfg[key].is_null()) return std::optional<std::string>();
  const Json& v = cfg[key];
  if (v.is_string()) return std::optional<std::string>(v.get<std::string>());
  if (v.is_object() && v.contains("content") && v["content"].is_string()) {
    return std::optional<std::string>(v["content"].get<std::string>());
  }
  return f.Error(key, "expected a string, {\"content\": ...} or null");
}

// generation_config.json ids: a number or a list of numbers.
absl::StatusOr<std::vector<int>> IdList(const JsonFile& f, const Json& cfg, const char* key) {
  std::vector<int> ids;
  if (!cfg.contains(key) || cfg[key].is_null()) return ids;
  const Json& v = cfg[key];
  if (v.is_number_integer()) {
    ids.push_back(v.get<int>());
  } else if (v.is_array()) {
    for (const Json& e : v) {
      if (!e.is_number_integer()) return f.Error(key, "expected a list of integers");
      ids.push_back(e.get<int>());
    }
  } else {
    return f.Error(key, "expected an integer or a list of integers");
  }
  return ids;
}

// ---------------------------------------------------------------------------
class HfTokenizer final : public Tokenizer {
 public:
  static absl::StatusOr<std::unique_ptr<Tokenizer>> Make(const HfTokenizerFiles& files,
                                                         const HfTokenizerOptions& options);

  int vocab_size() const override { return vocab_size_; }
  int bos_id() const override { return bos_id_; }
  int eos_id() const override { return eos_id_; }
  int pad_id() const override { return pad_id_; }
  bool adds_bos() const override { return adds_bos_; }
  std::vector<int> stop_ids() const override { return stop_ids_; }

  std::optional<int> TokenId(absl::string_view text) const override {
    if (auto it = added_by_content_.find(text); it != added_by_content_.end()) return it->second;
    if (auto it = vocab_.find(text); it != vocab_.end()) return it->second;
    return std::nullopt;
  }

  absl::StatusOr<std::vector<int>> Encode(absl::string_view text) const override;

  std::string Decode(const std::vector<int>& ids) const override { return DecodeImpl(ids, false); }
  std::string DecodeWithSpecial(const std::vector<int>& ids) const override {
    return DecodeImpl(ids, true);
  }

 private:
  explicit HfTokenizer(const HfTokenizerOptions& options) : cache_(options.cache_entries) {
    max_cached_bytes_ = options.max_cached_bytes;
  }

  absl::Status LoadModel(const JsonFile& f, const Json& model);
  absl::Status LoadAddedTokens(const JsonFile& f, const Json& root);
  absl::Status LoadNormalizer(const JsonFile& f, const Json& root);
  absl::Status BuildAddedTokenMatchers();
  absl::Status LoadPreTokenizer(const JsonFile& f, const Json& pre, const std::string& key);
  absl::Status LoadDecoder(const JsonFile& f, const Json& dec, const std::string& key);
  absl::Status LoadPostProcessor(const JsonFile& f, const Json& post, const std::string& key,
                                 std::optional<int>* template_bos);
  absl::Status LoadSpecialIds(const HfTokenizerFiles& files, std::optional<int> template_bos);
  void BuildDecodeTable();

  // Ids of one piece of text without added tokens (already normalized).
  absl::Status EncodePlain(absl::string_view text, std::vector<int>* ids) const;
  // Ids of one pre-token.
  absl::Status EncodeWord(absl::string_view word, std::vector<int>* ids) const;
  std::string DecodeImpl(const std::vector<int>& ids, bool with_special) const;

  int vocab_size_ = 0;
  absl::flat_hash_map<std::string, int> vocab_;  // Byte-level spelling -> id.
  // (left id, right id) -> (rank, merged id).
  absl::flat_hash_map<uint64_t, std::pair<int, int>> merges_;
  // Initial symbols of each byte: its single-char token, or the byte-fallback
  // / unk ids when the vocabulary lacks it (empty: the byte is unencodable).
  std::array<std::vector<int>, 256> byte_ids_;
  bool ignore_merges_ = false;

  std::vector<AddedToken> added_;
  absl::flat_hash_map<std::string, int> added_by_content_;
  AddedTokenMatcher raw_matcher_;         // Tokens with normalized == false.
  AddedTokenMatcher normalized_matcher_;  // Tokens with normalized == true.

  const icu::Normalizer2* nfc_ = nullptr;
  std::vector<std::unique_ptr<Pcre2Regex>> splits_;

  std::vector<std::string> id_bytes_;  // Decoded bytes of each id.
  std::vector<bool> id_known_;         // Whether an id names a token.
  std::vector<bool> id_special_;       // Skipped by Decode.

  int bos_id_ = -1, eos_id_ = -1, pad_id_ = -1;
  bool adds_bos_ = false;
  std::vector<int> stop_ids_;

  MergeCache cache_;
  int max_cached_bytes_ = 64;
};

absl::Status HfTokenizer::LoadModel(const JsonFile& f, const Json& model) {
  if (!model.is_object()) return f.Error("model", "missing or not an object");
  const std::string type = model.value("type", "");
  if (type != "BPE")
    return f.Error("model.type", absl::StrCat("unsupported '", type, "' (only BPE)"));
  if (model.contains("dropout") && !model["dropout"].is_null() &&
      model["dropout"].get<double>() != 0.0) {
    return f.Error("model.dropout", "BPE dropout is not supported");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && model[key].is_string() && !model[key].get<std::string>().empty()) {
      return f.Error(absl::StrCat("model.", key), "not supported (must be empty or null)");
    }
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) {
    return f.Error("model.vocab", "missing or not an object");
  }
  const Json& vocab = model["vocab"];
  vocab_.reserve(vocab.size());
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int>() < 0) {
      return f.Error("model.vocab",
                     absl::StrCat("id of '", it.key(), "' is not a non-negative integer"));
    }
    const int id = it.value().get<int>();
    vocab_[it.key()] = id;
    vocab_size_ = std::max(vocab_size_, id + 1);
  }
  if (!model.contains("merges") || !model["merges"].is_array()) {
    return f.Error("model.merges", "missing or not a list");
  }
  const Json& merges = model["merges"];
  merges_.reserve(merges.size());
  for (size_t r = 0; r < merges.size(); ++r) {
    const Json& m = merges[r];
    std::string a, b;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos) {
        return f.Error(absl::StrCat("model.merges[", r, "]"), "expected \"left right\"");
      }
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else {
      return f.Error(absl::StrCat("model.merges[", r, "]"), "expected \"a b\" or [a, b]");
    }
    auto ia = vocab_.find(a), ib = vocab_.find(b), ic = vocab_.find(a + b);
    for (const auto& [it, name] : {std::pair{ia, a}, std::pair{ib, b}, std::pair{ic, a + b}}) {
      if (it == vocab_.end()) {
        return f.Error(absl::StrCat("model.merges[", r, "]"),
                       absl::StrCat("token '", name, "' is not in model.vocab"));
      }
    }
    const uint64_t key =
        (static_cast<uint64_t>(ia->second) << 32) | static_cast<uint32_t>(ib->second);
    merges_.insert_or_assign(key, std::pair<int, int>(static_cast<int>(r), ic->second));
  }
  ignore_merges_ = model.value("ignore_merges", false);
  const bool byte_fallback = model.value("byte_fallback", false);
  std::optional<int> unk;
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    auto it = vocab_.find(model["unk_token"].get<std::string>());
    if (it == vocab_.end()) return f.Error("model.unk_token", "not in model.vocab");
    unk = it->second;
  }
  const ByteLevelTable& t = ByteLevel();
  for (int b = 0; b < 256; ++b) {
    if (auto it = vocab_.find(t.byte_to_utf8[b]); it != vocab_.end()) {
      byte_ids_[b] = {it->second};
      continue;
    }
    // Hugging Face's byte fallback spells the unknown char's UTF-8 bytes (the
    // char here is the byte-level char) as <0xNN> tokens.
    std::vector<int> fallback;
    if (byte_fallback) {
      for (unsigned char u : t.byte_to_utf8[b]) {
        auto it = vocab_.find(absl::StrFormat("<0x%02X>", u));
        if (it == vocab_.end()) {
          fallback.clear();
          break;
        }
        fallback.push_back(it->second);
      }
    }
    if (fallback.empty() && unk.has_value()) fallback = {*unk};
    byte_ids_[b] = fallback;
  }
  return absl::OkStatus();
}

absl::Status HfTokenizer::LoadAddedTokens(const JsonFile& f, const Json& root) {
  if (!root.contains("added_tokens") || root["added_tokens"].is_null()) return absl::OkStatus();
  const Json& list = root["added_tokens"];
  if (!list.is_array()) return f.Error("added_tokens", "not a list");
  added_.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& a = list[i];
    const std::string key = absl::StrCat("added_tokens[", i, "]");
    if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() ||
        !a.contains("content") || !a["content"].is_string()) {
      return f.Error(key, "expected an object with integer 'id' and string 'content'");
    }
    AddedToken t;
    t.id = a["id"].get<int>();
    t.content = a["content"].get<std::string>();
    t.special = a.value("special", false);
    t.single_word = a.value("single_word", false);
    t.lstrip = a.value("lstrip", false);
    t.rstrip = a.value("rstrip", false);
    // Hugging Face's default: normalized = !special.
    t.normalized = a.value("normalized", !t.special);
    if (t.id < 0) return f.Error(key, "negative id");
    if (t.content.empty()) return f.Error(key, "empty content");
    vocab_size_ = std::max(vocab_size_, t.id + 1);
    added_.push_back(std::move(t));
  }
  for (const AddedToken& t : added_) added_by_content_[t.content] = t.id;
  return absl::OkStatus();
}

absl::Status HfTokenizer::BuildAddedTokenMatchers() {
  for (AddedToken& t : added_) {
    t.match_content = t.content;
    if (t.normalized && nfc_ != nullptr) {
      UErrorCode status = U_ZERO_ERROR;
      t.match_content.clear();
      icu::StringByteSink<std::string> sink(&t.match_content);
      nfc_->normalizeUTF8(
          0, icu::StringPiece(t.content.data(), static_cast<int32_t>(t.content.size())), sink,
          nullptr, status);
      if (U_FAILURE(status))
        return absl::InternalError(absl::StrCat("ICU NFC: ", u_errorName(status)));
    }
    (t.normalized ? normalized_matcher_ : raw_matcher_).Add(&t);
  }
  raw_matcher_.Finish();
  normalized_matcher_.Finish();
  return absl::OkStatus();
}

absl::Status HfTokenizer::LoadNormalizer(const JsonFile& f, const Json& root) {
  if (!root.contains("normalizer") || root["normalizer"].is_null()) return absl::OkStatus();
  const Json& n = root["normalizer"];
  std::string type = n.value("type", "");
  if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
    // A Sequence of NFCs is NFC; anything else in it is unsupported.
    for (const Json& e : n["normalizers"]) {
      if (e.value("type", "") != "NFC") {
        return f.Error("normalizer.normalizers",
                       absl::StrCat("unsupported '", e.value("type", ""), "' (only NFC)"));
      }
    }
    if (n["normalizers"].empty()) return absl::OkStatus();
    type = "NFC";
  }
  if (type != "NFC")
    return f.Error("normalizer.type", absl::StrCat("unsupported '", type, "' (null or NFC)"));
  UErrorCode status = U_ZERO_ERROR;
  nfc_ = icu::Normalizer2::getNFCInstance(status);
  if (U_FAILURE(status)) return absl::InternalError(absl::StrCat("ICU NFC: ", u_errorName(status)));
  return absl::OkStatus();
}

absl::Status HfTokenizer::LoadPreTokenizer(const JsonFile& f, const Json& pre,
                                           const std::string& key) {
  const std::string type = pre.value("type", "");
  auto byte_level = [&](const Json& p, const std::string& k) -> absl::Status {
    if (p.value("add_prefix_space", false)) {
      return f.Error(absl::StrCat(k, ".add_prefix_space"), "true is not supported");
    }
    if (p.value("use_regex", true)) {
      // GPT-2's pattern, which the ByteLevel pre-tokenizer applies itself.
      ASSIGN_OR_RETURN(
          std::string pattern,
          OnigToPcre2("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|"
                      "\\s+(?!\\S)|\\s+"));
      ASSIGN_OR_RETURN(auto re, Pcre2Regex::Compile(pattern));
      splits_.push_back(std::move(re));
    }
    return absl::OkStatus();
  };
  if (type == "ByteLevel") return byte_level(pre, key);
  if (type != "Sequence" || !pre.contains("pretokenizers") || !pre["pretokenizers"].is_array()) {
    return f.Error(
        absl::StrCat(key, ".type"),
        absl::StrCat("unsupported '", type, "' (ByteLevel, or a Sequence of Split and ByteLevel)"));
  }
  const Json& list = pre["pretokenizers"];
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& p = list[i];
    const std::string k = absl::StrCat(key, ".pretokenizers[", i, "]");
    const std::string t = p.value("type", "");
    if (t == "ByteLevel") {
      if (i + 1 != list.size()) return f.Error(k, "ByteLevel must be the last pre-tokenizer");
      return byte_level(p, k);
    }
    if (t != "Split")
      return f.Error(absl::StrCat(k, ".type"), absl::StrCat("unsupported '", t, "'"));
    if (p.value("behavior", "") != "Isolated") {
      return f.Error(absl::StrCat(k, ".behavior"), "only Isolated is supported");
    }
    if (p.value("invert", false))
      return f.Error(absl::StrCat(k, ".invert"), "true is not supported");
    if (!p.contains("pattern") || !p["pattern"].is_object())
      return f.Error(absl::StrCat(k, ".pattern"), "missing");
    std::string pattern;
    if (p["pattern"].contains("Regex") && p["pattern"]["Regex"].is_string()) {
      auto translated = OnigToPcre2(p["pattern"]["Regex"].get<std::string>());
      if (!translated.ok())
        return f.Error(absl::StrCat(k, ".pattern.Regex"), translated.status().message());
      pattern = *translated;
    } else if (p["pattern"].contains("String") && p["pattern"]["String"].is_string()) {
      pattern = absl::StrCat("\\Q", p["pattern"]["String"].get<std::string>(), "\\E");
    } else {
      return f.Error(absl::StrCat(k, ".pattern"), "expected {\"Regex\": ...} or {\"String\": ...}");
    }
    auto re = Pcre2Regex::Compile(pattern);
    if (!re.ok()) return f.Error(absl::StrCat(k, ".pattern"), re.status().message());
    splits_.push_back(*std::move(re));
  }
  return f.Error(key, "a Sequence must end with a ByteLevel pre-tokenizer");
}

absl::Status HfTokenizer::LoadDecoder(const JsonFile& f, const Json& dec, const std::string& key) {
  const std::string type = dec.value("type", "");
  if (type == "ByteLevel") return absl::OkStatus();
  if (type == "Sequence" && dec.contains("decoders") && dec["decoders"].is_array() &&
      dec["decoders"].size() == 1) {
    return LoadDecoder(f, dec["decoders"][0], absl::StrCat(key, ".decoders[0]"));
  }
  return f.Error(absl::StrCat(key, ".type"),
                 absl::StrCat("unsupported '", type, "' (only ByteLevel)"));
}

absl::Status HfTokenizer::LoadPostProcessor(const JsonFile& f, const Json& post,
                                            const std::string& key,
                                            std::optional<int>* template_bos) {
  if (post.is_null()) return absl::OkStatus();
  const std::string type = post.value("type", "");
  if (type == "ByteLevel") return absl::OkStatus();  // Offsets only.
  if (type == "Sequence" && post.contains("processors") && post["processors"].is_array()) {
    for (size_t i = 0; i < post["processors"].size(); ++i) {
      RETURN_IF_ERROR(LoadPostProcessor(f, post["processors"][i],
                                        absl::StrCat(key, ".processors[", i, "]"), template_bos));
    }
    return absl::OkStatus();
  }
  if (type != "TemplateProcessing") {
    return f.Error(
        absl::StrCat(key, ".type"),
        absl::StrCat("unsupported '", type, "' (ByteLevel, TemplateProcessing, Sequence)"));
  }
  if (!post.contains("single") || !post["single"].is_array()) {
    return f.Error(absl::StrCat(key, ".single"), "missing or not a list");
  }
  const Json& single = post["single"];
  for (size_t i = 0; i < single.size(); ++i) {
    if (!single[i].contains("SpecialToken")) continue;
    const std::string name = single[i]["SpecialToken"].value("id", "");
    const std::string k = absl::StrCat(key, ".single[", i, "]");
    if (i != 0) {
      return f.Error(k, "a special token after the text is not supported (only a leading BOS)");
    }
    const Json* st = nullptr;
    if (post.contains("special_tokens") && post["special_tokens"].contains(name)) {
      st = &post["special_tokens"][name];
    }
    if (st == nullptr || !st->contains("ids") || !(*st)["ids"].is_array() ||
        (*st)["ids"].size() != 1 || !(*st)["ids"][0].is_number_integer()) {
      return f.Error(absl::StrCat(key, ".special_tokens"),
                     absl::StrCat("no single id for '", name, "'"));
    }
    *template_bos = (*st)["ids"][0].get<int>();
  }
  return absl::OkStatus();
}

absl::Status HfTokenizer::LoadSpecialIds(const HfTokenizerFiles& files,
                                         std::optional<int> template_bos) {
  const JsonFile tc(absl::StrCat(files.source, "/tokenizer_config.json"));
  const JsonFile gc(absl::StrCat(files.source, "/generation_config.json"));
  Json cfg = Json::object(), gen = Json::object();
  if (!files.tokenizer_config_json.empty()) {
    ASSIGN_OR_RETURN(cfg, tc.Parse(files.tokenizer_config_json));
    if (!cfg.is_object()) return tc.Error("(root)", "not an object");
  }
  if (!files.generation_config_json.empty()) {
    ASSIGN_OR_RETURN(gen, gc.Parse(files.generation_config_json));
    if (!gen.is_object()) return gc.Error("(root)", "not an object");
  }
  auto named = [&](const char* key) -> absl::StatusOr<std::optional<int>> {
    ASSIGN_OR_RETURN(std::optional<std::string> name, TokenName(tc, cfg, key));
    if (!name.has_value()) return std::optional<int>();
    std::optional<int> id = TokenId(*name);
    if (!id.has_value())
      return tc.Error(key, absl::StrCat("token '", *name, "' is not in the vocabulary"));
    return id;
  };
  auto check = [&](const JsonFile& f, const char* key, int id) -> absl::Status {
    if (id < 0 || id >= vocab_size_)
      return f.Error(key, absl::StrCat("id ", id, " is outside the vocabulary"));
    return absl::OkStatus();
  };
  ASSIGN_OR_RETURN(std::optional<int> bos, named("bos_token"));
  ASSIGN_OR_RETURN(std::optional<int> eos, named("eos_token"));
  ASSIGN_OR_RETURN(std::optional<int> pad, named("pad_token"));
  ASSIGN_OR_RETURN(std::vector<int> gen_eos, IdList(gc, gen, "eos_token_id"));
  ASSIGN_OR_RETURN(std::vector<int> gen_bos, IdList(gc, gen, "bos_token_id"));
  ASSIGN_OR_RETURN(std::vector<int> gen_pad, IdList(gc, gen, "pad_token_id"));
  for (int id : gen_eos) RETURN_IF_ERROR(check(gc, "eos_token_id", id));
  for (int id : gen_bos) RETURN_IF_ERROR(check(gc, "bos_token_id", id));
  for (int id : gen_pad) RETURN_IF_ERROR(check(gc, "pad_token_id", id));
  if (!eos.has_value() && !gen_eos.empty()) eos = gen_eos[0];
  if (!eos.has_value()) {
    return tc.Error(
        "eos_token",
        "missing (and generation_config.json has no eos_token_id): the tokenizer needs an EOS");
  }
  if (!bos.has_value() && !gen_bos.empty()) bos = gen_bos[0];
  if (template_bos.has_value()) {
    if (bos.has_value() && *bos != *template_bos) {
      return tc.Error("bos_token",
                      absl::StrCat("id ", *bos, " differs from the post_processor's leading token ",
                                   *template_bos));
    }
    bos = template_bos;
  }
  if (!pad.has_value() && !gen_pad.empty()) pad = gen_pad[0];
  bos_id_ = bos.value_or(-1);
  eos_id_ = *eos;
  pad_id_ = pad.value_or(eos_id_);
  adds_bos_ = template_bos.has_value();
  if (cfg.contains("add_bos_token") && cfg["add_bos_token"].is_boolean() &&
      cfg["add_bos_token"].get<bool>()) {
    if (bos_id_ < 0) return tc.Error("add_bos_token", "true but there is no bos_token");
    adds_bos_ = true;
  }
  stop_ids_ = {eos_id_};
  for (int id : gen_eos) {
    if (std::find(stop_ids_.begin(), stop_ids_.end(), id) == stop_ids_.end())
      stop_ids_.push_back(id);
  }
  return absl::OkStatus();
}

void HfTokenizer::BuildDecodeTable() {
  id_bytes_.assign(vocab_size_, "");
  id_known_.assign(vocab_size_, false);
  id_special_.assign(vocab_size_, false);
  for (const auto& [spelling, id] : vocab_) {
    id_bytes_[id] = ByteLevelDecodeToken(spelling);
    id_known_[id] = true;
  }
  for (const AddedToken& t : added_) {
    id_bytes_[t.id] = ByteLevelDecodeToken(t.content);
    id_known_[t.id] = true;
    if (t.special) id_special_[t.id] = true;
  }
  for (int id : {bos_id_, eos_id_, pad_id_}) {
    if (id >= 0) id_special_[id] = true;
  }
}

absl::StatusOr<std::unique_ptr<Tokenizer>> HfTokenizer::Make(const HfTokenizerFiles& files,
                                                             const HfTokenizerOptions& options) {
  const JsonFile f(absl::StrCat(files.source, "/tokenizer.json"));
  ASSIGN_OR_RETURN(Json root, f.Parse(files.tokenizer_json));
  if (!root.is_object()) return f.Error("(root)", "not an object");
  std::unique_ptr<HfTokenizer> t(new HfTokenizer(options));
  // Sections are passed by reference: a `cond ? root[k] : Json()` would copy
  // the whole vocabulary.
  static const Json* const kNull = new Json();
  RETURN_IF_ERROR(t->LoadModel(f, root.contains("model") ? root["model"] : *kNull));
  RETURN_IF_ERROR(t->LoadAddedTokens(f, root));
  RETURN_IF_ERROR(t->LoadNormalizer(f, root));
  RETURN_IF_ERROR(t->BuildAddedTokenMatchers());
  if (!root.contains("pre_tokenizer") || root["pre_tokenizer"].is_null()) {
    return f.Error("pre_tokenizer", "missing (a byte-level BPE needs ByteLevel)");
  }
  RETURN_IF_ERROR(t->LoadPreTokenizer(f, root["pre_tokenizer"], "pre_tokenizer"));
  if (!root.contains("decoder") || root["decoder"].is_null()) {
    return f.Error("decoder", "missing (a byte-level BPE needs ByteLevel)");
  }
  RETURN_IF_ERROR(t->LoadDecoder(f, root["decoder"], "decoder"));
  std::optional<int> template_bos;
  RETURN_IF_ERROR(
      t->LoadPostProcessor(f, root.contains("post_processor") ? root["post_processor"] : *kNull,
                           "post_processor", &template_bos));
  RETURN_IF_ERROR(t->LoadSpecialIds(files, template_bos));
  t->BuildDecodeTable();
  return std::unique_ptr<Tokenizer>(std::move(t));
}

// ---------------------------------------------------------------------------
absl::StatusOr<std::vector<int>> HfTokenizer::Encode(absl::string_view text) const {
  if (const size_t bad = utf8::FirstInvalid(text); bad != absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrFormat("tokenizer: input is not valid UTF-8 (byte 0x%02x at offset %d)",
                        static_cast<unsigned char>(text[bad]), bad));
  }
  std::vector<int> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<AddedTokenMatcher::Piece> pieces, sub;
  raw_matcher_.Split(text, &pieces);
  std::string normalized;
  for (const auto& piece : pieces) {
    if (piece.token != nullptr) {
      ids.push_back(piece.token->id);
      continue;
    }
    absl::string_view plain = piece.text;
    if (nfc_ != nullptr) {
      UErrorCode status = U_ZERO_ERROR;
      const icu::StringPiece sp(plain.data(), static_cast<int32_t>(plain.size()));
      if (!nfc_->isNormalizedUTF8(sp, status) || U_FAILURE(status)) {
        status = U_ZERO_ERROR;
        normalized.clear();
        icu::StringByteSink<std::string> sink(&normalized);
        nfc_->normalizeUTF8(0, sp, sink, nullptr, status);
        if (U_FAILURE(status)) {
          return absl::InternalError(
              absl::StrCat("tokenizer: ICU NFC failed: ", u_errorName(status)));
        }
        plain = normalized;
      }
    }
    if (normalized_matcher_.empty()) {
      RETURN_IF_ERROR(EncodePlain(plain, &ids));
      continue;
    }
    sub.clear();
    normalized_matcher_.Split(plain, &sub);
    for (const auto& s : sub) {
      if (s.token != nullptr) {
        ids.push_back(s.token->id);
      } else {
        RETURN_IF_ERROR(EncodePlain(s.text, &ids));
      }
    }
  }
  return ids;
}

absl::Status HfTokenizer::EncodePlain(absl::string_view text, std::vector<int>* ids) const {
  std::vector<absl::string_view> words = {text}, next;
  for (const auto& re : splits_) {
    next.clear();
    for (absl::string_view w : words) RETURN_IF_ERROR(re->SplitIsolated(w, &next));
    words.swap(next);
  }
  for (absl::string_view w : words) {
    if (!w.empty()) RETURN_IF_ERROR(EncodeWord(w, ids));
  }
  return absl::OkStatus();
}

absl::Status HfTokenizer::EncodeWord(absl::string_view word, std::vector<int>* ids) const {
  const bool cacheable = cache_.enabled() && static_cast<int>(word.size()) <= max_cached_bytes_;
  if (cacheable && cache_.Lookup(word, ids)) return absl::OkStatus();
  const size_t first = ids->size();
  if (word.size() == 1 && byte_ids_[static_cast<unsigned char>(word[0])].size() == 1) {
    ids->push_back(byte_ids_[static_cast<unsigned char>(word[0])][0]);
    return absl::OkStatus();
  }
  if (ignore_merges_) {
    if (auto it = vocab_.find(ByteLevelEncode(word)); it != vocab_.end()) {
      ids->push_back(it->second);
      if (cacheable) cache_.Insert(word, ids->data() + first, 1);
      return absl::OkStatus();
    }
  }
  // Symbols in a doubly linked list; merges applied lowest rank first, then
  // leftmost, as Hugging Face's BPE::merge_word does.
  struct Symbol {
    int id;
    int prev;
    int next;
  };
  std::vector<Symbol> syms;
  syms.reserve(word.size());
  for (size_t i = 0; i < word.size(); ++i) {
    const std::vector<int>& b = byte_ids_[static_cast<unsigned char>(word[i])];
    if (b.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "tokenizer: byte 0x%02x at offset %d has no token (no byte fallback, no unk)",
          static_cast<unsigned char>(word[i]), i));
    }
    for (int id : b) {
      const int n = static_cast<int>(syms.size());
      syms.push_back({id, n - 1, -1});
      if (n > 0) syms[n - 1].next = n;
    }
  }
  struct Merge {
    int rank;
    int pos;
    int new_id;
    bool operator>(const Merge& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Merge, std::vector<Merge>, std::greater<Merge>> queue;
  auto push = [&](int left) {
    const int right = syms[left].next;
    if (right < 0) return;
    const uint64_t key =
        (static_cast<uint64_t>(syms[left].id) << 32) | static_cast<uint32_t>(syms[right].id);
    auto it = merges_.find(key);
    if (it != merges_.end()) queue.push({it->second.first, left, it->second.second});
  };
  for (int i = 0; i + 1 < static_cast<int>(syms.size()); ++i) push(i);
  constexpr int kDead = -2;
  while (!queue.empty()) {
    const Merge m = queue.top();
    queue.pop();
    Symbol& left = syms[m.pos];
    if (left.id == kDead || left.next < 0) continue;
    Symbol& right = syms[left.next];
    const uint64_t key = (static_cast<uint64_t>(left.id) << 32) | static_cast<uint32_t>(right.id);
    auto it = merges_.find(key);
    if (it == merges_.end() || it->second.second != m.new_id || it->second.first != m.rank)
      continue;
    left.id = m.new_id;
    const int after = right.next;
    right.id = kDead;
    left.next = after;
    if (after >= 0) syms[after].prev = m.pos;
    if (left.prev >= 0) push(left.prev);
    push(m.pos);
  }
  for (int i = 0; i >= 0 && i < static_cast<int>(syms.size()); i = syms[i].next) {
    ids->push_back(syms[i].id);
  }
  if (cacheable) cache_.Insert(word, ids->data() + first, ids->size() - first);
  return absl::OkStatus();
}

std::string HfTokenizer::DecodeImpl(const std::vector<int>& ids, bool with_special) const {
  std::string bytes;
  for (int id : ids) {
    if (id < 0 || id >= vocab_size_ || !id_known_[id]) {
      bytes.push_back('?');
      continue;
    }
    if (id_special_[id] && !with_special) continue;
    bytes += id_bytes_[id];
  }
  return utf8::Lossy(bytes);
}

absl::StatusOr<std::string> ReadFile(const std::filesystem::path& p, bool required) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    if (!required) return std::string();
    return absl::NotFoundError(absl::StrCat("cannot read ", p.string()));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> MakeHfTokenizer(const HfTokenizerFiles& files,
                                                           const HfTokenizerOptions& options) {
  return HfTokenizer::Make(files, options);
}

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path,
                                                         const HfTokenizerOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = path, json = path;
  if (fs::is_directory(path, ec)) {
    json = dir / "tokenizer.json";
  } else {
    dir = fs::path(path).parent_path();
    if (dir.empty()) dir = ".";
  }
  HfTokenizerFiles files;
  files.source = dir.string();
  ASSIGN_OR_RETURN(files.tokenizer_json, ReadFile(json, /*required=*/true));
  ASSIGN_OR_RETURN(files.tokenizer_config_json, ReadFile(dir / "tokenizer_config.json", false));
  ASSIGN_OR_RETURN(files.generation_config_json, ReadFile(dir / "generation_config.json", false));
  return MakeHfTokenizer(files, options);
}

}  // namespace rlvr
