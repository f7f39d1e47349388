// Security end to end on 127.0.0.1: a throwaway CA and certificates are made
// with openssl at test time; a real server (TLS, mutual TLS, bearer token) is
// called by good and bad clients.
#include "common/net/auth.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "common/net/grpc_util.h"
#include "rlvr/v1/status.grpc.pb.h"

namespace rlvr {
namespace {

class GuardedStatus final : public rlvr::v1::StatusService::Service {
 public:
  explicit GuardedStatus(const TokenChecker* checker) : checker_(checker) {}
  grpc::Status GetStatus(grpc::ServerContext* ctx, const rlvr::v1::GetStatusRequest*,
                         rlvr::v1::LearnerStatus* out) override {
    if (grpc::Status s = checker_->Check(*ctx); !s.ok()) return s;
    out->set_step(42);
    return grpc::Status::OK;
  }

 private:
  const TokenChecker* checker_;
};

class AuthTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One directory per process: ctest runs these tests in parallel processes.
    dir_ = new std::string(testing::TempDir() + "/rlvr_auth_pki_" + std::to_string(::getpid()));
    std::filesystem::remove_all(*dir_);
    std::filesystem::create_directories(*dir_);
    // Two CAs; server cert for 127.0.0.1/localhost from CA "a"; client certs
    // from CA "a" (trusted) and CA "b" (not trusted).
    std::string script = "set -e; cd '" + *dir_ + "'\n" + R"(
mk_ca() { openssl req -x509 -newkey rsa:2048 -nodes -keyout $1.key -out $1.crt -days 2 -subj /CN=$1 >/dev/null 2>&1; }
mk_leaf() {
  openssl req -newkey rsa:2048 -nodes -keyout $1.key -out $1.csr -subj /CN=$1 >/dev/null 2>&1
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n' > $1.ext
  openssl x509 -req -in $1.csr -CA $2.crt -CAkey $2.key -CAcreateserial -out $1.crt -days 2 -extfile $1.ext >/dev/null 2>&1
}
mk_ca ca_a; mk_ca ca_b
mk_leaf server ca_a; mk_leaf client_good ca_a; mk_leaf client_other ca_b
)";
    ASSERT_EQ(std::system(("bash -c \"$(cat <<'EOS'\n" + script + "\nEOS\n)\"").c_str()), 0);
  }
  static std::string P(const std::string& f) { return *dir_ + "/" + f; }

  absl::StatusOr<StartedServer> Start(bool mutual, const TokenChecker* checker) {
    service_ = std::make_unique<GuardedStatus>(checker);
    GrpcServerOptions o;
    o.tls_cert_file = P("server.crt");
    o.tls_key_file = P("server.key");
    if (mutual) o.tls_client_ca_file = P("ca_a.crt");
    return StartGrpcServer(o, {service_.get()});
  }

  static grpc::Status Call(int port, std::shared_ptr<grpc::ChannelCredentials> creds,
                           const std::string& token = "") {
    grpc::ChannelArguments args;
    auto channel = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(port), creds, args);
    auto stub = rlvr::v1::StatusService::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    AttachToken(&ctx, token);
    rlvr::v1::LearnerStatus out;
    return stub->GetStatus(&ctx, {}, &out);
  }

  static std::string* dir_;
  std::unique_ptr<GuardedStatus> service_;
};
std::string* AuthTest::dir_ = nullptr;

TEST_F(AuthTest, TlsServerAcceptsTrustingClientAndRefusesPlaintext) {
  TokenChecker none("", nullptr, "test");
  auto server = Start(/*mutual=*/false, &none);
  ASSERT_TRUE(server.ok()) << server.status();
  auto good = MakeChannelCredentials(P("ca_a.crt"), "", "");
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(Call(server->port, *good).ok());
  EXPECT_FALSE(Call(server->port, grpc::InsecureChannelCredentials()).ok());
  auto wrong_ca = MakeChannelCredentials(P("ca_b.crt"), "", "");
  EXPECT_FALSE(Call(server->port, *wrong_ca).ok());
  server->server->Shutdown();
}

TEST_F(AuthTest, MutualTlsRefusesMissingOrForeignClientCertificates) {
  TokenChecker none("", nullptr, "test");
  auto server = Start(/*mutual=*/true, &none);
  ASSERT_TRUE(server.ok()) << server.status();
  auto good = MakeChannelCredentials(P("ca_a.crt"), P("client_good.crt"), P("client_good.key"));
  ASSERT_TRUE(good.ok());
  EXPECT_TRUE(Call(server->port, *good).ok());
  auto no_cert = MakeChannelCredentials(P("ca_a.crt"), "", "");
  grpc::Status s = Call(server->port, *no_cert);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  auto foreign =
      MakeChannelCredentials(P("ca_a.crt"), P("client_other.crt"), P("client_other.key"));
  EXPECT_EQ(Call(server->port, *foreign).error_code(), grpc::StatusCode::UNAVAILABLE);
  server->server->Shutdown();
}

TEST_F(AuthTest, BearerTokenIsCheckedOnEveryCallAndCounted) {
  auto registry = std::make_shared<prometheus::Registry>();
  TokenChecker checker("s3cret", registry.get(), "test");
  auto server = Start(/*mutual=*/false, &checker);
  ASSERT_TRUE(server.ok());
  auto creds = MakeChannelCredentials(P("ca_a.crt"), "", "");
  EXPECT_TRUE(Call(server->port, *creds, "s3cret").ok());
  EXPECT_EQ(Call(server->port, *creds).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Call(server->port, *creds, "s3creT").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(Call(server->port, *creds, "s3cret-and-more").error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
  double missing = 0, wrong = 0;
  for (const auto& fam : registry->Collect()) {
    if (fam.name != "rlvr_auth_failures_total") continue;
    for (const auto& m : fam.metric) {
      for (const auto& l : m.label) {
        if (l.name == "reason" && l.value == "missing") missing = m.counter.value;
        if (l.name == "reason" && l.value == "wrong") wrong = m.counter.value;
      }
    }
  }
  EXPECT_EQ(missing, 1);
  EXPECT_EQ(wrong, 2);
  server->server->Shutdown();
}

TEST(TokenFileTest, LoadsAndTrimsAndRejectsEmpty) {
  std::string p = testing::TempDir() + "/token.txt";
  {
    FILE* f = fopen(p.c_str(), "w");
    fputs("abc\n", f);
    fclose(f);
  }
  EXPECT_EQ(*LoadToken(p), "abc");
  {
    FILE* f = fopen(p.c_str(), "w");
    fputs("\n", f);
    fclose(f);
  }
  EXPECT_FALSE(LoadToken(p).ok());
  EXPECT_EQ(*LoadToken(""), "");
}

}  // namespace
}  // namespace rlvr
