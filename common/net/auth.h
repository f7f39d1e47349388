// Who may call an rlvr service: an optional shared bearer token, checked by
// each rlvr.v1 handler at the start of every call (health and reflection stay
// open so that Kubernetes probes work). Transport security (TLS, mutual TLS)
// is configured separately through GrpcServerOptions / MakeChannelCredentials.
//
// Thread safety: TokenChecker is immutable after construction and safe to
// share across threads; its counter is a thread-safe prometheus counter.
#ifndef RLVR_COMMON_NET_AUTH_H_
#define RLVR_COMMON_NET_AUTH_H_

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace rlvr {

class TokenChecker {
 public:
  // An empty `token` disables the check. `registry` (nullable) receives
  // rlvr_auth_failures_total{service}; `service` labels it ("learner", "actor").
  TokenChecker(std::string token, prometheus::Registry* registry, const std::string& service);

  // OK if the call carries "authorization: Bearer <token>" (or no token is
  // configured); UNAUTHENTICATED without the header or with a wrong token
  // (the caller is not authenticated; PERMISSION_DENIED would say that an
  // authenticated caller lacks a right). Comparison takes the same time
  // whatever the mismatch.
  grpc::Status Check(const grpc::ServerContextBase& context) const;

  bool enabled() const { return !token_.empty(); }

 private:
  std::string token_;
  prometheus::Counter* missing_ = nullptr;
  prometheus::Counter* wrong_ = nullptr;
};

// Adds the bearer token to an outgoing call (no-op for an empty token).
void AttachToken(grpc::ClientContext* context, const std::string& token);

// Reads a token from a file (trailing whitespace removed); "" for an empty path.
absl::StatusOr<std::string> LoadToken(const std::string& path);

}  // namespace rlvr

#endif  // RLVR_COMMON_NET_AUTH_H_
