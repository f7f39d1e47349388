// Prometheus exposition for one process.
//
// Each process owns one prometheus::Registry, created in main and passed to
// the libraries that export metrics (never reached through a global).
// MetricsServer serves it on `/metrics` with a small HTTP/1.1 server of its
// own: prometheus-cpp's Exposer (civetweb) starts worker threads with ~100 KiB
// stacks, which cannot even be created in a process whose static TLS
// (OpenBLAS, glog, NCCL) is larger than that.
#ifndef RLVR_COMMON_METRICS_METRICS_H_
#define RLVR_COMMON_METRICS_METRICS_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace rlvr {

struct MetricsServerOptions {
  // Address to bind, e.g. "127.0.0.1" (tests, local runs) or "0.0.0.0" (pods).
  std::string bind_address = "127.0.0.1";
  // TCP port; 0 picks a free one (see port()).
  int port = 0;
};

// Thread safety: Start/destructor from one thread; serving runs on the
// server's own thread, which the destructor stops and joins.
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
  void Serve();
  void HandleConnection(int fd);

  std::shared_ptr<prometheus::Registry> registry_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Histogram bucket boundaries for durations in seconds, 1 ms .. ~100 s.
std::vector<double> SecondsBuckets();

// A family without labels registered in `registry` (once: a registry built
// with InsertBehavior::Throw refuses a second registration of `name`), and
// its one series. The series lives as long as the registry.
prometheus::Counter& UnlabelledCounter(prometheus::Registry& registry, const std::string& name,
                                       const std::string& help);
prometheus::Gauge& UnlabelledGauge(prometheus::Registry& registry, const std::string& name,
                                   const std::string& help);
prometheus::Histogram& UnlabelledHistogram(prometheus::Registry& registry, const std::string& name,
                                           const std::string& help, std::vector<double> buckets);

}  // namespace rlvr

#endif  // RLVR_COMMON_METRICS_METRICS_H_
