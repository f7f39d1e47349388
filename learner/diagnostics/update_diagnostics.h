// The generic operations on an update's diagnostics, driven by the one
// definition, proto/rlvr/v1/diagnostics.proto: every field's `diagnostic`
// option says how it combines over micro-batches and ranks, how a derived
// mean is computed, and where it is published. Nothing here names a field.
//
// Life of an update's diagnostics (the trainer's job): each micro-batch
// writes its raw sums into a message, MergeDiagnostics adds them up over
// micro-batches and optimizer steps, PackDiagnostics / UnpackDiagnostics carry
// the raw fields through a sum and a max all-reduce across ranks, the trainer
// sets the once-per-update fields, and FinalizeDiagnostics fills the derived
// means. Publishing: ClampDiagnostics, then DiagnosticsToJson (metrics.jsonl),
// DiagnosticsToStatus (GetStatus) and UpdateMetrics (update_metrics.h).
//
// The definition is read once, at the first call, and checked (a numerator
// that names no field, a status field that does not exist: a programming
// error, fatal). Thread safety: thread-compatible; the functions are pure
// (the cached definition is immutable).
#ifndef RLVR_LEARNER_DIAGNOSTICS_UPDATE_DIAGNOSTICS_H_
#define RLVR_LEARNER_DIAGNOSTICS_UPDATE_DIAGNOSTICS_H_

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "rlvr/v1/diagnostics.pb.h"

namespace rlvr::v1 {
class LearnerStatus;
}  // namespace rlvr::v1

namespace rlvr::learner {

using rlvr::v1::UpdateDiagnostics;

// Adds `from`'s raw fields into `*into` (DIAGNOSTIC_REDUCE_SUM: sum, _MAX:
// max). Fields that are not reduced are left as they are in `*into`.
void MergeDiagnostics(const UpdateDiagnostics& from, UpdateDiagnostics* into);

// The reduced fields as doubles, for a transport between ranks: `sum` to be
// combined by an elementwise sum, `max` by an elementwise max. Same layout on
// every rank (definition order).
struct PackedDiagnostics {
  std::vector<double> sum;
  std::vector<double> max;
};
PackedDiagnostics PackDiagnostics(const UpdateDiagnostics& diagnostics);
// The reduced fields back (integers rounded); the other fields are zero.
// InvalidArgument on vectors of the wrong sizes.
absl::StatusOr<UpdateDiagnostics> UnpackDiagnostics(const PackedDiagnostics& packed);

// Fills every derived field: numerator / denominator, 0 where the
// denominator is 0.
void FinalizeDiagnostics(UpdateDiagnostics* diagnostics);

// Diagnostics are published (Prometheus, metrics.jsonl, GetStatus) within
// +-kDiagnosticLimit: an extreme but valid input (a behaviour log-prob of
// -1e30) can make the KL and the ratio +Inf, which Prometheus shows as +Inf
// and JSON cannot hold (null).
inline constexpr double kDiagnosticLimit = 1e30;

// `value` if finite and within +-kDiagnosticLimit; else clamped to the
// limit (NaN to +limit) with *clamped set to true.
double ClampDiagnostic(double value, bool* clamped);

// Clamps every published double field (one with a JSON key) with
// ClampDiagnostic; returns the JSON keys of the clamped ones, in definition
// order.
std::vector<std::string> ClampDiagnostics(UpdateDiagnostics* diagnostics);

// Writes every field with a JSON key into `*line` (integers as integers,
// "a.b" into the object at "a").
void DiagnosticsToJson(const UpdateDiagnostics& diagnostics, nlohmann::json* line);

// Sets every LearnerStatus field named by a `status` option.
void DiagnosticsToStatus(const UpdateDiagnostics& diagnostics, rlvr::v1::LearnerStatus* status);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_DIAGNOSTICS_UPDATE_DIAGNOSTICS_H_
