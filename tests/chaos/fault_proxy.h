// A fault-injecting TCP proxy on loopback, for chaos tests: clients connect to
// port(); bytes are forwarded to the current target. Faults: drop every open
// connection now, add a delay to every forwarded chunk, refuse new
// connections, or point at a new target (a restarted server on a new port).
//
// Thread safety: all public methods are thread-safe. Owns its threads (one
// acceptor, one pump per connection); the destructor stops and joins them.
#ifndef RLVR_TESTS_CHAOS_FAULT_PROXY_H_
#define RLVR_TESTS_CHAOS_FAULT_PROXY_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"

namespace rlvr::testing {

class FaultProxy {
 public:
  // Listens on 127.0.0.1:0 and forwards to 127.0.0.1:target_port.
  static absl::StatusOr<std::unique_ptr<FaultProxy>> Start(int target_port);
  ~FaultProxy();

  int port() const { return port_; }
  // New connections go to this port from now on.
  void SetTarget(int target_port) { target_port_.store(target_port); }
  // Each forwarded chunk waits this long first (both directions).
  void SetDelayMs(int ms) { delay_ms_.store(ms); }
  // New connections are accepted and closed at once while true.
  void SetRefuse(bool refuse) { refuse_.store(refuse); }
  // Closes every open connection (both sides) now.
  void DropAll();
  // Connections accepted / dropped by DropAll so far.
  int accepted() const { return accepted_.load(); }
  int dropped() const { return dropped_.load(); }

 private:
  FaultProxy() = default;
  void AcceptLoop();
  void Pump(int client_fd, int server_fd);

  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<int> target_port_{0};
  std::atomic<int> delay_ms_{0};
  std::atomic<bool> refuse_{false};
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::atomic<int> dropped_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<std::thread> pumps_;         // Guarded by mu_.
  std::vector<std::pair<int, int>> open_;  // Guarded by mu_: live fd pairs.
};

}  // namespace rlvr::testing

#endif  // RLVR_TESTS_CHAOS_FAULT_PROXY_H_
