#include "tests/chaos/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

namespace rlvr::testing {
namespace {

int ConnectLoopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

bool WriteAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FaultProxy>> FaultProxy::Start(int target_port) {
  std::unique_ptr<FaultProxy> proxy(new FaultProxy());
  proxy->target_port_ = target_port;
  proxy->listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (proxy->listen_fd_ < 0) return absl::UnavailableError("socket() failed");
  int one = 1;
  ::setsockopt(proxy->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(proxy->listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(proxy->listen_fd_, 128) != 0 ||
      ::getsockname(proxy->listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return absl::UnavailableError("cannot listen on 127.0.0.1");
  }
  proxy->port_ = ntohs(addr.sin_port);
  proxy->acceptor_ = std::thread([p = proxy.get()] { p->AcceptLoop(); });
  return proxy;
}

FaultProxy::~FaultProxy() {
  stop_ = true;
  ::shutdown(listen_fd_, SHUT_RDWR);
  if (acceptor_.joinable()) acceptor_.join();
  ::close(listen_fd_);
  DropAll();
  std::vector<std::thread> pumps;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pumps.swap(pumps_);
  }
  for (auto& t : pumps) t.join();
}

void FaultProxy::DropAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto [a, b] : open_) {
    ::shutdown(a, SHUT_RDWR);
    ::shutdown(b, SHUT_RDWR);
    dropped_.fetch_add(1);
  }
  open_.clear();
}

void FaultProxy::AcceptLoop() {
  while (!stop_) {
    pollfd pfd{listen_fd_, POLLIN, 0};
    if (::poll(&pfd, 1, 100) <= 0) continue;
    int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    if (refuse_) {
      ::close(client);
      continue;
    }
    int server = ConnectLoopback(target_port_.load());
    if (server < 0) {
      ::close(client);
      continue;
    }
    accepted_.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
    open_.emplace_back(client, server);
    pumps_.emplace_back([this, client, server] { Pump(client, server); });
  }
}

void FaultProxy::Pump(int client_fd, int server_fd) {
  char buf[64 * 1024];
  pollfd pfds[2] = {{client_fd, POLLIN, 0}, {server_fd, POLLIN, 0}};
  while (!stop_) {
    int r = ::poll(pfds, 2, 100);
    if (r < 0) break;
    if (r == 0) continue;
    bool done = false;
    for (int i = 0; i < 2 && !done; ++i) {
      if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = ::recv(pfds[i].fd, buf, sizeof(buf), 0);
        if (n <= 0) {
          done = true;
          break;
        }
        if (int d = delay_ms_.load(); d > 0)
          std::this_thread::sleep_for(std::chrono::milliseconds(d));
        if (!WriteAll(pfds[1 - i].fd, buf, static_cast<size_t>(n))) done = true;
      }
    }
    if (done) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    open_.erase(std::remove(open_.begin(), open_.end(), std::make_pair(client_fd, server_fd)),
                open_.end());
  }
  ::shutdown(client_fd, SHUT_RDWR);
  ::shutdown(server_fd, SHUT_RDWR);
  ::close(client_fd);
  ::close(server_fd);
}

}  // namespace rlvr::testing
