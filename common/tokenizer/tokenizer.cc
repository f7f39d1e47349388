#include "common/tokenizer/tokenizer.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rlvr {
namespace {

constexpr int kPad = 0;
constexpr int kBos = 1;
constexpr int kEos = 2;
constexpr int kNewline = 3;
constexpr int kFirstPrintable = 4;  // ' ' (0x20) .. '~' (0x7e) follow.
constexpr int kVocab = kFirstPrintable + ('~' - ' ' + 1);

class CharTokenizer final : public Tokenizer {
 public:
  int vocab_size() const override { return kVocab; }
  int bos_id() const override { return kBos; }
  int eos_id() const override { return kEos; }
  int pad_id() const override { return kPad; }
  bool adds_bos() const override { return true; }

  std::optional<int> TokenId(absl::string_view text) const override {
    if (text == "<pad>") return kPad;
    if (text == "<bos>") return kBos;
    if (text == "<eos>") return kEos;
    if (text.size() != 1) return std::nullopt;
    const unsigned char c = static_cast<unsigned char>(text[0]);
    if (c == '\n') return kNewline;
    if (c >= ' ' && c <= '~') return kFirstPrintable + (c - ' ');
    return std::nullopt;
  }

  absl::StatusOr<std::vector<int>> Encode(absl::string_view text) const override {
    std::vector<int> ids;
    ids.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      if (c == '\n') {
        ids.push_back(kNewline);
      } else if (c >= ' ' && c <= '~') {
        ids.push_back(kFirstPrintable + (c - ' '));
      } else {
        return absl::InvalidArgumentError(
            absl::StrFormat("char tokenizer: unknown character 0x%02x at offset %d", c, i));
      }
    }
    return ids;
  }

  std::string Decode(const std::vector<int>& ids) const override {
    return DecodeImpl(ids, /*with_special=*/false);
  }
  std::string DecodeWithSpecial(const std::vector<int>& ids) const override {
    return DecodeImpl(ids, /*with_special=*/true);
  }

 private:
  static std::string DecodeImpl(const std::vector<int>& ids, bool with_special) {
    std::string out;
    out.reserve(ids.size());
    for (int id : ids) {
      if (id == kPad || id == kBos || id == kEos) {
        if (with_special) out += id == kPad ? "<pad>" : id == kBos ? "<bos>" : "<eos>";
        continue;
      }
      if (id == kNewline) {
        out.push_back('\n');
      } else if (id >= kFirstPrintable && id < kVocab) {
        out.push_back(static_cast<char>(' ' + (id - kFirstPrintable)));
      } else {
        out.push_back('?');
      }
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<Tokenizer> MakeCharTokenizer() { return std::make_unique<CharTokenizer>(); }

}  // namespace rlvr
