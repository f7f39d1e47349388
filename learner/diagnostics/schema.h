// The definition of UpdateDiagnostics (proto/rlvr/v1/diagnostics.proto) as
// read by reflection: its fields grouped by what is done with them. Built
// once, on the first call, from the descriptor and its `diagnostic` options,
// with the defaults of diagnostics.proto applied (a metric name, a JSON key
// and a status field left out), and checked; an inconsistent definition is a
// programming error and fatal (CHECK). Internal to learner/diagnostics/.
//
// Thread safety: DiagnosticsSchema() is safe to call from any thread; the
// result is immutable.
#ifndef RLVR_LEARNER_DIAGNOSTICS_SCHEMA_H_
#define RLVR_LEARNER_DIAGNOSTICS_SCHEMA_H_

#include <google/protobuf/descriptor.h>

#include <string>
#include <vector>

#include "rlvr/v1/diagnostics.pb.h"

namespace rlvr::learner::diagnostics_internal {

struct DerivedField {
  const google::protobuf::FieldDescriptor* field;
  const google::protobuf::FieldDescriptor* numerator;
  const google::protobuf::FieldDescriptor* denominator;
};

struct JsonField {
  const google::protobuf::FieldDescriptor* field;
  std::string name;    // "key" or "key.subkey" (the option, or the default).
  std::string key;     // Top-level key.
  std::string subkey;  // Key inside the object at `key`; empty: none.
};

struct StatusField {
  const google::protobuf::FieldDescriptor* field;
  const google::protobuf::FieldDescriptor* status;  // A double of LearnerStatus.
};

struct MetricField {
  const google::protobuf::FieldDescriptor* field;
  rlvr::v1::DiagnosticMetricKind kind;
  std::string name;
  std::string help;
  std::string label_name;  // Empty: no label.
  std::string label_value;
};

struct Schema {
  std::vector<const google::protobuf::FieldDescriptor*> sum;  // DIAGNOSTIC_REDUCE_SUM.
  std::vector<const google::protobuf::FieldDescriptor*> max;  // DIAGNOSTIC_REDUCE_MAX.
  std::vector<DerivedField> derived;
  std::vector<JsonField> json;
  std::vector<StatusField> status;
  std::vector<MetricField> metrics;
};

const Schema& DiagnosticsSchema();

// A numeric field (double or int64) of `m` as a double, and set from one
// (int64: rounded to nearest).
double GetNumber(const rlvr::v1::UpdateDiagnostics& m, const google::protobuf::FieldDescriptor* f);
void SetNumber(rlvr::v1::UpdateDiagnostics* m, const google::protobuf::FieldDescriptor* f,
               double value);

}  // namespace rlvr::learner::diagnostics_internal

#endif  // RLVR_LEARNER_DIAGNOSTICS_SCHEMA_H_
