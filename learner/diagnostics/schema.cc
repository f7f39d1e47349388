#include "learner/diagnostics/schema.h"

#include <glog/logging.h>

#include <cmath>
#include <map>

#include "rlvr/v1/status.pb.h"

namespace rlvr::learner::diagnostics_internal {
namespace {

using google::protobuf::FieldDescriptor;

bool IsNumber(const FieldDescriptor* f) {
  return f != nullptr && !f->is_repeated() &&
         (f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE ||
          f->cpp_type() == FieldDescriptor::CPPTYPE_INT64);
}

const FieldDescriptor* Named(const google::protobuf::Descriptor* d, const std::string& name,
                             const FieldDescriptor* user) {
  const FieldDescriptor* f = d->FindFieldByName(name);
  CHECK(IsNumber(f)) << "diagnostics.proto: " << user->name() << " names '" << name
                     << "', which is no double or int64 field of " << d->full_name();
  return f;
}

Schema Build() {
  Schema s;
  const google::protobuf::Descriptor* d = rlvr::v1::UpdateDiagnostics::descriptor();
  const google::protobuf::Descriptor* status = rlvr::v1::LearnerStatus::descriptor();
  std::map<std::string, std::string> help_of;  // Metric family -> help.
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    CHECK(IsNumber(f)) << "diagnostics.proto: " << f->name() << " is not a double or int64";
    const rlvr::v1::DiagnosticSpec& spec = f->options().GetExtension(rlvr::v1::diagnostic);
    const bool derived = !spec.numerator().empty() || !spec.denominator().empty();
    switch (spec.reduce()) {
      case rlvr::v1::DIAGNOSTIC_REDUCE_SUM:
        s.sum.push_back(f);
        break;
      case rlvr::v1::DIAGNOSTIC_REDUCE_MAX:
        s.max.push_back(f);
        break;
      default:
        break;
    }
    if (derived) {
      CHECK(spec.reduce() == rlvr::v1::DIAGNOSTIC_REDUCE_NONE)
          << "diagnostics.proto: derived field " << f->name() << " must not be reduced";
      CHECK(f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE)
          << "diagnostics.proto: derived field " << f->name() << " must be a double";
      s.derived.push_back({f, Named(d, spec.numerator(), f), Named(d, spec.denominator(), f)});
    }
    if (!spec.json().empty()) {
      JsonField j{f, spec.json(), spec.json(), ""};
      if (size_t dot = spec.json().find('.'); dot != std::string::npos) {
        j.key = spec.json().substr(0, dot);
        j.subkey = spec.json().substr(dot + 1);
      }
      s.json.push_back(std::move(j));
    }
    if (!spec.status().empty()) {
      const FieldDescriptor* sf = status->FindFieldByName(spec.status());
      CHECK(sf != nullptr && !sf->is_repeated() &&
            sf->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE)
          << "diagnostics.proto: " << f->name() << " names status field '" << spec.status()
          << "', which is no double field of rlvr.v1.LearnerStatus";
      s.status.push_back({f, sf});
    }
    if (spec.metric_kind() != rlvr::v1::DIAGNOSTIC_METRIC_NONE) {
      CHECK(!spec.metric().empty() && !spec.help().empty())
          << "diagnostics.proto: exported field " << f->name() << " needs a metric and a help";
      auto [it, fresh] = help_of.emplace(spec.metric(), spec.help());
      CHECK(it->second == spec.help())
          << "diagnostics.proto: metric " << spec.metric() << " has two help texts";
      MetricField m{f, spec.metric_kind(), spec.metric(), spec.help(), "", ""};
      if (!spec.label().empty()) {
        const size_t eq = spec.label().find('=');
        CHECK(eq != std::string::npos && eq > 0)
            << "diagnostics.proto: label of " << f->name() << " is not name=value";
        m.label_name = spec.label().substr(0, eq);
        m.label_value = spec.label().substr(eq + 1);
      }
      s.metrics.push_back(std::move(m));
    }
  }
  return s;
}

}  // namespace

const Schema& DiagnosticsSchema() {
  static const Schema* schema = new Schema(Build());
  return *schema;
}

double GetNumber(const rlvr::v1::UpdateDiagnostics& m, const FieldDescriptor* f) {
  const google::protobuf::Reflection* r = m.GetReflection();
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
    return static_cast<double>(r->GetInt64(m, f));
  }
  return r->GetDouble(m, f);
}

void SetNumber(rlvr::v1::UpdateDiagnostics* m, const FieldDescriptor* f, double value) {
  const google::protobuf::Reflection* r = m->GetReflection();
  if (f->cpp_type() == FieldDescriptor::CPPTYPE_INT64) {
    r->SetInt64(m, f, static_cast<int64_t>(std::llround(value)));
  } else {
    r->SetDouble(m, f, value);
  }
}

}  // namespace rlvr::learner::diagnostics_internal
