// The one place where absl::Status and grpc::Status meet, and the standard
// server set-up every rlvr gRPC server uses (health service, reflection,
// message size limits, port 0 support).
#ifndef RLVR_COMMON_NET_GRPC_UTIL_H_
#define RLVR_COMMON_NET_GRPC_UTIL_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/base/file_io.h"  // ReadFileToString, used by the TLS and token loaders.

namespace rlvr {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

struct GrpcServerOptions {
  // "127.0.0.1:0" picks a free loopback port; pods use "0.0.0.0:PORT".
  std::string address = "127.0.0.1:0";
  // Further addresses served the same way (e.g. "unix:/path" in tests that
  // need clients with distinct peer addresses on one host).
  std::vector<std::string> extra_addresses;
  // Largest message accepted, bytes.
  int max_receive_bytes = 64 << 20;
  // TLS: PEM file paths. Empty cert/key means plaintext.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Non-empty: require client certificates signed by this CA (mutual TLS).
  std::string tls_client_ca_file;

  // Connection liveness (docs/reliability.md, "Integrating your own actor").
  // The server pings a connection silent for keepalive_time_ms and closes it
  // when the ping is not acknowledged within keepalive_timeout_ms (a stopped
  // or vanished peer). <= 0 disables the server's own pings.
  int keepalive_time_ms = 30000;
  int keepalive_timeout_ms = 10000;
  // Enforcement of the client's pings: pings without calls are permitted,
  // and a client may ping every min_client_ping_interval_ms while no data
  // flows (10 s keepalive, the usual setting of Node, Go and Java clients,
  // is accepted); a client pinging faster gets max_ping_strikes strikes, then
  // GOAWAY too_many_pings.
  int min_client_ping_interval_ms = 5000;
  int max_ping_strikes = 2;
  // rlvr never compresses. False: only the identity encoding is enabled, so
  // a compressed message is refused before it is inflated (no decompression
  // bomb can allocate beyond the transport's receive limit).
  bool accept_compressed = false;
};

// A started server with the health service and reflection registered.
struct StartedServer {
  std::unique_ptr<grpc::Server> server;
  int port = 0;  // The bound port.
};

// Builds and starts a server for `services` (not owned; must outlive the
// server). Health (grpc.health.v1) starts as SERVING for the overall service
// "" unless the caller changes it through server->GetHealthCheckService().
absl::StatusOr<StartedServer> StartGrpcServer(const GrpcServerOptions& options,
                                              const std::vector<grpc::Service*>& services);

// Plaintext or TLS client credentials; with TLS, `ca_file` verifies the server
// and cert/key (optional) present a client certificate.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const std::string& ca_file, const std::string& cert_file, const std::string& key_file);

}  // namespace rlvr

#endif  // RLVR_COMMON_NET_GRPC_UTIL_H_
