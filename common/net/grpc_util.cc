#include "common/net/grpc_util.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/health_check_service_interface.h>

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace rlvr {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

absl::StatusOr<StartedServer> StartGrpcServer(const GrpcServerOptions& options,
                                              const std::vector<grpc::Service*>& services) {
  static const bool kInit = [] {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    return true;
  }();
  (void)kInit;

  std::shared_ptr<grpc::ServerCredentials> creds;
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    grpc::SslServerCredentialsOptions ssl(
        options.tls_client_ca_file.empty()
            ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
            : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ASSIGN_OR_RETURN(std::string cert, ReadFileToString(options.tls_cert_file));
    ASSIGN_OR_RETURN(std::string key, ReadFileToString(options.tls_key_file));
    ssl.pem_key_cert_pairs.push_back({key, cert});
    if (!options.tls_client_ca_file.empty()) {
      ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadFileToString(options.tls_client_ca_file));
    }
    creds = grpc::SslServerCredentials(ssl);
  } else {
    creds = grpc::InsecureServerCredentials();
  }

  StartedServer out;
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.address, creds, &out.port);
  for (const std::string& extra : options.extra_addresses) builder.AddListeningPort(extra, creds);
  builder.SetMaxReceiveMessageSize(options.max_receive_bytes);
  builder.SetMaxSendMessageSize(64 << 20);
  if (options.keepalive_time_ms > 0) {
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, options.keepalive_time_ms);
    builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, options.keepalive_timeout_ms);
    // The server's own pings are not limited by data flow.
    builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  }
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                             options.min_client_ping_interval_ms);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, options.max_ping_strikes);
  if (!options.accept_compressed) {
    builder.AddChannelArgument(GRPC_COMPRESSION_CHANNEL_ENABLED_ALGORITHMS_BITSET,
                               1 << GRPC_COMPRESS_NONE);
  }
  for (grpc::Service* s : services) builder.RegisterService(s);
  out.server = builder.BuildAndStart();
  if (out.server == nullptr || out.port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot start gRPC server on ", options.address));
  }
  return out;
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeChannelCredentials(
    const std::string& ca_file, const std::string& cert_file, const std::string& key_file) {
  if (ca_file.empty() && cert_file.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  if (!ca_file.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadFileToString(ca_file));
  }
  if (!cert_file.empty()) {
    ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadFileToString(cert_file));
    ASSIGN_OR_RETURN(ssl.pem_private_key, ReadFileToString(key_file));
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace rlvr
