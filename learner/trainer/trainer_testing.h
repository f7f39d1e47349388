// Test helpers for rlvr_trainer's tests (not part of the library).
#ifndef RLVR_LEARNER_TRAINER_TRAINER_TESTING_H_
#define RLVR_LEARNER_TRAINER_TRAINER_TESTING_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rlvr::learner::testing {

// A TCP port on 127.0.0.1 that was free a moment ago (bind to 0, read, close).
inline int PickFreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace rlvr::learner::testing

#endif  // RLVR_LEARNER_TRAINER_TRAINER_TESTING_H_
