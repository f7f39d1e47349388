#include "common/testing/grpc_testing.h"

#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/rpc_method.h>
#include <grpcpp/impl/codegen/sync_stream.h>

#include <chrono>

#include "common/net/grpc_util.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "rlvr/testing/reflection_wire.pb.h"

namespace rlvr {

absl::StatusOr<std::set<std::string>> ListServicesByReflection(
    const std::shared_ptr<grpc::Channel>& channel) {
  // The method path of the real reflection service, with wire-compatible
  // messages (see proto/rlvr/testing/reflection_wire.proto).
  grpc::internal::RpcMethod method("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                   grpc::internal::RpcMethod::BIDI_STREAMING, channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  std::unique_ptr<
      grpc::ClientReaderWriter<rlvr::testing::ReflectionRequest, rlvr::testing::ReflectionResponse>>
      stream(grpc::internal::ClientReaderWriterFactory<
             rlvr::testing::ReflectionRequest,
             rlvr::testing::ReflectionResponse>::Create(channel.get(), method, &ctx));
  rlvr::testing::ReflectionRequest req;
  req.set_list_services("*");
  if (!stream->Write(req)) return FromGrpcStatus(stream->Finish());
  stream->WritesDone();
  rlvr::testing::ReflectionResponse resp;
  std::set<std::string> names;
  while (stream->Read(&resp)) {
    for (const auto& s : resp.list_services_response().service()) names.insert(s.name());
  }
  grpc::Status st = stream->Finish();
  if (!st.ok()) return FromGrpcStatus(st);
  return names;
}

absl::StatusOr<std::string> CheckHealth(const std::shared_ptr<grpc::Channel>& channel,
                                        const std::string& service, double timeout_s) {
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)));
  grpc::health::v1::HealthCheckRequest req;
  req.set_service(service);
  grpc::health::v1::HealthCheckResponse resp;
  grpc::Status st = stub->Check(&ctx, req, &resp);
  if (!st.ok()) return FromGrpcStatus(st);
  return grpc::health::v1::HealthCheckResponse::ServingStatus_Name(resp.status());
}

}  // namespace rlvr
