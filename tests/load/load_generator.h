// Load generator: many concurrent actor sessions against one learner, each
// answering every lease at once with a synthetic group (valid, or invalid in
// one of several ways), measuring ack latency. Half the sessions use the
// batched messages (RolloutBatch / AckBatch / LeaseBatch), half the older
// one-group-per-message protocol. Uses the gRPC callback API:
// one reactor per session, no thread per stream.
//
// Thread safety: Run() is called from one thread; it owns its reactors.
#ifndef RLVR_TESTS_LOAD_LOAD_GENERATOR_H_
#define RLVR_TESTS_LOAD_LOAD_GENERATOR_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"

namespace rlvr::testing {

struct LoadOptions {
  std::string target = "127.0.0.1:0";  // Learner address.
  int sessions = 256;                  // Concurrent sessions.
  double duration_s = 10.0;            // Then every session closes.
  double invalid_fraction = 0.1;       // Share of groups made invalid on purpose.
  int capacity = 4;                    // Leases each session asks for.
  int completion_tokens = 8;           // Tokens per completion (<= learner's max_new_tokens).
  int vocab_size = 0;                  // 0: take it from the learner's Welcome.
  // Even-numbered sessions declare Hello.batch_messages and answer each
  // LeaseBatch with one RolloutBatch; odd ones (and all when false) send one
  // group per message, as older actors do.
  bool batch_messages = true;
  uint64_t seed = 1;
};

struct LoadReport {
  int64_t leases = 0;        // Leases received.
  int64_t valid_sent = 0;    // Valid groups sent.
  int64_t invalid_sent = 0;  // Invalid groups sent.
  int64_t valid_accepted = 0;
  int64_t valid_rejected = 0;    // Valid groups refused (any reason).
  int64_t invalid_accepted = 0;  // Must be 0.
  int64_t invalid_rejected = 0;
  std::map<std::string, int64_t> valid_rejected_by_reason;
  int64_t sessions_opened = 0;
  int64_t sessions_failed = 0;  // Streams that ended with an error before the end.
  double seconds = 0;
  double accepted_per_s = 0;
  double ack_p50_ms = 0, ack_p99_ms = 0, ack_max_ms = 0;
  std::string Summary() const;
};

absl::StatusOr<LoadReport> RunLoad(const LoadOptions& options);

}  // namespace rlvr::testing

#endif  // RLVR_TESTS_LOAD_LOAD_GENERATOR_H_
