// Test helpers (not part of the library): the Hugging Face fixtures of
// tests/data/hf (scripts/make-hf-fixtures) and their float64 expected
// log-probs, and the three ways the tests compare a loaded model with them
// (one sequence at a time through forward(), one right-padded batch through
// ComputeCompletionLogProbs, left-padded KV-cache decoding as Generate does).
// The model may live on any device and compute in any dtype: log-softmax
// runs in float32 on its device (as rlvr's own paths widen reduced-precision
// logits), and only the compared values come to the CPU.
#ifndef RLVR_COMMON_POLICY_HF_FIXTURE_TESTING_H_
#define RLVR_COMMON_POLICY_HF_FIXTURE_TESTING_H_

#include <string>
#include <vector>

#include "common/policy/model.h"

namespace rlvr::policy::hf_fixtures {

// The fixtures' directory names under tests/data/hf.
std::vector<std::string> HfFixtureNames();

// $RLVR_SOURCE_DIR/tests/data/hf/<name> ("." when the variable is unset).
std::string HfFixtureDir(const std::string& name);

// One sequence of <dir>/expected.json.
struct ExpectedSequence {
  std::vector<int> ids;
  std::vector<double> logprobs;  // logprobs[i] = log p(ids[i+1] | ids[..i]).
  std::vector<int> greedy;       // Argmax next token after each position.
  std::vector<double> margin;    // Top-1 minus top-2 log-prob at each position.
};
std::vector<ExpectedSequence> ReadHfExpected(const std::string& dir);

// What a comparison found: the largest |log-prob - reference| and the greedy
// argmax positions checked and missed (only positions whose reference
// margin exceeds the caller's threshold are checked).
struct FixtureDiff {
  double max_abs = 0;
  int greedy_checked = 0;
  int greedy_mismatches = 0;
  std::string first_mismatch;  // "sequence s position i: got g, want w", or "".
};

// Each sequence alone through forward(); greedy checked where the reference
// margin > greedy_margin (a negative value checks nothing).
FixtureDiff SingleSequenceDiff(Transformer& model, const std::vector<ExpectedSequence>& seqs,
                               double greedy_margin);

// All sequences as one right-padded batch of (prompt, completion) rows of
// unequal lengths and unequal prompt lengths through ComputeCompletionLogProbs.
double BatchDiff(Transformer& model, const std::vector<ExpectedSequence>& seqs);

// Left-padded batch decoding with a KV cache (as Generate does): a prompt of
// a different length per row is prefilled, then the rest is fed one token
// per step; each next token's log-prob is compared with the reference.
double DecodeDiff(Transformer& model, const std::vector<ExpectedSequence>& seqs);

}  // namespace rlvr::policy::hf_fixtures

#endif  // RLVR_COMMON_POLICY_HF_FIXTURE_TESTING_H_
