#include "learner/diagnostics/schema.h"

#include <glog/logging.h>

#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
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
    const bool exported = spec.metric_kind() != rlvr::v1::DIAGNOSTIC_METRIC_NONE;
    // The defaults (the top of diagnostics.proto): a field exported to
    // Prometheus or the status is written to metrics.jsonl under its name;
    // its family is rlvr_learner_<name>; `status: true` names the
    // LearnerStatus field of its name.
    const std::string json = !spec.json().empty()        ? spec.json()
                             : exported || spec.status() ? f->name()
                                                         : "";
    if (!json.empty()) {
      JsonField j{f, json, json, ""};
      if (size_t dot = json.find('.'); dot != std::string::npos) {
        j.key = json.substr(0, dot);
        j.subkey = json.substr(dot + 1);
      }
      s.json.push_back(std::move(j));
    }
    if (spec.status()) {
      const FieldDescriptor* sf = status->FindFieldByName(f->name());
      CHECK(sf != nullptr && !sf->is_repeated() &&
            sf->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE)
          << "diagnostics.proto: " << f->name()
          << " has status: true, but rlvr.v1.LearnerStatus has no double field of that name";
      s.status.push_back({f, sf});
    }
    CHECK(exported || (spec.metric().empty() && spec.help().empty() && spec.label().empty()))
        << "diagnostics.proto: " << f->name() << " has a metric, help or label but no metric_kind";
    if (exported) {
      CHECK(!spec.help().empty()) << "diagnostics.proto: exported field " << f->name()
                                  << " needs a help";
      const std::string metric =
          spec.metric().empty() ? absl::StrCat("rlvr_learner_", f->name()) : spec.metric();
      auto [it, fresh] = help_of.emplace(metric, spec.help());
      CHECK(it->second == spec.help())
          << "diagnostics.proto: metric " << metric << " has two help texts";
      MetricField m{f, spec.metric_kind(), metric, spec.help(), "", ""};
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
