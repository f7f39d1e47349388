#include "common/net/auth.h"

#include "absl/strings/ascii.h"
#include "common/base/status_macros.h"
#include "common/net/grpc_util.h"

namespace rlvr {
namespace {

constexpr char kHeader[] = "authorization";
constexpr char kPrefix[] = "Bearer ";

// Equality whose running time does not depend on where the inputs differ.
bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < b.size(); ++i) {
    diff |= static_cast<unsigned char>(b[i] ^ (i < a.size() ? a[i] : 0));
  }
  return diff == 0;
}

}  // namespace

TokenChecker::TokenChecker(std::string token, prometheus::Registry* registry,
                           const std::string& service)
    : token_(std::move(token)) {
  if (registry != nullptr) {
    auto& family = prometheus::BuildCounter()
                       .Name("rlvr_auth_failures_total")
                       .Help("Calls refused for a missing or wrong bearer token.")
                       .Register(*registry);
    missing_ = &family.Add({{"service", service}, {"reason", "missing"}});
    wrong_ = &family.Add({{"service", service}, {"reason", "wrong"}});
  }
}

grpc::Status TokenChecker::Check(const grpc::ServerContextBase& context) const {
  if (token_.empty()) return grpc::Status::OK;
  const auto& md = context.client_metadata();
  auto it = md.find(kHeader);
  if (it == md.end()) {
    if (missing_) missing_->Increment();
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing bearer token");
  }
  std::string value(it->second.data(), it->second.size());
  std::string expected = std::string(kPrefix) + token_;
  if (!ConstantTimeEquals(value, expected)) {
    if (wrong_) wrong_->Increment();
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong bearer token");
  }
  return grpc::Status::OK;
}

void AttachToken(grpc::ClientContext* context, const std::string& token) {
  if (!token.empty()) context->AddMetadata(kHeader, std::string(kPrefix) + token);
}

absl::StatusOr<std::string> LoadToken(const std::string& path) {
  if (path.empty()) return std::string();
  ASSIGN_OR_RETURN(std::string token, ReadFileToString(path));
  absl::StripTrailingAsciiWhitespace(&token);
  if (token.empty()) return absl::InvalidArgumentError("token file '" + path + "' is empty");
  return token;
}

}  // namespace rlvr
