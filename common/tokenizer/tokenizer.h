// Tokenizers: text <-> token ids for the policy model.
//
// Two implementations sit behind this interface: the built-in character
// tokenizer for the synthetic tasks (below) and the Hugging Face byte-level BPE
// tokenizer loaded from a `tokenizer.json` (common/tokenizer/hf_tokenizer.h,
// LoadTokenizer). Thread safety: a Tokenizer is logically immutable after
// construction; all methods are const and safe to call from many threads.
#ifndef RLVR_COMMON_TOKENIZER_TOKENIZER_H_
#define RLVR_COMMON_TOKENIZER_TOKENIZER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace rlvr {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Number of token ids; valid ids are [0, vocab_size()).
  virtual int vocab_size() const = 0;
  // Special tokens. Each is a distinct id that no text character maps to.
  // bos_id() is -1 when the model has no BOS token (Qwen3 has none); callers
  // that prepend it must check adds_bos() (or bos_id() >= 0) first. eos_id()
  // and pad_id() are always valid ids (a model without a PAD token pads with
  // its EOS id).
  virtual int bos_id() const = 0;
  virtual int eos_id() const = 0;
  virtual int pad_id() const = 0;

  // Whether a prompt starts with bos_id() when the model's own pipeline
  // encodes it with special tokens (Hugging Face: the post_processor /
  // tokenizer_config.json `add_bos_token`). True for the char tokenizer and
  // Llama-3, false for Qwen3. Implies bos_id() >= 0.
  virtual bool adds_bos() const { return bos_id() >= 0; }

  // The ids that end a generation: eos_id() first, then any other stop ids
  // (Hugging Face: generation_config.json's `eos_token_id`, a number or a
  // list), without duplicates.
  virtual std::vector<int> stop_ids() const { return {eos_id()}; }

  // The id of the token whose text is exactly `text` (a vocabulary entry or
  // an added/special token such as "<|im_start|>"), or nullopt. For byte-level
  // BPE, `text` is the token's vocabulary spelling, which equals its decoded
  // text for special tokens and printable ASCII.
  virtual std::optional<int> TokenId(absl::string_view text) const = 0;

  // Token ids of `text`. No BOS/EOS is added (Hugging Face:
  // encode(text, add_special_tokens=False)); special tokens written in the
  // text (e.g. "<|im_end|>") are recognised as their single ids. A character
  // the vocabulary cannot represent is an InvalidArgument error naming it and
  // its offset (never a silent drop).
  virtual absl::StatusOr<std::vector<int>> Encode(absl::string_view text) const = 0;

  // Text of `ids`. Special tokens (BOS/EOS/PAD and every special added token)
  // decode to nothing; an id outside [0, vocab_size()) decodes to '?'. Bytes
  // that do not form valid UTF-8 become U+FFFD as Hugging Face does. Never
  // fails.
  virtual std::string Decode(const std::vector<int>& ids) const = 0;

  // As Decode, but special tokens decode to their text ("<|im_end|>"); an id
  // outside [0, vocab_size()) still decodes to '?'. The char tokenizer writes
  // its specials as "<pad>", "<bos>", "<eos>".
  virtual std::string DecodeWithSpecial(const std::vector<int>& ids) const = 0;
};

// The character tokenizer: PAD=0, BOS=1, EOS=2, then '\n' and the 95
// printable ASCII characters (' '..'~') in order. vocab_size() == 99.
std::unique_ptr<Tokenizer> MakeCharTokenizer();

}  // namespace rlvr

#endif  // RLVR_COMMON_TOKENIZER_TOKENIZER_H_
