// Fixtures shared by the lease table and ingest tests: `n` small prompts and
// the options of a tiny job (groups of 2, 4 new tokens, vocabulary 10).
#ifndef RLVR_LEARNER_LEASE_TESTING_H_
#define RLVR_LEARNER_LEASE_TESTING_H_

#include <string>
#include <vector>

#include "learner/lease_table.h"

namespace rlvr::learner::testing {

inline std::vector<LeasePrompt> MakePrompts(int n) {
  std::vector<LeasePrompt> out;
  for (int i = 0; i < n; ++i) out.push_back({"p" + std::to_string(i), {1, 3 + i % 5}, "7"});
  return out;
}

// Leases never expire unless a test shortens lease_timeout_s.
inline IngestOptions TinyJobOptions(int lag, int buffer, int per_update) {
  IngestOptions o;
  o.group_size = 2;
  o.sampling.max_new_tokens = 4;
  o.max_policy_lag = lag;
  o.buffer_groups = buffer;
  o.groups_per_update = per_update;
  o.lease_timeout_s = 3600;
  o.max_message_bytes = 1 << 20;
  o.max_sessions = 4;
  o.vocab_size = 10;
  o.eos_id = 2;
  o.seed = 5;
  return o;
}

}  // namespace rlvr::learner::testing

#endif  // RLVR_LEARNER_LEASE_TESTING_H_
