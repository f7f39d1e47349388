#include "learner/diagnostics/ingest_snapshot.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "learner/diagnostics/update_diagnostics.h"
#include "rlvr/v1/status.pb.h"

namespace rlvr::learner {
namespace {

using google::protobuf::FieldDescriptor;

// Every field set to 1000 + its number (`plus` added), by reflection.
IngestSnapshot Numbered(uint64_t plus = 0) {
  IngestSnapshot s;
  const google::protobuf::Reflection* r = s.GetReflection();
  const google::protobuf::Descriptor* d = s.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const uint64_t v = 1000 + static_cast<uint64_t>(f->number()) + plus;
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_UINT32) {
      r->SetUInt32(&s, f, static_cast<uint32_t>(v));
    } else {
      r->SetUInt64(&s, f, v);
    }
  }
  return s;
}

// The names of the LearnerStatus fields that are set.
std::set<std::string> SetFields(const rlvr::v1::LearnerStatus& s) {
  std::vector<const FieldDescriptor*> fields;
  s.GetReflection()->ListFields(s, &fields);
  std::set<std::string> names;
  for (const FieldDescriptor* f : fields) names.insert(f->name());
  return names;
}

// Every `status` option names a LearnerStatus field of the same type, no
// two name the same one, and none is a field the update diagnostics fill.
TEST(IngestSnapshotTest, StatusOptionsNameDistinctLearnerStatusFields) {
  const google::protobuf::Descriptor* d = IngestSnapshot::descriptor();
  const google::protobuf::Descriptor* status = rlvr::v1::LearnerStatus::descriptor();
  std::set<std::string> seen;  // Diagnostics' `status: true` fill the field of their name.
  const google::protobuf::Descriptor* diagnostics = UpdateDiagnostics::descriptor();
  for (int i = 0; i < diagnostics->field_count(); ++i) {
    const FieldDescriptor* f = diagnostics->field(i);
    if (f->options().GetExtension(rlvr::v1::diagnostic).status()) seen.insert(f->name());
  }
  const size_t by_diagnostics = seen.size();
  ASSERT_GT(by_diagnostics, 0u);
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const std::string& name = f->options().GetExtension(rlvr::v1::ingest).status();
    if (name.empty()) continue;
    SCOPED_TRACE(f->name());
    const FieldDescriptor* sf = status->FindFieldByName(name);
    ASSERT_NE(sf, nullptr) << name;
    EXPECT_EQ(sf->cpp_type(), f->cpp_type());
    EXPECT_TRUE(seen.insert(name).second) << name << " filled twice";
  }
  EXPECT_EQ(seen.size() - by_diagnostics, 10u);
}

// The status fields the ingest fills are a contract (GetStatus clients):
// pinned here, with the figure each one shows.
TEST(IngestSnapshotTest, StatusFieldsAreTheContract) {
  const IngestSnapshot in = Numbered();
  rlvr::v1::LearnerStatus s;
  s.set_step(9);
  IngestToStatus(in, &s);
  EXPECT_EQ(SetFields(s),
            (std::set<std::string>{"step", "actors_connected", "buffer_groups", "buffer_capacity",
                                   "leases_outstanding", "groups_accepted", "groups_rejected",
                                   "leases_reissued", "epoch", "cursor", "policy_version"}));
  EXPECT_EQ(s.step(), 9u);
  EXPECT_EQ(s.actors_connected(), in.sessions());
  EXPECT_EQ(s.buffer_groups(), in.buffer_groups());
  EXPECT_EQ(s.buffer_capacity(), in.buffer_capacity());
  EXPECT_EQ(s.leases_outstanding(), in.leases_outstanding());
  EXPECT_EQ(s.groups_accepted(), in.groups_accepted());
  EXPECT_EQ(s.groups_rejected(), in.groups_rejected());
  EXPECT_EQ(s.leases_reissued(), in.leases_reissued());
  EXPECT_EQ(s.epoch(), in.epoch());
  EXPECT_EQ(s.cursor(), in.cursor());
  EXPECT_EQ(s.policy_version(), in.latest_version());
}

// metrics.jsonl: the counts since the previous line under the contract's
// keys (scripts/overlap, services/runner/report.cc), next to what the
// diagnostics wrote into the same "groups_dropped" object.
TEST(IngestSnapshotTest, DeltasAreTheIncreaseSinceThePreviousLine) {
  UpdateDiagnostics d;
  d.set_groups_dropped_balance(2);
  nlohmann::json j;
  DiagnosticsToJson(d, &j);
  std::set<std::string> diagnostics_keys;
  for (auto it = j.begin(); it != j.end(); ++it) diagnostics_keys.insert(it.key());

  const IngestSnapshot before = Numbered();
  IngestSnapshot now = Numbered(/*plus=*/5);
  now.set_groups_accepted(before.groups_accepted() + 7);
  now.set_groups_dropped_stale(before.groups_dropped_stale() + 3);
  now.set_leases_revoked(before.leases_revoked());
  IngestDeltasToJson(now, before, &j);

  std::set<std::string> added;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!diagnostics_keys.count(it.key())) added.insert(it.key());
  }
  EXPECT_EQ(added, (std::set<std::string>{"groups_accepted", "leases_revoked", "groups_rejected"}));
  EXPECT_TRUE(j["groups_accepted"].is_number_integer());
  EXPECT_EQ(j["groups_accepted"].get<uint64_t>(), 7u);
  EXPECT_EQ(j["leases_revoked"].get<uint64_t>(), 0u);
  EXPECT_EQ(j["groups_dropped"]["stale"].get<uint64_t>(), 3u);
  EXPECT_EQ(j["groups_dropped"]["balance"].get<int64_t>(), 2);
  EXPECT_EQ(j["groups_dropped"].size(), 4u);  // trust_region, zero_variance, balance, stale.
  // Rejected groups by reason, keyed as the Prometheus family labels them.
  EXPECT_EQ(j["groups_rejected"].size(), 12u);
  EXPECT_EQ(j["groups_rejected"]["rate_limited"].get<uint64_t>(), 5u);
  EXPECT_EQ(j["groups_rejected"]["stale_version"].get<uint64_t>(), 5u);
  EXPECT_EQ(j["groups_rejected"]["token_out_of_vocab"].get<uint64_t>(), 5u);

  // The first line counts from an empty snapshot: the totals.
  nlohmann::json first;
  IngestDeltasToJson(now, IngestSnapshot(), &first);
  EXPECT_EQ(first["groups_accepted"].get<uint64_t>(), now.groups_accepted());
  EXPECT_EQ(first["groups_dropped"]["stale"].get<uint64_t>(), now.groups_dropped_stale());
  EXPECT_EQ(first["groups_rejected"]["unknown_lease"].get<uint64_t>(),
            now.groups_rejected_unknown_lease());
  EXPECT_EQ(first.size(), 4u);
}

}  // namespace
}  // namespace rlvr::learner
