// Starts a real gRPC server on 127.0.0.1:0 with an rlvr.v1 service and checks
// the standard health service and server reflection from a client.
#include "common/net/grpc_util.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <set>

#include "common/testing/grpc_testing.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "rlvr/v1/status.grpc.pb.h"

namespace rlvr {
namespace {

class FakeStatus final : public rlvr::v1::StatusService::Service {
  grpc::Status GetStatus(grpc::ServerContext*, const rlvr::v1::GetStatusRequest*,
                         rlvr::v1::LearnerStatus* out) override {
    out->set_step(3);
    return grpc::Status::OK;
  }
};

TEST(GrpcUtilTest, HealthServingAndReflectionListsRlvrServices) {
  FakeStatus service;
  auto started = StartGrpcServer({}, {&service});
  ASSERT_TRUE(started.ok()) << started.status();
  ASSERT_GT(started->port, 0);
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(started->port),
                                     grpc::InsecureChannelCredentials());

  auto health = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext hctx;
  grpc::health::v1::HealthCheckRequest hreq;
  grpc::health::v1::HealthCheckResponse hresp;
  ASSERT_TRUE(health->Check(&hctx, hreq, &hresp).ok());
  EXPECT_EQ(hresp.status(), grpc::health::v1::HealthCheckResponse::SERVING);

  auto names = ListServicesByReflection(channel);
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_TRUE(names->count("rlvr.v1.StatusService"));
  EXPECT_TRUE(names->count("grpc.health.v1.Health"));

  auto status = rlvr::v1::StatusService::NewStub(channel);
  grpc::ClientContext sctx;
  rlvr::v1::LearnerStatus st;
  ASSERT_TRUE(status->GetStatus(&sctx, {}, &st).ok());
  EXPECT_EQ(st.step(), 3u);
  started->server->Shutdown();
}

TEST(GrpcUtilTest, StatusConversionKeepsCodeAndMessage) {
  absl::Status s = absl::InvalidArgumentError("bad lease");
  grpc::Status g = ToGrpcStatus(s);
  EXPECT_EQ(g.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(g.error_message(), "bad lease");
  EXPECT_EQ(FromGrpcStatus(g), s);
}

}  // namespace
}  // namespace rlvr
