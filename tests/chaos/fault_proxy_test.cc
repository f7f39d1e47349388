// The proxy forwards a real gRPC service, and its faults reach the client.
#include "tests/chaos/fault_proxy.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include "common/net/grpc_util.h"
#include "rlvr/v1/status.grpc.pb.h"

namespace rlvr::testing {
namespace {

class Status final : public rlvr::v1::StatusService::Service {
  grpc::Status GetStatus(grpc::ServerContext*, const rlvr::v1::GetStatusRequest*,
                         rlvr::v1::LearnerStatus* out) override {
    out->set_step(++calls_);
    return grpc::Status::OK;
  }
  std::atomic<int> calls_{0};
};

grpc::Status Call(int port, int timeout_ms = 3000) {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 100);
  auto ch = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port),
                                      grpc::InsecureChannelCredentials(), args);
  auto stub = rlvr::v1::StatusService::NewStub(ch);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms));
  rlvr::v1::LearnerStatus out;
  return stub->GetStatus(&ctx, {}, &out);
}

TEST(FaultProxyTest, ForwardsRefusesAndRetargets) {
  Status s1, s2;
  auto a = StartGrpcServer({}, {&s1});
  auto b = StartGrpcServer({}, {&s2});
  ASSERT_TRUE(a.ok() && b.ok());
  auto proxy = FaultProxy::Start(a->port);
  ASSERT_TRUE(proxy.ok());
  EXPECT_TRUE(Call((*proxy)->port()).ok());
  EXPECT_GE((*proxy)->accepted(), 1);

  (*proxy)->SetRefuse(true);
  EXPECT_FALSE(Call((*proxy)->port(), 500).ok());
  (*proxy)->SetRefuse(false);

  a->server->Shutdown();
  (*proxy)->DropAll();
  (*proxy)->SetTarget(b->port);
  EXPECT_TRUE(Call((*proxy)->port()).ok());
  b->server->Shutdown();
}

TEST(FaultProxyTest, DropAllBreaksAnOpenStreamAndDelayIsApplied) {
  Status s;
  auto server = StartGrpcServer({}, {&s});
  ASSERT_TRUE(server.ok());
  auto proxy = FaultProxy::Start(server->port);
  ASSERT_TRUE(proxy.ok());
  grpc::ChannelArguments args;
  auto ch = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string((*proxy)->port()),
                                      grpc::InsecureChannelCredentials(), args);
  auto stub = rlvr::v1::StatusService::NewStub(ch);
  {
    grpc::ClientContext ctx;
    rlvr::v1::LearnerStatus out;
    ASSERT_TRUE(stub->GetStatus(&ctx, {}, &out).ok());
  }
  (*proxy)->DropAll();
  EXPECT_GE((*proxy)->dropped(), 1);
  {
    // A call racing the drop may fail UNAVAILABLE; the client then reconnects
    // through the proxy, as actors do.
    bool ok = false;
    for (int attempt = 0; attempt < 50 && !ok; ++attempt) {
      grpc::ClientContext ctx;
      ctx.set_wait_for_ready(true);
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
      rlvr::v1::LearnerStatus out;
      ok = stub->GetStatus(&ctx, {}, &out).ok();
    }
    EXPECT_TRUE(ok);
  }
  (*proxy)->SetDelayMs(300);
  grpc::ClientContext ctx;
  ctx.set_wait_for_ready(true);
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(100));
  rlvr::v1::LearnerStatus out;
  EXPECT_EQ(stub->GetStatus(&ctx, {}, &out).error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  (*proxy)->SetDelayMs(0);
  server->server->Shutdown();
}

}  // namespace
}  // namespace rlvr::testing
