// Fuzz target: the math verifier's engine (common/math). The input is a
// reference, a NUL byte and a completion; without a NUL the input is both.
// Extraction, parsing, canonical printing and comparison must return, never
// crash, hang or exhaust memory (the work budget and the parser's limits bound
// them), and three properties must hold:
//  - reflexivity: an answer is never "different" from itself;
//  - symmetry: equal one way is equal the other way;
//  - an answer that parses prints a non-empty canonical form.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/math/equivalence.h"
#include "common/math/extract.h"
#include "common/math/parser.h"
#include "common/math/print.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rlvr::math;
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string reference = input.substr(0, nul);
  const std::string completion = nul == std::string::npos ? input : input.substr(nul + 1);

  EquivalenceOptions options;
  options.work_budget = 200000;  // keeps each run short; the logic is the same
  const Extracted got = ExtractAnswer(completion);
  const std::string ref_text = ReferenceAnswer(reference);
  ParseChoice(ref_text, false);
  ParseChoice(got.text, true);
  auto ref = ParseAnswer(ref_text);
  auto ans = ParseAnswer(got.text);
  for (const auto* e : {&ref, &ans}) {
    if (!e->ok()) continue;
    if (Canonical(**e).empty()) std::abort();
    if (CompareAnswers(**e, **e, options).outcome == Outcome::kDifferent) std::abort();
  }
  if (ref.ok() && ans.ok()) {
    // Symmetry: equal one way is equal the other way (unless a direction is
    // not comparable).
    const Outcome forward = CompareAnswers(*ref, *ans, options).outcome;
    const Outcome backward = CompareAnswers(*ans, *ref, options).outcome;
    if (forward != Outcome::kNotComparable && backward != Outcome::kNotComparable &&
        (forward == Outcome::kEqual) != (backward == Outcome::kEqual)) {
      std::abort();
    }
  }
  return 0;
}
