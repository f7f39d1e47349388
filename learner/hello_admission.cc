#include "learner/hello_admission.h"

#include <algorithm>

#include "absl/strings/match.h"

namespace rlvr::learner {

std::string PeerAddress(absl::string_view peer) {
  if (absl::StartsWith(peer, "ipv6:[")) {
    const size_t end = peer.find(']');
    if (end != absl::string_view::npos) return std::string(peer.substr(0, end + 1));
  } else if (absl::StartsWith(peer, "ipv4:")) {
    const size_t colon = peer.rfind(':');
    if (colon > 4) return std::string(peer.substr(0, colon));
  }
  return std::string(peer);
}

HelloAdmission::HelloAdmission(HelloAdmissionOptions options) : options_(options) {}

int HelloAdmission::awaiting_from(const std::string& peer_address) const {
  auto it = by_peer_.find(peer_address);
  return it == by_peer_.end() ? 0 : static_cast<int>(it->second.size());
}

HelloAdmission::Decision HelloAdmission::Admit(Key key, const std::string& peer_address) {
  Decision d;
  const int mine = awaiting_from(peer_address);
  if (mine >= std::max(1, options_.max_per_peer)) {
    d.refusal = "peer_awaiting_hello";
    return d;
  }
  if (awaiting() >= std::max(1, options_.max_awaiting)) {
    // The address holding the most awaiting streams (the oldest such stream
    // on a tie) gives one up, if it holds more than this one's address.
    auto most = by_peer_.end();
    for (auto it = by_peer_.begin(); it != by_peer_.end(); ++it) {
      if (most == by_peer_.end() || it->second.size() > most->second.size()) most = it;
    }
    if (most == by_peer_.end() || static_cast<int>(most->second.size()) <= mine) {
      d.refusal = "awaiting_hello_full";
      return d;
    }
    d.displaced = most->second.front();
    Remove(d.displaced);
  }
  peer_of_[key] = peer_address;
  by_peer_[peer_address].push_back(key);
  d.admitted = true;
  return d;
}

void HelloAdmission::Remove(Key key) {
  auto it = peer_of_.find(key);
  if (it == peer_of_.end()) return;
  auto peer = by_peer_.find(it->second);
  if (peer != by_peer_.end()) {
    auto& q = peer->second;
    q.erase(std::remove(q.begin(), q.end(), key), q.end());
    if (q.empty()) by_peer_.erase(peer);
  }
  peer_of_.erase(it);
}

}  // namespace rlvr::learner
