// The actor's book of leases: which prompts it holds, on which session, and
// what becomes of each. A pure state machine, free of gRPC, threads and
// clocks (time is passed in), so that its invariant is tested directly
// (actor/lease_book_test.cc); the actor calls it under its mutex and does
// what it answers (send a ReturnLeases, generate a batch, send groups).
//
// A lease moves through
//
//   Grant ─► queued ─► TakeBatch ─► generating ─► FinishBatch(ok) ─► awaiting ack ─► Ack
//              │                         │                 │
//              │ (deadline passed, weights never came,     └ error: given back
//              │  shutdown)  given back  └ shutdown past the deadline: given back
//              └ CloseSession (the session broke): dropped
//   queued or generating ─► Revoke (the learner took it back): revoked
//
// and ends in exactly one of: submitted (its group was handed to the
// session), given back (the caller sends its id in a ReturnLeases on the
// session it came from), dropped (its session broke; the learner re-queues
// every lease of a dead session itself), or revoked (the learner re-queued it
// already because its group would arrive stale: a queued one is never
// generated, a generating one's group is left out of the batch's submission). A lease of a dead
// session is never submitted or given back on a later session, and no lease is submitted twice.
// Leases the book refuses at Grant are given back at once (shutting down,
// invalid, over capacity) or ignored (a wrong session or an id already held:
// the learner never does that).
//
// Capacity: never more than `capacity` leases queued + generating on the
// open session. A lease whose min_policy_version is newer than the weights
// held waits for them at most `stale_lease_wait`, then is given back.
//
// Thread safety: none (thread-compatible); the actor guards it with its mutex.
#ifndef RLVR_ACTOR_LEASE_BOOK_H_
#define RLVR_ACTOR_LEASE_BOOK_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "rlvr/v1/session.pb.h"

namespace rlvr::actor {

struct LeaseBookOptions {
  // Most leases held at once (queued + generating), >= 1.
  int capacity = 1;
  // How long a lease waits for the weights its min_policy_version asks for.
  absl::Duration stale_lease_wait = absl::Seconds(10);
  // Checks a lease at Grant; a refused lease is given back with the message.
  // Null: every lease is valid.
  std::function<absl::Status(const rlvr::v1::WorkLease&)> validate;
};

// Leases to send back in one ReturnLeases on the open session.
struct GiveBack {
  std::vector<uint64_t> lease_ids;
  std::string reason;
};

// What the book counted since construction.
struct LeaseBookCounters {
  uint64_t received = 0;      // Grant calls.
  uint64_t given_back = 0;    // Leases handed out in a GiveBack.
  uint64_t dropped = 0;       // Lost with a broken session (queued, generating or wrong session).
  uint64_t submitted = 0;     // Groups handed to the session (FinishBatch ok).
  uint64_t acked = 0;         // Acks that matched a submitted lease.
  uint64_t unknown_acks = 0;  // Acks for no lease awaiting one on the session.
  uint64_t ignored = 0;       // Grants of an id already held.
  uint64_t revoked = 0;       // Queued or generating leases the learner revoked.
  int max_held = 0;           // High-water mark of held().
};

class LeaseBook {
 public:
  explicit LeaseBook(LeaseBookOptions options);

  // ---- Sessions. At most one is open; leases belong to the one they came on.

  // Opens a session (closing none: call CloseSession first); returns its id
  // (1, 2, ...).
  uint64_t OpenSession();
  // Closes the open session (no-op if none): its queued leases are dropped
  // (returned, for the caller's logs and tests), a batch in generation will
  // be dropped at FinishBatch, and acks still awaited are forgotten.
  std::vector<uint64_t> CloseSession();
  bool session_open() const { return open_; }
  // Id of the open (or last) session; 0 before the first.
  uint64_t session() const { return session_; }

  // ---- Leases.

  struct Admission {
    enum Kind {
      kQueued,    // Held now.
      kGiveBack,  // Refused: return it on `session` with `reason`.
      kIgnored,   // Not for the open session, or its id is already held: do nothing.
    };
    Kind kind = kQueued;
    std::string reason;
  };
  // A lease received on `session` at `now`.
  Admission Grant(uint64_t session, rlvr::v1::WorkLease lease, absl::Time now);

  // True if TakeBatch(version, now) would do something: a lease is ready for
  // `version` (0 = no weights) or must be given back.
  bool Actionable(uint64_t version, absl::Time now) const;

  struct Take {
    // Leases to generate now with `version` (at most capacity), in arrival order.
    std::vector<rlvr::v1::WorkLease> batch;
    // Leases to return: deadline passed, or the weights they ask for did not come.
    std::vector<GiveBack> give_back;
  };
  // Sorts the queued leases: ready ones (min_policy_version <= version, not
  // past their deadline) become the batch in generation; expired and stale
  // ones are given back; the rest wait. Requires !generating().
  Take TakeBatch(uint64_t version, absl::Time now);

