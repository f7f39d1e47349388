#include "learner/diagnostics/update_diagnostics.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "learner/diagnostics/schema.h"
#include "rlvr/v1/status.pb.h"

namespace rlvr::learner {
namespace {

using diagnostics_internal::DiagnosticsSchema;
using diagnostics_internal::GetNumber;
using diagnostics_internal::Schema;
using diagnostics_internal::SetNumber;
using google::protobuf::FieldDescriptor;

bool IsInt(const FieldDescriptor* f) { return f->cpp_type() == FieldDescriptor::CPPTYPE_INT64; }

}  // namespace

void MergeDiagnostics(const UpdateDiagnostics& from, UpdateDiagnostics* into) {
  const Schema& s = DiagnosticsSchema();
  const google::protobuf::Reflection* r = into->GetReflection();
  for (const FieldDescriptor* f : s.sum) {
    if (IsInt(f)) {
      r->SetInt64(into, f, r->GetInt64(*into, f) + r->GetInt64(from, f));
    } else {
      r->SetDouble(into, f, r->GetDouble(*into, f) + r->GetDouble(from, f));
    }
  }
  for (const FieldDescriptor* f : s.max) {
    if (IsInt(f)) {
      r->SetInt64(into, f, std::max(r->GetInt64(*into, f), r->GetInt64(from, f)));
    } else {
      r->SetDouble(into, f, std::max(r->GetDouble(*into, f), r->GetDouble(from, f)));
    }
  }
}

PackedDiagnostics PackDiagnostics(const UpdateDiagnostics& diagnostics) {
  const Schema& s = DiagnosticsSchema();
  PackedDiagnostics p;
  p.sum.reserve(s.sum.size());
  p.max.reserve(s.max.size());
  for (const FieldDescriptor* f : s.sum) p.sum.push_back(GetNumber(diagnostics, f));
  for (const FieldDescriptor* f : s.max) p.max.push_back(GetNumber(diagnostics, f));
  return p;
}

absl::StatusOr<UpdateDiagnostics> UnpackDiagnostics(const PackedDiagnostics& packed) {
  const Schema& s = DiagnosticsSchema();
  if (packed.sum.size() != s.sum.size() || packed.max.size() != s.max.size()) {
    return absl::InvalidArgumentError(absl::StrCat("packed diagnostics have ", packed.sum.size(),
                                                   " + ", packed.max.size(), " values, want ",
                                                   s.sum.size(), " + ", s.max.size()));
  }
  UpdateDiagnostics d;
  for (size_t i = 0; i < s.sum.size(); ++i) SetNumber(&d, s.sum[i], packed.sum[i]);
  for (size_t i = 0; i < s.max.size(); ++i) SetNumber(&d, s.max[i], packed.max[i]);
  return d;
}

void FinalizeDiagnostics(UpdateDiagnostics* diagnostics) {
  for (const auto& d : DiagnosticsSchema().derived) {
    const double num = GetNumber(*diagnostics, d.numerator);
    const double den = GetNumber(*diagnostics, d.denominator);
    diagnostics->GetReflection()->SetDouble(diagnostics, d.field, den > 0 ? num / den : 0.0);
  }
}

double ClampDiagnostic(double value, bool* clamped) {
  if (std::isnan(value)) {
    *clamped = true;
    return kDiagnosticLimit;
  }
  if (value > kDiagnosticLimit || value < -kDiagnosticLimit) {
    *clamped = true;
    return value > 0 ? kDiagnosticLimit : -kDiagnosticLimit;
  }
  return value;
}

std::vector<std::string> ClampDiagnostics(UpdateDiagnostics* diagnostics) {
  std::vector<std::string> clamped;
  const google::protobuf::Reflection* r = diagnostics->GetReflection();
  for (const auto& j : DiagnosticsSchema().json) {
    if (IsInt(j.field)) continue;
    bool was_clamped = false;
    r->SetDouble(diagnostics, j.field,
                 ClampDiagnostic(r->GetDouble(*diagnostics, j.field), &was_clamped));
    if (was_clamped) clamped.push_back(j.name);
  }
  return clamped;
}

void DiagnosticsToJson(const UpdateDiagnostics& diagnostics, nlohmann::json* line) {
  const google::protobuf::Reflection* r = diagnostics.GetReflection();
  for (const auto& j : DiagnosticsSchema().json) {
    nlohmann::json& slot = j.subkey.empty() ? (*line)[j.key] : (*line)[j.key][j.subkey];
    if (IsInt(j.field)) {
      slot = r->GetInt64(diagnostics, j.field);
    } else {
      slot = r->GetDouble(diagnostics, j.field);
    }
  }
}

void DiagnosticsToStatus(const UpdateDiagnostics& diagnostics, rlvr::v1::LearnerStatus* status) {
  const google::protobuf::Reflection* to = status->GetReflection();
  for (const auto& s : DiagnosticsSchema().status) {
    to->SetDouble(status, s.status, GetNumber(diagnostics, s.field));
  }
}

}  // namespace rlvr::learner
