// Tokenizers: text <-> token ids for the policy model.
//
// The interface is small so that a BPE tokenizer (Llama/Qwen2) can be added
// later behind it. The built-in one is a character tokenizer for the synthetic
// tasks. Thread safety: a Tokenizer is immutable after construction; all
// methods are const and safe to call from many threads.
#ifndef RLVR_COMMON_TOKENIZER_H_
#define RLVR_COMMON_TOKENIZER_H_

#include <memory>
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
  virtual int bos_id() const = 0;
  virtual int eos_id() const = 0;
  virtual int pad_id() const = 0;

  // Token ids of `text`. No BOS/EOS is added. A character outside the
  // vocabulary is an InvalidArgument error naming it and its offset (never a
  // silent drop).
  virtual absl::StatusOr<std::vector<int>> Encode(absl::string_view text) const = 0;

  // Text of `ids`. Special tokens (BOS/EOS/PAD) decode to nothing; an id
  // outside [0, vocab_size()) decodes to '?'. Never fails.
  virtual std::string Decode(const std::vector<int>& ids) const = 0;
};

// The character tokenizer: PAD=0, BOS=1, EOS=2, then '\n' and the 95
// printable ASCII characters (' '..'~') in order. vocab_size() == 99.
std::unique_ptr<Tokenizer> MakeCharTokenizer();

}  // namespace rlvr

#endif  // RLVR_COMMON_TOKENIZER_H_
