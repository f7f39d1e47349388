#include "common/metrics.h"

#include <prometheus/exposer.h>

#include "absl/strings/str_cat.h"

namespace rlvr {

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(
    const MetricsServerOptions& options, std::shared_ptr<prometheus::Registry> registry) {
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  try {
    server->exposer_ = std::make_unique<prometheus::Exposer>(
        absl::StrCat(options.bind_address, ":", options.port), /*num_threads=*/1);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", options.bind_address,
                                               ":", options.port, ": ", e.what()));
  }
  server->exposer_->RegisterCollectable(registry);
  auto ports = server->exposer_->GetListeningPorts();
  server->port_ = ports.empty() ? options.port : ports.front();
  return server;
}

MetricsServer::~MetricsServer() = default;

std::vector<double> SecondsBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
          1.0,   2.5,    5.0,   10.0, 25.0,  50.0, 100.0};
}

}  // namespace rlvr
