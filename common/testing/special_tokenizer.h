// A test tokenizer with special tokens: the char tokenizer's ids for text,
// plus the given special tokens ("<|im_end|>", ...) as single ids from 99 on,
// matched in text before characters as Hugging Face matches added tokens.
// For tests of prompt formats without the real tokenizer files.
#ifndef RLVR_COMMON_TESTING_SPECIAL_TOKENIZER_H_
#define RLVR_COMMON_TESTING_SPECIAL_TOKENIZER_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "common/tokenizer/tokenizer.h"

namespace rlvr::testing {

class SpecialTokenizer final : public Tokenizer {
 public:
  // has_bos false: bos_id() is -1 (as Qwen3); else the char tokenizer's BOS.
  SpecialTokenizer(std::vector<std::string> specials, bool has_bos)
      : chars_(MakeCharTokenizer()), specials_(std::move(specials)), has_bos_(has_bos) {}

  int vocab_size() const override { return chars_->vocab_size() + int(specials_.size()); }
  int bos_id() const override { return has_bos_ ? chars_->bos_id() : -1; }
  int eos_id() const override { return chars_->eos_id(); }
  int pad_id() const override { return chars_->pad_id(); }

  absl::StatusOr<std::vector<int>> Encode(absl::string_view text) const override {
    std::vector<int> ids;
    size_t plain = 0;
    auto flush = [&](size_t end) -> absl::Status {
      auto part = chars_->Encode(text.substr(plain, end - plain));
      if (!part.ok()) return part.status();
      ids.insert(ids.end(), part->begin(), part->end());
      return absl::OkStatus();
    };
    for (size_t i = 0; i < text.size();) {
      bool matched = false;
      for (size_t k = 0; k < specials_.size(); ++k) {
        if (absl::StartsWith(text.substr(i), specials_[k])) {
          if (absl::Status s = flush(i); !s.ok()) return s;
          ids.push_back(chars_->vocab_size() + int(k));
          i += specials_[k].size();
          plain = i;
          matched = true;
          break;
        }
      }
      if (!matched) ++i;
    }
    if (absl::Status s = flush(text.size()); !s.ok()) return s;
    return ids;
  }

  std::string Decode(const std::vector<int>& ids) const override {
    std::vector<int> plain;
    for (int id : ids) {
      if (id < chars_->vocab_size()) plain.push_back(id);
    }
    return chars_->Decode(plain);
  }

  std::optional<int> TokenId(absl::string_view text) const override {
    for (size_t k = 0; k < specials_.size(); ++k) {
      if (specials_[k] == text) return chars_->vocab_size() + int(k);
    }
    return std::nullopt;
  }
  std::string DecodeWithSpecial(const std::vector<int>& ids) const override {
    std::string out;
    for (int id : ids) {
      out +=
          id >= chars_->vocab_size() ? specials_[id - chars_->vocab_size()] : chars_->Decode({id});
    }
    return out;
  }

 private:
  std::unique_ptr<Tokenizer> chars_;
  std::vector<std::string> specials_;
  bool has_bos_;
};

}  // namespace rlvr::testing

#endif  // RLVR_COMMON_TESTING_SPECIAL_TOKENIZER_H_
