#include "learner/diagnostics/update_metrics.h"

#include <glog/logging.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/metrics/metrics.h"
#include "learner/diagnostics/schema.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace rlvr::learner {
namespace {

using diagnostics_internal::DiagnosticsSchema;
using diagnostics_internal::GetNumber;

prometheus::Gauge* Gauge(prometheus::Registry& r, const std::string& name,
                         const std::string& help) {
  return &prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

prometheus::Histogram* SecondsHistogram(prometheus::Registry& r, const std::string& name,
                                        const std::string& help) {
  return &prometheus::BuildHistogram().Name(name).Help(help).Register(r).Add(
      {}, prometheus::Histogram::BucketBoundaries(SecondsBuckets()));
}

}  // namespace

UpdateMetrics::UpdateMetrics(prometheus::Registry& r) {
  step_ = Gauge(r, "rlvr_learner_step", "Learner updates completed.");
  world_size_ = Gauge(r, "rlvr_learner_world_size", "Data-parallel world size.");
  last_step_timestamp_ =
      Gauge(r, "rlvr_learner_last_step_timestamp_seconds", "Unix time of the last update.");
  step_seconds_ = SecondsHistogram(r, "rlvr_learner_step_seconds", "Update wall time.");
  checkpoint_seconds_ =
      SecondsHistogram(r, "rlvr_learner_checkpoint_seconds", "Checkpoint write time.");
  clamped_ = &prometheus::BuildCounter()
                  .Name("rlvr_learner_diagnostics_clamped_total")
                  .Help(
                      "Update diagnostics published clamped (not finite or beyond 1e30), by "
                      "name.")
                  .Register(r);
  // The exported diagnostics: one family per metric name (fields of one
  // labelled family share it), registered here once.
  std::vector<std::pair<std::string, prometheus::Family<prometheus::Gauge>*>> gauge_families;
  for (const auto& m : DiagnosticsSchema().metrics) {
    prometheus::Labels labels;
    if (!m.label_name.empty()) labels[m.label_name] = m.label_value;
    if (m.kind == rlvr::v1::DIAGNOSTIC_METRIC_GAUGE) {
      prometheus::Family<prometheus::Gauge>* family = nullptr;
      for (auto& [name, f] : gauge_families) {
        if (name == m.name) family = f;
      }
      if (family == nullptr) {
        family = &prometheus::BuildGauge().Name(m.name).Help(m.help).Register(r);
        gauge_families.emplace_back(m.name, family);
      }
      exported_.push_back({m.field, &family->Add(labels), nullptr});
    } else {
      prometheus::Family<prometheus::Counter>* family = nullptr;
      for (auto& [name, f] : counter_families_) {
        if (name == m.name) family = f;
      }
      if (family == nullptr) {
        family = &prometheus::BuildCounter().Name(m.name).Help(m.help).Register(r);
        counter_families_.emplace_back(m.name, family);
      }
      exported_.push_back({m.field, nullptr, &family->Add(labels)});
    }
  }
}

void UpdateMetrics::RecordUpdate(uint64_t step, const UpdateDiagnostics& diagnostics,
                                 double step_seconds) {
  UpdateDiagnostics published = diagnostics;
  for (const std::string& name : ClampDiagnostics(&published)) {
    clamped_->Add({{"name", name}}).Increment();
  }
  step_->Set(static_cast<double>(step));
  for (const Exported& e : exported_) {
    const double value = GetNumber(published, e.field);
    if (e.gauge != nullptr) {
      e.gauge->Set(value);
    } else {
      e.counter->Increment(value);
    }
  }
  step_seconds_->Observe(step_seconds);
  last_step_timestamp_->Set(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
}

void UpdateMetrics::SetStep(uint64_t step) { step_->Set(static_cast<double>(step)); }

void UpdateMetrics::SetWorldSize(int world_size) {
  world_size_->Set(static_cast<double>(world_size));
}

void UpdateMetrics::ObserveCheckpointSeconds(double seconds) {
  checkpoint_seconds_->Observe(seconds);
}

prometheus::Family<prometheus::Counter>& UpdateMetrics::CounterFamily(
    const std::string& name) const {
  prometheus::Family<prometheus::Counter>* found = nullptr;
  for (const auto& [n, family] : counter_families_) {
    if (n == name) found = family;
  }
  CHECK(found != nullptr) << "UpdateMetrics: no counter family " << name;
  return *found;
}

}  // namespace rlvr::learner
