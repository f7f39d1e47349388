#include "learner/ingest.h"

#include <glog/logging.h>
#include <google/protobuf/io/coded_stream.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "learner/rollout_decoder.h"

namespace rlvr::learner {
size_t MessageBytesForLimit(const rlvr::v1::RolloutGroup& group, int64_t limit) {
  // Known fields at their largest: a varint is at most 10 bytes (a negative
  // int32 takes 10), a tag 1, a length 5, a float 4. Unknown fields (a newer
  // actor) have no cheap bound: measure exactly.
  bool exact = !group.GetReflection()->GetUnknownFields(group).empty();
  size_t bound = 64 + group.prompt_id().size();
  for (const rlvr::v1::Completion& c : group.completions()) {
    exact = exact || !c.GetReflection()->GetUnknownFields(c).empty();
    bound += 64 + 10 * static_cast<size_t>(c.token_ids_size()) +
             4 * static_cast<size_t>(c.behaviour_logprobs_size()) + c.verifier_reason().size();
  }
  if (!exact && static_cast<int64_t>(bound) <= limit) return bound;
  const size_t body = group.ByteSizeLong();
  return 1 + google::protobuf::io::CodedOutputStream::VarintSize64(body) + body;
}

Ingest::Ingest(IngestOptions options, std::vector<LeasePrompt> prompts, LearnerMetrics* metrics)
    : options_(options), metrics_(metrics), table_(std::move(options), std::move(prompts)) {
  metrics_->buffer_capacity_groups->Set(options_.buffer_groups);
}

Ingest::~Ingest() { Stop(); }

void Ingest::SetWakeCallback(std::function<void()> wake) { wake_ = std::move(wake); }

void Ingest::SetEvictCallback(std::function<void(uint64_t, const std::string&)> evict) {
  evict_ = std::move(evict);
}

void Ingest::SetRevokeCallback(RevokeCallback revoke) { revoke_ = std::move(revoke); }

void Ingest::Start() {
  absl::MutexLock l(&thread_mu_);
  if (expiry_thread_.joinable()) return;
  thread_stop_ = false;
  expiry_thread_ = std::thread([this] { ExpiryLoop(); });
}

void Ingest::Stop() {
  {
    absl::MutexLock l(&mu_);
    table_.Stop();
    cv_.SignalAll();
  }
  std::thread t;
  {
    absl::MutexLock l(&thread_mu_);
    thread_stop_ = true;
    t = std::move(expiry_thread_);
  }
  if (t.joinable()) t.join();
}

void Ingest::ExpiryLoop() {
  const absl::Duration poll = absl::Seconds(options_.expiry_poll_s);
  while (true) {
    {
      absl::MutexLock l(&thread_mu_);
      auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(thread_mu_) { return thread_stop_; };
      if (thread_mu_.AwaitWithTimeout(absl::Condition(&stop), poll)) return;
    }
    ExpireLeases(absl::Now());
  }
}

void Ingest::Wake() {
  if (wake_) wake_();
}

void Ingest::StopGranting() {
  absl::MutexLock l(&mu_);
  table_.StopGranting();
}

absl::StatusOr<uint64_t> Ingest::OpenSession(int capacity) {
  absl::MutexLock l(&mu_);
  absl::StatusOr<uint64_t> id = table_.OpenSession(capacity, absl::Now());
  if (id.ok()) SyncMetricsLocked();
  return id;
}

void Ingest::CloseSession(uint64_t session) {
  size_t lost;
  {
    absl::MutexLock l(&mu_);
    lost = table_.CloseSession(session);
    SyncMetricsLocked();
  }
  if (lost > 0) Wake();
}

std::vector<uint64_t> Ingest::SessionsByProgress() {
  absl::MutexLock l(&mu_);
  return table_.SessionsByProgress();
}

bool Ingest::Suspended(uint64_t session) {
  absl::MutexLock l(&mu_);
  return table_.Suspended(session);
}

void Ingest::Return(uint64_t session, const std::vector<uint64_t>& lease_ids) {
  size_t lost;
  {
    absl::MutexLock l(&mu_);
    table_.Answered(session);
    lost = table_.Return(session, lease_ids);
    SyncMetricsLocked();
  }
  if (lost > 0) Wake();
}

std::vector<rlvr::v1::WorkLease> Ingest::Grant(uint64_t session) {
  absl::MutexLock l(&mu_);
  std::vector<rlvr::v1::WorkLease> out = table_.Grant(session, absl::Now());
  if (!out.empty()) SyncMetricsLocked();
  return out;
}

void Ingest::Grant(uint64_t session, google::protobuf::RepeatedPtrField<rlvr::v1::WorkLease>* out) {
  absl::MutexLock l(&mu_);
  if (table_.Grant(session, absl::Now(), out) > 0) SyncMetricsLocked();
}

void Ingest::SubmitReceived(uint64_t session, std::vector<ReceivedGroup>* groups, size_t count,
                            google::protobuf::RepeatedPtrField<rlvr::v1::Ack>* acks) {
  SubmitAll(session, groups, count, /*refill=*/true, acks);
}

rlvr::v1::Ack Ingest::Submit(uint64_t session, const rlvr::v1::RolloutGroup& group,
                             size_t message_bytes) {
  std::vector<ReceivedGroup> received(1);
  ConvertRolloutGroup(group, options_.group_size, message_bytes, &received[0]);
  google::protobuf::RepeatedPtrField<rlvr::v1::Ack> acks;
  SubmitAll(session, &received, 1, /*refill=*/false, &acks);
  return std::move(acks[0]);
}

void Ingest::ConvertParsed(const rlvr::v1::RolloutGroup& group, ReceivedGroup* out) const {
  ConvertRolloutGroup(group, options_.group_size,
                      MessageBytesForLimit(group, options_.max_message_bytes), out);
}

void Ingest::SubmitBatch(uint64_t session, const rlvr::v1::RolloutBatch& batch,
                         google::protobuf::RepeatedPtrField<rlvr::v1::Ack>* acks) {
  std::vector<ReceivedGroup> received(static_cast<size_t>(batch.groups_size()));
  for (int i = 0; i < batch.groups_size(); ++i) {
    ConvertParsed(batch.groups(i), &received[static_cast<size_t>(i)]);
  }
  SubmitAll(session, &received, received.size(), /*refill=*/false, acks);
}

void Ingest::SubmitAll(uint64_t session, std::vector<ReceivedGroup>* groups, size_t count,
                       bool refill, google::protobuf::RepeatedPtrField<rlvr::v1::Ack>* acks) {
  bool wake = false;
  {
    absl::MutexLock l(&mu_);
    const absl::Time now = absl::Now();
    table_.Answered(session);
    acks->Reserve(acks->size() + static_cast<int>(count));
    bool ready = false;
    for (size_t i = 0; i < count; ++i) {
      ReceivedGroup& group = (*groups)[i];
      rlvr::v1::Ack* ack = acks->Add();
      *ack = table_.Submit(session, &group, now, &wake);
      if (!ack->accepted()) continue;
      // Wake the trainer only when this group may complete its update: a
      // wake-up per group cost a context switch per group (the largest item
      // of an ingest profile together with gRPC's own).
      ready = ready || table_.UpdateReady();
      if (refill && !spare_groups_.empty()) {
        group.group = std::move(spare_groups_.back());
        spare_groups_.pop_back();
      }
    }
    if (ready) cv_.SignalAll();
    SyncMetricsLocked();
  }
  if (wake) Wake();
}

void Ingest::ExpireLeases(absl::Time now) {
  LeaseTable::Expiry expiry;
  {
    absl::MutexLock l(&mu_);
    expiry = table_.Expire(now);
    if (expiry.expired > 0) SyncMetricsLocked();
  }
  if (evict_) {
    for (const auto& [session, why] : expiry.evicted) evict_(session, why);
  }
  if (expiry.expired > 0) Wake();
}

absl::StatusOr<std::vector<TrainingGroup>> Ingest::WaitForUpdate(
    const std::function<bool()>& stop) {
  while (true) {
    std::vector<TrainingGroup> taken;
    {
      absl::MutexLock l(&mu_);
      if (table_.stopped()) return absl::CancelledError("ingest stopped");
      if (table_.UpdateReady()) {
        taken = table_.TakeUpdate();
        const uint64_t latest = table_.latest_version();
        for (const TrainingGroup& g : taken) {
          metrics_->staleness_versions->Observe(
              static_cast<double>(latest - g.group.policy_version));
        }
        SyncMetricsLocked();
      } else {
        cv_.WaitWithTimeout(&mu_, absl::Milliseconds(50));
      }
    }
    if (!taken.empty()) {
      Wake();  // Credits freed.
      return taken;
    }
    if (stop && stop()) return absl::CancelledError("stop requested");
  }
}

void Ingest::CompleteUpdate(const std::vector<TrainingGroup>& groups) {
  absl::MutexLock l(&mu_);
  table_.CompleteUpdate(groups);
}

void Ingest::RecycleGroups(std::vector<TrainingGroup>&& groups) {
  const size_t keep =
      static_cast<size_t>(options_.buffer_groups) + static_cast<size_t>(options_.groups_per_update);
  {
    absl::MutexLock l(&mu_);
    for (TrainingGroup& g : groups) {
      if (spare_groups_.size() >= keep) break;
      spare_groups_.push_back(std::move(g.group));
    }
  }
  groups.clear();  // What did not fit is freed here, outside the lock.
}

void Ingest::Publish(uint64_t version) {
  LeaseTable::Published published;
  {
    absl::MutexLock l(&mu_);
    published = table_.Publish(version);
    SyncMetricsLocked();
    for (TrainingGroup& g : published.stale) {
      if (spare_groups_.size() >= static_cast<size_t>(options_.buffer_groups)) break;
      spare_groups_.push_back(std::move(g.group));
    }
  }
  if (!published.revoked.empty()) {
    size_t n = 0;
    for (const auto& [session, ids] : published.revoked) n += ids.size();
    LOG(INFO) << "version " << version << ": revoked " << n
              << " leases whose groups would be stale; prompts re-queued";
    if (revoke_) {
      for (const auto& [session, ids] : published.revoked) revoke_(session, ids, version);
    }
  }
  Wake();
}

std::string Ingest::SerializeState() {
  absl::MutexLock l(&mu_);
  return table_.SerializeState();
}

absl::Status Ingest::RestoreState(const std::string& state) {
  absl::MutexLock l(&mu_);
  return table_.RestoreState(state);
}

void Ingest::SyncMetricsLocked() {
  const LeaseTableCounters& c = table_.counters();
  auto add = [](prometheus::Counter* counter, uint64_t now, uint64_t* was) {
    if (now > *was) counter->Increment(static_cast<double>(now - *was));
    *was = now;
  };
  add(metrics_->leases_granted, c.granted, &synced_.granted);
  add(metrics_->groups_accepted, c.accepted, &synced_.accepted);
  add(metrics_->leases_reissued, c.reissued, &synced_.reissued);
  add(metrics_->dropped_stale, c.dropped_stale, &synced_.dropped_stale);
  add(metrics_->leases_revoked, c.revoked, &synced_.revoked);
  if (c.rejected != synced_.rejected) {
    for (size_t r = 0; r < c.rejected_by_reason.size(); ++r) {
      if (c.rejected_by_reason[r] == synced_.rejected_by_reason[r]) continue;
      add(&metrics_->Rejected(static_cast<rlvr::v1::RejectReason>(r)), c.rejected_by_reason[r],
          &synced_.rejected_by_reason[r]);
    }
    synced_.rejected = c.rejected;
  }
  metrics_->leases_outstanding->Set(static_cast<double>(table_.outstanding()));
  metrics_->actors_connected->Set(static_cast<double>(table_.sessions()));
  metrics_->buffer_groups->Set(static_cast<double>(table_.buffered()));
  metrics_->sessions_suspended->Set(static_cast<double>(table_.suspended_sessions()));
}

const google::protobuf::FieldDescriptor* RejectedGroupsField(int reason) {
  static const std::vector<const google::protobuf::FieldDescriptor*>* const fields = [] {
    auto* v = new std::vector<const google::protobuf::FieldDescriptor*>(
        rlvr::v1::RejectReason_MAX + 1, nullptr);
    for (int r = rlvr::v1::RejectReason_MIN; r <= rlvr::v1::RejectReason_MAX; ++r) {
      if (r == rlvr::v1::REJECT_REASON_UNSPECIFIED || !rlvr::v1::RejectReason_IsValid(r)) continue;
      (*v)[r] = IngestSnapshot::descriptor()->FindFieldByName(
          "groups_rejected_" + RejectReasonLabel(static_cast<rlvr::v1::RejectReason>(r)));
    }
    return v;
  }();
  if (reason < 0 || static_cast<size_t>(reason) >= fields->size()) return nullptr;
  return (*fields)[reason];
}

IngestSnapshot Ingest::Snapshot() {
  absl::MutexLock l(&mu_);
  const LeaseTableCounters& c = table_.counters();
  IngestSnapshot s;
  s.set_sessions(static_cast<uint32_t>(table_.sessions()));
  s.set_buffer_groups(static_cast<uint32_t>(table_.buffered()));
  s.set_buffer_capacity(static_cast<uint32_t>(options_.buffer_groups));
  s.set_leases_outstanding(static_cast<uint32_t>(table_.outstanding()));
  s.set_groups_accepted(c.accepted);
  s.set_groups_rejected(c.rejected);
  s.set_leases_reissued(c.reissued);
  s.set_leases_granted(c.granted);
  s.set_leases_revoked(c.revoked);
  s.set_groups_dropped_stale(c.dropped_stale);
  s.set_latest_version(table_.latest_version());
  s.set_epoch(table_.cursor().epoch());
  s.set_cursor(table_.cursor().cursor());
  // One counter per RejectReason, in the field named after it (ingest.proto).
  const google::protobuf::Reflection* reflection = s.GetReflection();
  for (size_t r = 0; r < c.rejected_by_reason.size(); ++r) {
    const google::protobuf::FieldDescriptor* field = RejectedGroupsField(static_cast<int>(r));
    if (field != nullptr) reflection->SetUInt64(&s, field, c.rejected_by_reason[r]);
  }
  return s;
}

}  // namespace rlvr::learner
