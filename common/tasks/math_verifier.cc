#include "common/tasks/math_verifier.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/math/expr.h"
#include "common/math/extract.h"
#include "common/math/print.h"

namespace rlvr {
namespace {

class MathVerifier final : public Verifier {
 public:
  explicit MathVerifier(const MathVerifierOptions& options) : options_(options) {}
  std::string name() const override { return "math"; }

 protected:
  Verdict Score(absl::string_view answer, absl::string_view completion,
                VerdictDetail* detail) const override {
    const std::string reference = math::ReferenceAnswer(answer);
    const math::Extracted got = math::ExtractAnswer(completion);
    const std::optional<char> ref_choice = math::ParseChoice(reference, /*lenient=*/false);

    absl::StatusOr<math::Expr> ref_expr = absl::InvalidArgumentError("multiple choice");
    if (!ref_choice.has_value()) ref_expr = math::ParseAnswer(reference, options_.parse);
    if (detail != nullptr) {
      detail->extracted = got.text;
      if (ref_choice.has_value()) {
        detail->parsed_answer = absl::StrCat("(", std::string(1, *ref_choice), ")");
      } else if (ref_expr.ok()) {
        detail->parsed_answer = math::Canonical(*ref_expr);
      }
    }
    if (got.source == math::AnswerSource::kNone) {
      return Verdict{0.0, got.truncated_box
                              ? "no answer: the last \\boxed{ is not closed (truncated)"
                              : "no answer found"};
    }
    if (absl::StripAsciiWhitespace(got.text).empty()) return Verdict{0.0, "no answer: empty box"};
    const bool marked =
        got.source == math::AnswerSource::kBox || got.source == math::AnswerSource::kPhrase;

    if (ref_choice.has_value()) {
      const std::optional<char> letter = math::ParseChoice(got.text, /*lenient=*/true);
      if (detail != nullptr) {
        detail->well_formed = marked && letter.has_value();
        if (letter.has_value())
          detail->parsed_completion = absl::StrCat("(", std::string(1, *letter), ")");
      }
      if (!letter.has_value()) {
        return Judge(false, false, absl::StrCat("not a choice letter: ", Short(got.text)));
      }
      return Judge(
          *letter == *ref_choice, marked,
          absl::StrCat("choice ", std::string(1, *letter), " vs ", std::string(1, *ref_choice)));
    }

    absl::StatusOr<math::Expr> got_expr = math::ParseAnswer(got.text, options_.parse);
    const bool well_formed = marked && got_expr.ok();
    if (detail != nullptr) {
      detail->well_formed = well_formed;
      if (got_expr.ok()) detail->parsed_completion = math::Canonical(*got_expr);
    }
    if (ref_expr.ok() && got_expr.ok()) {
      math::Comparison c = math::CompareAnswers(*ref_expr, *got_expr, options_.equivalence);
      if (c.outcome == math::Outcome::kEqual)
        return Verdict{1.0, absl::StrCat("correct: ", c.reason)};
      if (c.outcome == math::Outcome::kDifferent) return Judge(false, well_formed, c.reason);
      return Fallback(reference, got.text, well_formed, c.reason);
    }
    std::string why;
    if (!got_expr.ok()) why = absl::StrCat("answer not parsed: ", got_expr.status().message());
    if (!ref_expr.ok()) {
      absl::StrAppend(&why, why.empty() ? "" : "; ",
                      "reference not parsed: ", ref_expr.status().message());
    }
    return Fallback(reference, got.text, well_formed, why);
  }

 private:
  static std::string Short(absl::string_view s) {
    std::string out(s.substr(0, 60));
    if (s.size() > 60) out += "...";
    return out;
  }

  Verdict Judge(bool correct, bool well_formed, absl::string_view why) const {
    if (correct) return Verdict{1.0, absl::StrCat("correct: ", why)};
    return Verdict{well_formed ? options_.format_reward : 0.0,
                   absl::StrCat(well_formed ? "wrong (well formed): " : "wrong: ", why)};
  }

  // The "boxed" verifier's normalised string equality.
  Verdict Fallback(absl::string_view reference, absl::string_view got, bool well_formed,
                   absl::string_view why) const {
    const std::string a = NormalizeLatexAnswer(got);
    const std::string b = NormalizeLatexAnswer(reference);
    const bool equal = !a.empty() && LatexAnswersEqual(a, b);
    return Judge(equal, well_formed,
                 absl::StrCat(equal ? "normalised strings equal" : "normalised strings differ",
                              " (", why, ")"));
  }

  MathVerifierOptions options_;
};

}  // namespace

std::unique_ptr<Verifier> MakeMathVerifier(const MathVerifierOptions& options) {
  return std::make_unique<MathVerifier>(options);
}

}  // namespace rlvr
