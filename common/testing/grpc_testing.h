// Client-side helpers for tests and probes: health checks and listing a
// server's services through gRPC server reflection.
#ifndef RLVR_COMMON_TESTING_GRPC_TESTING_H_
#define RLVR_COMMON_TESTING_GRPC_TESTING_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <set>
#include <string>

#include "absl/status/statusor.h"

namespace rlvr {

// Full names of the services a server exposes (grpc.reflection.v1alpha).
absl::StatusOr<std::set<std::string>> ListServicesByReflection(
    const std::shared_ptr<grpc::Channel>& channel);

// The grpc.health.v1 status of `service` ("" = whole server): "SERVING",
// "NOT_SERVING", ... or an error if the call fails within `timeout_s`.
absl::StatusOr<std::string> CheckHealth(const std::shared_ptr<grpc::Channel>& channel,
                                        const std::string& service, double timeout_s);

}  // namespace rlvr

#endif  // RLVR_COMMON_TESTING_GRPC_TESTING_H_
