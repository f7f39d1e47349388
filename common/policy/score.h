// Scoring a token sequence under the policy: what `rlvr score` prints, how a
// user checks that a checkpoint loaded right (compare with another
// implementation's numbers for the same ids).
//
// Thread safety: as the model's forward under NoGradGuard (model.h).
#ifndef RLVR_COMMON_POLICY_SCORE_H_
#define RLVR_COMMON_POLICY_SCORE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"

namespace rlvr::policy {

class Transformer;  // model.h

struct SequenceScore {
  // Entry i is log p(ids[i+1] | ids[0..i]), natural log, computed in float32
  // (float64 for a float64 model); ids.size() - 1 entries.
  std::vector<double> logprobs;
  // Entry i is the argmax of p(. | ids[0..i]) (lowest id on ties);
  // ids.size() entries (the last is the greedy continuation).
  std::vector<int> greedy;
};

// Scores one sequence (positions 0..n-1, no padding), projecting to the
// vocabulary `chunk_rows` positions at a time (0 = as logprobs.h's default),
// so a long sequence never holds [n, V] logits. InvalidArgument for an empty
// sequence or ids outside the model's vocabulary.
absl::StatusOr<SequenceScore> ScoreSequence(Transformer& model, const std::vector<int>& ids,
                                            int64_t chunk_rows = 0);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_SCORE_H_
