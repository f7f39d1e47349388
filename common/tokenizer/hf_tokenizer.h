// Hugging Face byte-level BPE tokenizers loaded from `tokenizer.json`.
//
// Supported (what Qwen2/Qwen3 and Llama-3 use; anything else is an
// InvalidArgument error at load naming the file and key, never a silent
// approximation):
//   - model: type "BPE" with `vocab`, `merges` ("a b" strings or [a, b]
//     pairs), `ignore_merges`, `byte_fallback` (<0xNN> tokens);
//   - normalizer: null or NFC (ICU);
//   - pre_tokenizer: ByteLevel, or a Sequence of Split (regex, Isolated, not
//     inverted) and ByteLevel (use_regex false, add_prefix_space false); the
//     Oniguruma pattern is translated to PCRE2 (JIT) with Oniguruma's `\s`;
//   - added_tokens (special or not; single_word, lstrip, rstrip, normalized),
//     matched in the text before it is split;
//   - decoder ByteLevel; post_processor TemplateProcessing / ByteLevel /
//     Sequence (decides adds_bos()).
// See docs/tokenizer.md for the decisions and the reference expectations.
//
// Thread safety: the returned Tokenizer is const and safe to use from many
// threads; its per-pre-token merge cache is sharded and mutex-protected, and
// bounded in size.
#ifndef RLVR_COMMON_TOKENIZER_HF_TOKENIZER_H_
#define RLVR_COMMON_TOKENIZER_HF_TOKENIZER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/tokenizer/tokenizer.h"

namespace rlvr {

// The text of a model's tokenizer files. `tokenizer_json` is required; the
// other two are optional ("" when absent). `source` names the file or folder
// in error messages.
struct HfTokenizerFiles {
  std::string source;                  // e.g. "models/qwen3" (for messages).
  std::string tokenizer_json;          // Contents of tokenizer.json.
  std::string tokenizer_config_json;   // Contents of tokenizer_config.json or "".
  std::string generation_config_json;  // Contents of generation_config.json or "".
};

// Options of the per-pre-token merge cache.
struct HfTokenizerOptions {
  // Entries kept in total over all shards (pre-tokens longer than
  // `max_cached_bytes` are never cached). 0 disables the cache.
  int cache_entries = 1 << 16;
  // Longest pre-token (in bytes) that is cached.
  int max_cached_bytes = 64;
};

// Builds the tokenizer from the files' text. Errors (InvalidArgument) name
// the file and the key: malformed JSON, an unsupported model/normalizer/
// pre-tokenizer/decoder type, a regex PCRE2 rejects, a merge naming an
// unknown token, a bos/eos/pad token that is not in the vocabulary.
//
// Ids: eos_id() is tokenizer_config.json's `eos_token`, else
// generation_config.json's first `eos_token_id`; bos_id() is
// `bos_token` (or generation_config's `bos_token_id`), -1 when neither names
// one; pad_id() is `pad_token`, else eos_id(). stop_ids() is eos_id() plus
// generation_config.json's `eos_token_id` (a number or a list). adds_bos()
// is true when the post_processor's single template starts with a special
// token (that token must be bos_id()), or tokenizer_config.json's
// `add_bos_token` is true.
absl::StatusOr<std::unique_ptr<Tokenizer>> MakeHfTokenizer(const HfTokenizerFiles& files,
                                                           const HfTokenizerOptions& options = {});

// Loads a tokenizer from `path`: a tokenizer.json file, or a directory that
// holds one (and optionally tokenizer_config.json and generation_config.json,
// which are also read from the directory of a tokenizer.json path). NotFound
// when tokenizer.json cannot be read; otherwise as MakeHfTokenizer.
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadTokenizer(const std::string& path,
                                                         const HfTokenizerOptions& options = {});

}  // namespace rlvr

#endif  // RLVR_COMMON_TOKENIZER_HF_TOKENIZER_H_
