// Prometheus exposition for one process.
//
// Each process owns one prometheus::Registry, created in main and passed to
// the libraries that export metrics (never reached through a global).
// MetricsServer serves it on `/metrics`.
#ifndef RLVR_COMMON_METRICS_H_
#define RLVR_COMMON_METRICS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prometheus/registry.h"

namespace prometheus {
class Exposer;
}

namespace rlvr {

struct MetricsServerOptions {
  // Address to bind, e.g. "127.0.0.1" (tests, local runs) or "0.0.0.0" (pods).
  std::string bind_address = "127.0.0.1";
  // TCP port; 0 picks a free one (see port()).
  int port = 0;
};

class MetricsServer {
 public:
  // Starts serving `registry` on http://bind_address:port/metrics. Fails with
  // UNAVAILABLE if the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(
      const MetricsServerOptions& options, std::shared_ptr<prometheus::Registry> registry);
  ~MetricsServer();

  // The bound port.
  int port() const { return port_; }

 private:
  MetricsServer() = default;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
};

// Histogram bucket boundaries for durations in seconds, 1 ms .. ~100 s.
std::vector<double> SecondsBuckets();

}  // namespace rlvr

#endif  // RLVR_COMMON_METRICS_H_
