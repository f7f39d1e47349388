// Re-scoring completions with a verifier: the engine of `rlvr verify`.
//
// Input: JSONL, one object per line:
//   {"completion": "<model text>", "answer": "<reference>" | <number>,
//    "verifier": "<name>"}   ("verifier" optional: the default otherwise)
// Output: one JSON line per non-blank input line, in input order:
//   {"reward": 1.0, "extracted": "...", "parsed": {"completion": "...",
//    "answer": "..."}, "well_formed": true, "reason": "correct: ..."}
// where "parsed" holds each side's normal form (the math verifier's canonical
// form of the parse; null when a side did not parse), or, for a line that is
// not valid input, {"line": N, "error": "..."}. A bad line does not stop the
// run (and loses no other line).
//
// Thread safety: VerifyJsonl owns the worker threads it starts and joins them
// before it returns; the streams are used from the calling thread only.
#ifndef RLVR_COMMON_TASKS_VERIFY_JSONL_H_
#define RLVR_COMMON_TASKS_VERIFY_JSONL_H_

#include <cstdint>
#include <istream>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "common/tasks/verifier.h"

namespace rlvr {

struct VerifyJsonlOptions {
  // The verifier of lines without a "verifier" key (MakeVerifier's names).
  std::string verifier = "math";
  // Format reward and math tolerance, for every verifier.
  VerifierOptions verifier_options;
  // Lines verified in parallel (output order is kept); >= 1.
  int threads = 1;
  // Lines read ahead and verified as one batch.
  int batch_lines = 4096;
};

struct VerifyJsonlStats {
  int64_t lines = 0;        // Non-blank input lines.
  int64_t errors = 0;       // Lines that were not valid input.
  int64_t correct = 0;      // Lines with reward 1.
  int64_t well_formed = 0;  // Lines whose answer was well formed.
  double reward_sum = 0;    // Sum of the rewards of valid lines.
};

// Verifies every line of `in` and writes the results to `out`.
// InvalidArgument (before reading) for an unknown default verifier or options
// out of range; DataLoss when `out` fails. Bad lines are counted in
// stats.errors and reported in the output, not returned as an error.
absl::StatusOr<VerifyJsonlStats> VerifyJsonl(std::istream& in, std::ostream& out,
                                             const VerifyJsonlOptions& options);

}  // namespace rlvr

#endif  // RLVR_COMMON_TASKS_VERIFY_JSONL_H_