  // True while some lease is generating (a batch, or leases taken one by one).
  bool generating() const { return !generating_.empty(); }

  struct Finish {
    enum Kind {
      kSubmit,     // Send the batch's groups; they now await acks.
      kGiveBack,   // Generation failed: return `give_back`.
      kDropped,    // Its session broke meanwhile: drop the result.
      kAbandoned,  // Given back already at shutdown: drop the result.
      kRevoked,    // FinishLease only: the learner revoked it meanwhile; drop the result.
    };
    Kind kind = kSubmit;
    GiveBack give_back;
    // kSubmit: leases of the batch revoked while it ran; leave their groups out.
    std::vector<uint64_t> revoked;
  };
  // The batch in generation ended (`ok`: its groups exist). Requires
  // generating() and that the leases generating were taken by TakeBatch.
  Finish FinishBatch(bool ok);

  // ---- Continuous generation: leases enter and leave generation one by one
  // (the actor's engine, which refills row slots as groups finish). A lease
  // taken here ends with its own FinishLease; the rules of a batch apply to
  // each lease alone (FinishBatch of a batch of one).

  // TakeBatch without the one-batch rule: callable while leases generate;
  // at most `max_leases` (>= 0) ready leases start generating (0: only the
  // expired and stale ones are given back), and never more than capacity
  // are held.
  Take TakeLeases(uint64_t version, absl::Time now, int max_leases);
  // The generation of `lease_id` (taken by TakeLeases) ended; `ok`: its
  // group exists. kSubmit (send it; it now awaits an ack), kGiveBack
  // ("generation error"), kDropped (its session broke), kAbandoned (given
  // back at shutdown) or kRevoked. Requires the lease generating.
  Finish FinishLease(uint64_t lease_id, bool ok);
  // Generating leases whose group can no longer be sent (revoked, abandoned
  // at shutdown, or of a broken session), in the order they were taken: the
  // caller stops generating them and calls FinishLease for each.
  std::vector<uint64_t> Unwanted() const;

  // An Ack for `lease_id` arrived on the open session. True if it matched a
  // submitted lease awaiting one (each is matched once).
  bool Ack(uint64_t lease_id);

  // The learner revoked `lease_ids` on `session` (a LeaseRevocation): queued
  // ones are forgotten, generating ones are left out at FinishBatch; ids
  // awaiting an ack, unknown or of another session are ignored. Returns how
  // many were revoked. Nothing is given back: the learner re-queued them.
  int Revoke(uint64_t session, const std::vector<uint64_t>& lease_ids);

  // ---- Shutdown.

  // Grants from now on are given back ("shutting down").
  void StopGranting() { granting_ = false; }
  // Every queued lease of the open session, and with `abandon_batch` the
  // batch in generation too (its FinishBatch is then kAbandoned), as one
  // GiveBack ("sigterm"); empty if there is nothing or no session.
  GiveBack GiveBackUnfinished(bool abandon_batch);

  // Leases held on the open session: queued + generating (unless abandoned
  // or revoked).
  int held() const;
  int queued() const { return static_cast<int>(queued_.size()); }
  // Submitted leases of the open session still awaiting an ack.
  int awaiting_ack() const;
  const LeaseBookCounters& counters() const { return counters_; }

 private:
  enum class State { kQueued, kGenerating, kAwaitingAck };
  // A lease in generation: its session, and what happened to it meanwhile.
  struct Generating {
    uint64_t id = 0;
    uint64_t session = 0;
    bool abandoned = false;
    bool revoked = false;
  };
  enum class Fate { kReady, kWait, kExpired, kStale };
  struct Queued {
    rlvr::v1::WorkLease lease;
    absl::Time received;
  };

  Fate FateOf(const Queued& q, uint64_t version, absl::Time now) const;
  void NoteHeld();

  const LeaseBookOptions options_;
  bool open_ = false;
  bool granting_ = true;
  uint64_t session_ = 0;
  std::deque<Queued> queued_;
  // Every lease of the open session that is queued, generating or awaiting an ack.
  std::unordered_map<uint64_t, State> state_;
  // Leases in generation, in the order they were taken (one batch, or
  // leases taken one by one), and the ids among them revoked meanwhile, in
  // the order of revocation.
  std::vector<Generating> generating_;
  std::vector<uint64_t> revoked_generating_;
  // A live lease of generating_ (open session, neither abandoned nor revoked).
  bool Live(const Generating& g) const {
    return open_ && g.session == session_ && !g.abandoned && !g.revoked;
  }
  LeaseBookCounters counters_;
};

}  // namespace rlvr::actor

#endif  // RLVR_ACTOR_LEASE_BOOK_H_
