// An in-process learner for actor tests and benchmarks, built on the real
// generated rlvr.v1 SessionService and WeightService (sync gRPC server on
// 127.0.0.1:0). It is the learner's side of the protocol in its simplest
// honest form — leases from a prompt list with credit-based flow control,
// acks, chunked CRC-checked weight streaming — plus fault injection:
// corrupted or truncated weight transfers and dropped sessions. It also
// checks the actor's side of the contract (never over capacity, no unknown or
// duplicate leases, group sizes) and records everything for assertions.
//
// Thread safety: every public method may be called from any thread.
#ifndef RLVR_ACTOR_TESTING_FAKE_LEARNER_H_
#define RLVR_ACTOR_TESTING_FAKE_LEARNER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/tasks/task.h"
#include "common/tokenizer/tokenizer.h"
#include "rlvr/v1/rollout.pb.h"
#include "rlvr/v1/session.pb.h"

namespace rlvr::actor::testing {

// A prompt the fake learner leases.
struct FakePrompt {
  std::string id;
  std::vector<int> tokens;  // BOS included.
  std::string answer;
};

// The first `n` training prompts of `task` (cycled if the split is smaller),
// encoded as the learner would: BOS + Encode(text).
absl::StatusOr<std::vector<FakePrompt>> PromptsFromTask(const Task& task,
                                                        const Tokenizer& tokenizer, int n);

struct FakeLearnerOptions {
  // Prompts to lease, in order; a returned or abandoned prompt is re-leased first.
  std::vector<FakePrompt> prompts;
  // Cycle through `prompts` forever (bench); otherwise each prompt is
  // completed once and leasing stops when all are answered.
  bool cycle = false;
  // Completions per lease (G).
  int group_size = 4;
  // Sampling params of every lease; the seed of lease n is sampling.seed + prompt index
  // (so a re-leased prompt gets the same seed).
  rlvr::v1::SamplingParams sampling;
  std::string task = "arithmetic";
  // Reported in Welcome (0 = not checked by the actor).
  uint32_t vocab_size = 0;
  uint32_t max_policy_lag = 1;
  // Bytes per WeightChunk.
  uint64_t chunk_bytes = 64 << 10;
  // Lease deadline from grant, seconds.
  double lease_timeout_s = 60;
  // Grant this many leases beyond the actor's declared capacity (fault
  // injection: the actor must return the excess at once).
  int extra_grants = 0;
  // min_policy_version of each lease = max(1, latest - max_policy_lag)
  // when true; 0 otherwise.
  bool enforce_min_version = true;
  // Welcome.batch_messages: accept RolloutBatch messages, and send leases in
  // LeaseBatch to actors whose Hello asks for it. false plays an older
  // learner: it ignores RolloutBatch (counted in unexpected_batches).
  bool batch_messages = true;
};

// How to spoil the next weight transfer(s).
enum class Corruption {
  kNone,
  kFlipByte,  // Flip a byte of a middle chunk, recompute its chunk CRC: only the blob CRC catches
              // it.
  kBadChunkCrc,  // Flip a byte, keep the original chunk CRC.
  kTruncate,     // End the stream after half the chunks.
};

// What the fake learner saw.
struct FakeLearnerStats {
  int sessions_opened = 0;          // Hellos received.
  int sessions_closed_cleanly = 0;  // Streams the actor half-closed (WritesDone) itself.
  int max_outstanding = 0;          // Most leases outstanding on one session at once.
  int unknown_lease_groups = 0;     // Groups for leases not outstanding on their session.
  int wrong_size_groups = 0;        // Groups with completions != group_size.
  int stale_groups = 0;             // Groups older than their lease's min_policy_version.
  int single_groups = 0;            // Groups that came one per message.
  int group_batches = 0;            // RolloutBatch messages received (batch_messages on).
  int unexpected_batches = 0;       // RolloutBatch messages sent to an older learner.
  int lease_batches = 0;            // LeaseBatch messages sent.
  int leases_granted = 0;
  int leases_returned = 0;                // Via ReturnLeases.
  int leases_requeued = 0;                // Outstanding when a session ended.
  int weight_transfers = 0;               // Transfers started (all versions, all watchers).
  int corrupted_transfers = 0;            // Of which spoiled on purpose.
  std::vector<std::string> incarnations;  // Hello.incarnation in order.
  std::vector<uint64_t> hello_versions;   // Hello.have_version in order.
};

class FakeLearner {
 public:
  static absl::StatusOr<std::unique_ptr<FakeLearner>> Start(const FakeLearnerOptions& options);
  ~FakeLearner();  // Shuts the server down (cancels open streams).

  // "127.0.0.1:PORT".
  std::string address() const;

  // Makes `blob` (a policy::SerializeWeights blob) the newest version: pushes
  // it to every watcher and announces it on every session.
  void PublishWeights(uint64_t version, std::string blob);

  // Spoils the next `count` weight transfers in `mode`.
  void CorruptNextTransfers(Corruption mode, int count);

  // Ends every open Session stream from the server side (as a learner
  // restart or a network cut would). Outstanding leases are re-queued.
  void DropSessions();

  // Stops (false) or resumes (true) granting leases.
  void SetLeasing(bool enabled);

  // Blocks until at least `n` groups were accepted or `timeout_s` passed.
  bool WaitForGroups(int n, double timeout_s);
  // Blocks until at least `opened` sessions were opened or `timeout_s` passed.
  bool WaitForSessions(int opened, double timeout_s);

  // Accepted groups with the lease they answer, in arrival order.
  struct Received {
    rlvr::v1::WorkLease lease;
    rlvr::v1::RolloutGroup group;
  };
  std::vector<Received> accepted() const;
  FakeLearnerStats stats() const;
  // Number of sessions open now.
  int open_sessions() const;

 private:
  class Impl;
  explicit FakeLearner(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rlvr::actor::testing

#endif  // RLVR_ACTOR_TESTING_FAKE_LEARNER_H_
