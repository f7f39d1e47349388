#include "learner/diagnostics/ingest_snapshot.h"

#include <glog/logging.h>
#include <google/protobuf/descriptor.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "rlvr/v1/status.pb.h"

namespace rlvr::learner {
namespace {

using google::protobuf::FieldDescriptor;

struct StatusField {
  const FieldDescriptor* field;
  const FieldDescriptor* status;  // Of LearnerStatus, the same C++ type.
};

struct DeltaField {
  const FieldDescriptor* field;  // A uint64.
  std::string key;               // Top-level key.
  std::string subkey;            // Key inside the object at `key`; empty: none.
};

struct IngestSchema {
  std::vector<StatusField> status;
  std::vector<DeltaField> deltas;
};

bool IsUnsigned(const FieldDescriptor* f) {
  return f != nullptr && !f->is_repeated() &&
         (f->cpp_type() == FieldDescriptor::CPPTYPE_UINT32 ||
          f->cpp_type() == FieldDescriptor::CPPTYPE_UINT64);
}

IngestSchema Build() {
  IngestSchema s;
  const google::protobuf::Descriptor* d = IngestSnapshot::descriptor();
  const google::protobuf::Descriptor* status = rlvr::v1::LearnerStatus::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    CHECK(IsUnsigned(f)) << "ingest.proto: " << f->name() << " is not a uint32 or uint64";
    const rlvr::v1::IngestFigureSpec& spec = f->options().GetExtension(rlvr::v1::ingest);
    if (!spec.status().empty()) {
      const FieldDescriptor* sf = status->FindFieldByName(spec.status());
      CHECK(IsUnsigned(sf) && sf->cpp_type() == f->cpp_type())
          << "ingest.proto: " << f->name() << " names status field '" << spec.status()
          << "', which is no field of rlvr.v1.LearnerStatus of type " << f->type_name();
      s.status.push_back({f, sf});
    }
    if (!spec.json_delta().empty()) {
      CHECK(f->cpp_type() == FieldDescriptor::CPPTYPE_UINT64)
          << "ingest.proto: " << f->name() << " has a json_delta but is no uint64 counter";
      DeltaField delta{f, spec.json_delta(), ""};
      if (size_t dot = delta.key.find('.'); dot != std::string::npos) {
        delta.subkey = delta.key.substr(dot + 1);
        delta.key.resize(dot);
      }
      s.deltas.push_back(std::move(delta));
    }
  }
  return s;
}

const IngestSchema& Schema() {
  static const IngestSchema* schema = new IngestSchema(Build());
  return *schema;
}

}  // namespace

void IngestToStatus(const IngestSnapshot& snapshot, rlvr::v1::LearnerStatus* status) {
  const google::protobuf::Reflection* from = snapshot.GetReflection();
  const google::protobuf::Reflection* to = status->GetReflection();
  for (const StatusField& s : Schema().status) {
    if (s.field->cpp_type() == FieldDescriptor::CPPTYPE_UINT32) {
      to->SetUInt32(status, s.status, from->GetUInt32(snapshot, s.field));
    } else {
      to->SetUInt64(status, s.status, from->GetUInt64(snapshot, s.field));
    }
  }
}

void IngestDeltasToJson(const IngestSnapshot& now, const IngestSnapshot& before,
                        nlohmann::json* line) {
  const google::protobuf::Reflection* r = now.GetReflection();
  for (const DeltaField& d : Schema().deltas) {
    nlohmann::json& slot = d.subkey.empty() ? (*line)[d.key] : (*line)[d.key][d.subkey];
    slot = r->GetUInt64(now, d.field) - r->GetUInt64(before, d.field);
  }
}

}  // namespace rlvr::learner
