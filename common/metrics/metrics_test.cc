// The /metrics endpoint over a real loopback socket.
#include "common/metrics/metrics.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "prometheus/counter.h"

namespace rlvr {
namespace {

using ::testing::HasSubstr;

std::string Get(int port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ::send(fd, request.data(), request.size(), 0);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

TEST(MetricsServerTest, ServesTheRegistryInTextFormat) {
  auto registry = std::make_shared<prometheus::Registry>();
  auto& family =
      prometheus::BuildCounter().Name("rlvr_test_total").Help("A test.").Register(*registry);
  family.Add({}).Increment(3);
  auto server = MetricsServer::Start({}, registry);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  std::string resp = Get((*server)->port(), "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_THAT(resp, HasSubstr("HTTP/1.1 200 OK"));
  EXPECT_THAT(resp, HasSubstr("text/plain; version=0.0.4"));
  EXPECT_THAT(resp, HasSubstr("# TYPE rlvr_test_total counter"));
  EXPECT_THAT(resp, HasSubstr("rlvr_test_total 3"));
  EXPECT_THAT(Get((*server)->port(), "GET / HTTP/1.1\r\n\r\n"), HasSubstr("404"));
  EXPECT_THAT(Get((*server)->port(), "POST /metrics HTTP/1.1\r\n\r\n"), HasSubstr("405"));
}

TEST(MetricsServerTest, BusyPortIsAnError) {
  auto registry = std::make_shared<prometheus::Registry>();
  auto first = MetricsServer::Start({}, registry);
  ASSERT_TRUE(first.ok());
  MetricsServerOptions o;
  o.port = (*first)->port();
  EXPECT_EQ(MetricsServer::Start(o, registry).status().code(), absl::StatusCode::kUnavailable);
  o.bind_address = "not-an-ip";
  EXPECT_EQ(MetricsServer::Start(o, registry).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace rlvr
