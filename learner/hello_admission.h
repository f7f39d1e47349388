// Admission of session streams that have not said Hello yet (the front
// door's first gate, docs/reliability.md "The front door").
//
// A stream costs the learner a reactor and a slot until it says Hello or its
// Hello deadline ends it; one that never will (a client without credentials,
// a port scanner, a broken actor) must not be able to lock real actors out.
// So streams awaiting Hello live in a pool of their own, apart from
// max_sessions (which counts sessions that said Hello), and the pool is
// bounded twice:
//  - per peer address (the IP, without the port): at most max_per_peer
//    streams of one address await Hello; more are refused;
//  - in all: at most max_awaiting. When the pool is full, a stream from an
//    address that holds fewer awaiting streams than the address holding the
//    most displaces that address's oldest stream (which is ended); otherwise
//    it is refused. A flood therefore keeps at most its fair share once
//    anyone else arrives, and an actor that sends Hello right after opening
//    its stream gets in whatever the flood does.
//
// Keys are opaque stream identities (the session service's reactors).
// Thread safety: none; the session service calls it under its mutex.
#ifndef RLVR_LEARNER_HELLO_ADMISSION_H_
#define RLVR_LEARNER_HELLO_ADMISSION_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>

#include "absl/strings/string_view.h"

namespace rlvr::learner {

struct HelloAdmissionOptions {
  int max_awaiting = 64;  // learner.max_awaiting_hello (>= 1).
  int max_per_peer = 8;   // learner.max_awaiting_hello_per_peer (>= 1).
};

// The address part of a gRPC peer string: "ipv4:10.0.0.7:51234" ->
// "ipv4:10.0.0.7", "ipv6:[fd00::7]:51234" -> "ipv6:[fd00::7]"; anything else
// (unix sockets) is returned whole.
std::string PeerAddress(absl::string_view grpc_peer);

class HelloAdmission {
 public:
  using Key = const void*;

  struct Decision {
    bool admitted = false;
    // Admitted by displacing this stream (already removed from the pool;
    // the caller ends it). Null when nothing was displaced.
    Key displaced = nullptr;
    // Why it was refused: "peer_awaiting_hello" (its address holds
    // max_per_peer) or "awaiting_hello_full" (the pool is full and its
    // address holds as many as any other). Empty when admitted.
    std::string refusal;
  };

  explicit HelloAdmission(HelloAdmissionOptions options);

  // A new stream `key` from `peer_address` (PeerAddress of the call).
  Decision Admit(Key key, const std::string& peer_address);
  // The stream said Hello, was ended or displaced: no longer awaiting.
  // Unknown keys are ignored.
  void Remove(Key key);

  int awaiting() const { return static_cast<int>(peer_of_.size()); }
  int awaiting_from(const std::string& peer_address) const;
  const HelloAdmissionOptions& options() const { return options_; }

 private:
  const HelloAdmissionOptions options_;
  std::map<Key, std::string> peer_of_;
  // Per address, its awaiting streams in arrival order (oldest first).
  std::map<std::string, std::deque<Key>> by_peer_;
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_HELLO_ADMISSION_H_
