#include "learner/lease_table.h"

#include <glog/logging.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>
#include <utility>

#include "absl/strings/str_cat.h"
#include "learner/rollout_validation.h"

namespace rlvr::learner {
namespace {
constexpr size_t kClosedHistory = 1 << 17;
}  // namespace

int64_t GroupBytes(const Group& group) {
  int64_t bytes = 64;
  for (const Rollout& r : group.rollouts) {
    bytes += 32 + 4 * static_cast<int64_t>(r.tokens.size()) +
             4 * static_cast<int64_t>(r.behaviour_logprobs.size());
  }
  return bytes;
}

LeaseTable::LeaseTable(IngestOptions options, std::vector<LeasePrompt> prompts)
    : options_(std::move(options)), prompts_(std::move(prompts)) {
  RolloutBufferOptions bo;
  bo.max_policy_lag = options_.max_policy_lag;
  bo.buffer_groups = options_.buffer_groups;
  bo.groups_per_update = options_.groups_per_update;
  bo.num_prompts = prompts_.size();
  bo.seed = options_.seed;
  buffer_ = MakeRolloutBuffer(bo);
}

absl::StatusOr<uint64_t> LeaseTable::OpenSession(int capacity, absl::Time now) {
  if (capacity < 1) return absl::InvalidArgumentError("Hello.capacity must be >= 1");
  if (stopped_) return absl::UnavailableError("learner is shutting down");
  if (static_cast<int>(sessions_.size()) >= options_.max_sessions) {
    return absl::ResourceExhaustedError(
        absl::StrCat("learner serves at most ", options_.max_sessions, " sessions"));
  }
  const uint64_t id = next_session_id_++;
  Session& s = sessions_[id];
  s.capacity = std::min(capacity, std::max(1, options_.max_capacity));
  s.last_progress = now;
  return id;
}

size_t LeaseTable::CloseSession(uint64_t session) {
  if (sessions_.erase(session) == 0) return 0;
  std::vector<uint64_t> ids;
  for (const auto& [id, lease] : leases_) {
    if (lease.session == session) ids.push_back(id);
  }
  for (uint64_t id : ids) Lose(id, Closed::kLost);
  LOG(INFO) << "session " << session << " closed; " << ids.size() << " leases re-queued";
  return ids.size();
}

std::vector<uint64_t> LeaseTable::SessionsByProgress() const {
  std::vector<std::pair<absl::Time, uint64_t>> order;
  order.reserve(sessions_.size());
  for (const auto& [id, s] : sessions_) {
    if (!s.suspended) order.emplace_back(s.last_progress, id);
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<uint64_t> out;
  out.reserve(order.size());
  for (const auto& [t, id] : order) out.push_back(id);
  return out;
}

bool LeaseTable::Suspended(uint64_t session) const {
  auto it = sessions_.find(session);
  return it != sessions_.end() && it->second.suspended;
}

size_t LeaseTable::suspended_sessions() const {
  return static_cast<size_t>(std::count_if(sessions_.begin(), sessions_.end(),
                                           [](const auto& e) { return e.second.suspended; }));
}

void LeaseTable::Answered(uint64_t session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  Session& s = it->second;
  s.expired_streak = 0;
  if (!s.suspended) return;
  s.suspended = false;
  LOG(INFO) << "session " << session << " answered again; leases resume";
}

std::vector<rlvr::v1::WorkLease> LeaseTable::Grant(uint64_t session, absl::Time now) {
  google::protobuf::RepeatedPtrField<rlvr::v1::WorkLease> granted;
  Grant(session, now, &granted);
  return std::vector<rlvr::v1::WorkLease>(std::make_move_iterator(granted.begin()),
                                          std::make_move_iterator(granted.end()));
}

size_t LeaseTable::Grant(uint64_t session, absl::Time now,
                         google::protobuf::RepeatedPtrField<rlvr::v1::WorkLease>* out) {
  if (stopped_ || !granting_ || !buffer_->published()) return 0;
  auto sit = sessions_.find(session);
  if (sit == sessions_.end()) return 0;
  Session& s = sit->second;
  if (s.suspended) return 0;  // Hung: no new work until it answers.
  size_t granted = 0;
  while (s.outstanding < s.capacity) {
    std::optional<SlotReservation> r = buffer_->Reserve(leases_.size());
    if (!r.has_value()) break;
    Lease lease;
    lease.session = session;
    lease.slot = r->slot;
    lease.deadline = now + absl::Seconds(options_.lease_timeout_s);
    lease.min_version = r->min_version;
    lease.granted_at = buffer_->latest_version();
    const uint64_t id = next_lease_id_++;
    leases_[id] = lease;
    ++s.outstanding;
    ++counters_.granted;
    ++granted;
    MakeWorkLease(id, lease, out->Add());
  }
  return granted;
}

void LeaseTable::MakeWorkLease(uint64_t id, const Lease& lease, rlvr::v1::WorkLease* w) const {
  const LeasePrompt& p = prompts_[lease.slot.prompt_index];
  w->set_lease_id(id);
  w->set_prompt_id(p.id);
  w->mutable_prompt_token_ids()->Add(p.tokens.begin(), p.tokens.end());
  w->set_group_size(options_.group_size);
  rlvr::v1::SamplingParams* sp = w->mutable_sampling();
  sp->set_temperature(static_cast<float>(options_.sampling.temperature));
  sp->set_top_k(options_.sampling.top_k);
  sp->set_top_p(static_cast<float>(options_.sampling.top_p));
  sp->set_max_new_tokens(options_.sampling.max_new_tokens);
  if (options_.stop_ids.empty()) {
    sp->add_stop_token_ids(options_.eos_id);
  } else {
    for (int stop : options_.stop_ids) sp->add_stop_token_ids(stop);
  }
  sp->set_seed(PromptCursor::SlotSeed(options_.seed, lease.slot.epoch, lease.slot.prompt_index));
  w->set_deadline_unix_ms(absl::ToUnixMillis(lease.deadline));
  w->set_task(options_.task_name);
  w->set_answer(p.answer);
  w->set_min_policy_version(lease.min_version);
}

bool LeaseTable::TakeRateToken(uint64_t session, absl::Time now) {
  if (options_.max_groups_per_s <= 0) return true;
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return true;  // Closed session: nothing to meter.
  Session& s = it->second;
  const double rate = options_.max_groups_per_s;
  const double burst = std::max(1.0, rate);
  if (s.rate_tokens < 0) {
    s.rate_tokens = burst;
  } else {
    s.rate_tokens =
        std::min(burst, s.rate_tokens + rate * absl::ToDoubleSeconds(now - s.rate_time));
  }
  s.rate_time = now;
  if (s.rate_tokens < 1.0) return false;
  s.rate_tokens -= 1.0;
  return true;
}

rlvr::v1::Ack LeaseTable::Reject(uint64_t lease_id, rlvr::v1::RejectReason reason,
                                 std::string detail) {
  rlvr::v1::Ack ack;
  ack.set_lease_id(lease_id);
  ack.set_accepted(false);
  ack.set_reason(reason);
  if (detail.size() > 256) detail.resize(256);
  ack.set_detail(std::move(detail));
  ++counters_.rejected;
  const size_t r = static_cast<size_t>(reason);
  if (r < counters_.rejected_by_reason.size()) ++counters_.rejected_by_reason[r];
  return ack;
}

rlvr::v1::Ack LeaseTable::RejectNotLive(uint64_t id) {
  auto cit = closed_.find(id);
  const Closed closed = cit == closed_.end() ? Closed::kLost : cit->second;
  switch (closed) {
    case Closed::kAccepted:
      return Reject(id, rlvr::v1::REJECT_REASON_DUPLICATE,
                    absl::StrCat("lease ", id, " was already answered"));
    case Closed::kExpired:
      return Reject(id, rlvr::v1::REJECT_REASON_EXPIRED_LEASE,
                    absl::StrCat("lease ", id, " expired and was re-queued"));
    case Closed::kRevoked:
      return Reject(
          id, rlvr::v1::REJECT_REASON_STALE_VERSION,
          absl::StrCat("lease ", id, " was revoked: its group would be stale; prompt re-queued"));
    case Closed::kLost:
      break;
  }
  return Reject(id, rlvr::v1::REJECT_REASON_UNKNOWN_LEASE,
                absl::StrCat("lease ", id, " is not outstanding on this session"));
}

rlvr::v1::Ack LeaseTable::Submit(uint64_t session, ReceivedGroup* received, absl::Time now,
                                 bool* requeued) {
  const uint64_t id = received->group.lease_id;
  auto it = leases_.find(id);
  const bool live = it != leases_.end() && it->second.session == session;
  // A rejected group's live lease goes back to the queue.
  auto lose = [&](Closed why) {
    if (!live) return;
    Lose(id, why);
    *requeued = true;
  };
  if (stopped_) {
    if (live) Lose(id, Closed::kLost);
    return Reject(id, rlvr::v1::REJECT_REASON_UNAVAILABLE, "learner is shutting down");
  }
  // A group for a live lease of this session is paced by the leases
  // themselves (credits, capacity) and is wanted: it is never metered, so a
  // fast actor's work is never thrown away. The bucket meters the rest (for
  // unknown, answered, expired, revoked or another session's leases), which
  // only a confused or hostile client sends in bulk.
  if (!live && !TakeRateToken(session, now)) {
    return Reject(id, rlvr::v1::REJECT_REASON_RATE_LIMITED,
                  absl::StrCat("session exceeds ", options_.max_groups_per_s,
                               " groups/s answering no live lease"));
  }
  const size_t message_bytes = received->message_bytes;
  if (static_cast<int64_t>(message_bytes) > options_.max_message_bytes) {
    lose(Closed::kLost);
    return Reject(
        id, rlvr::v1::REJECT_REASON_OVERSIZE,
        absl::StrCat("message of ", message_bytes, " bytes exceeds ", options_.max_message_bytes));
  }
  if (!live) return RejectNotLive(id);

  const Lease lease = it->second;
  const LeasePrompt& p = prompts_[lease.slot.prompt_index];
  const uint64_t lag = options_.max_policy_lag;
  const uint64_t latest = buffer_->latest_version();
  const uint64_t v = received->group.policy_version;
  if (now > lease.deadline) {
    lose(Closed::kExpired);
    return Reject(id, rlvr::v1::REJECT_REASON_EXPIRED_LEASE,
                  absl::StrCat("lease ", id, " deadline passed"));
  }
  if (ValidationResult vr = ValidateGroupContent(
          *received, GroupExpectations{p.id, options_.group_size, options_.sampling.max_new_tokens,
                                       options_.vocab_size});
      !vr.ok()) {
    lose(Closed::kLost);
    return Reject(id, vr.reason, std::move(vr.detail));
  }
  const uint64_t oldest = std::max<uint64_t>(lease.min_version, latest > lag ? latest - lag : 0);
  if (v > latest || v < oldest) {
    lose(Closed::kLost);
    return Reject(id, rlvr::v1::REJECT_REASON_STALE_VERSION,
                  absl::StrCat("version ", v, " outside [", oldest, ", ", latest, "]"));
  }
  const int64_t group_bytes = GroupBytes(received->group);
  if (options_.buffer_bytes > 0 && held_bytes_ + group_bytes > options_.buffer_bytes) {
    lose(Closed::kLost);
    return Reject(
        id, rlvr::v1::REJECT_REASON_UNAVAILABLE,
        absl::StrCat("buffer byte cap: ", held_bytes_, " + ", group_bytes,
                     " > learner.buffer_bytes ", options_.buffer_bytes, "; lease re-queued"));
  }
  held_bytes_ += group_bytes;
  leases_.erase(it);
  auto sit = sessions_.find(session);
  if (sit != sessions_.end()) {
    --sit->second.outstanding;
    sit->second.last_progress = now;
  }
  RecordClosed(id, Closed::kAccepted);
  TrainingGroup tg;
  tg.slot = lease.slot;
  // The received Group moves on; its wire fields (lease_id, prompt_id, equal
  // to the lease's, policy_version, rollouts) were all set by the decoder or
  // the conversion. The rest comes from the lease.
  static_assert(
      sizeof(Group) == sizeof(std::string) + 3 * sizeof(uint64_t) + 2 * sizeof(std::vector<int>),
      "a field was added to Group: set it here or in the decoder");
  tg.group = std::move(received->group);
  tg.group.prompt_index = lease.slot.prompt_index;
  tg.group.prompt.assign(p.tokens.begin(), p.tokens.end());
  buffer_->Add(std::move(tg));
  ++counters_.accepted;
  rlvr::v1::Ack ack;
  ack.set_lease_id(id);
  ack.set_accepted(true);
  return ack;
}

size_t LeaseTable::Return(uint64_t session, const std::vector<uint64_t>& lease_ids) {
  size_t lost = 0;
  for (uint64_t id : lease_ids) {
    auto it = leases_.find(id);
    if (it == leases_.end() || it->second.session != session) continue;
    Lose(id, Closed::kLost);
    ++lost;
  }
  return lost;
}

void LeaseTable::RecordClosed(uint64_t lease_id, Closed why) {
  closed_[lease_id] = why;
  while (closed_.size() > kClosedHistory) closed_.erase(closed_.begin());
}

void LeaseTable::Lose(uint64_t lease_id, Closed why) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) return;
  const Lease lease = it->second;
  leases_.erase(it);
  auto sit = sessions_.find(lease.session);
  if (sit != sessions_.end()) --sit->second.outstanding;
  RecordClosed(lease_id, why);
  buffer_->Requeue(lease.slot);
  ++counters_.reissued;
}

LeaseTable::Expiry LeaseTable::Expire(absl::Time now) {
  Expiry out;
  std::vector<uint64_t> ids;
  for (const auto& [id, lease] : leases_) {
    if (lease.deadline < now) ids.push_back(id);
  }
  for (uint64_t id : ids) {
    auto lit = leases_.find(id);
    if (lit == leases_.end()) continue;  // Its session was closed just now.
    const uint64_t session = lit->second.session;
    Lose(id, Closed::kExpired);
    ++out.expired;
    auto sit = sessions_.find(session);
    if (sit == sessions_.end()) continue;
    Session& s = sit->second;
    ++s.expired_streak;
    LOG(INFO) << "lease " << id << " of session " << session
              << " expired; prompt re-queued; the session gets no new lease until it answers ("
              << s.expired_streak << " expired in a row)";
    s.suspended = true;
    const int limit = options_.lease_expiries_to_close;
    if (limit > 0 && s.expired_streak >= limit) {
      out.evicted.emplace_back(session,
                               absl::StrCat(s.expired_streak,
                                            " consecutive leases expired without an answer "
                                            "(learner.lease_expiries_to_close = ",
                                            limit, "); reconnect when ready"));
      LOG(WARNING) << "session " << session << " closed: " << out.evicted.back().second;
      // Closed here so that it holds no leases and no session slot from now on.
      for (auto it = leases_.begin(); it != leases_.end();) {
        const uint64_t other = it->first;
        const bool mine = it->second.session == session;
        ++it;
        if (mine) Lose(other, Closed::kLost);
      }
      sessions_.erase(sit);
    }
  }
  return out;
}

LeaseTable::Published LeaseTable::Publish(uint64_t version) {
  Published out;
  out.stale = buffer_->Publish(version);
  for (const TrainingGroup& g : out.stale) held_bytes_ -= GroupBytes(g.group);
  counters_.dropped_stale += out.stale.size();
  counters_.reissued += out.stale.size();
  const uint64_t lag = options_.max_policy_lag;
  if (lag == 0) return out;
  const uint64_t latest = buffer_->latest_version();
  std::vector<uint64_t> doomed;
  for (const auto& [id, lease] : leases_) {
    if (std::max(lease.granted_at, lease.min_version) + lag < latest) doomed.push_back(id);
  }
  for (uint64_t id : doomed) {
    out.revoked[leases_[id].session].push_back(id);
    Lose(id, Closed::kRevoked);
  }
  counters_.revoked += doomed.size();
  return out;
}

std::vector<TrainingGroup> LeaseTable::TakeUpdate() {
  std::vector<TrainingGroup> out = buffer_->Take();
  for (const TrainingGroup& g : out) held_bytes_ -= GroupBytes(g.group);
  return out;
}

void LeaseTable::CompleteUpdate(const std::vector<TrainingGroup>& groups) {
  for (const TrainingGroup& g : groups) buffer_->MarkTrained(g.slot);
}

std::string LeaseTable::SerializeState() const {
  nlohmann::json j;
  j["format"] = 1;
  j["cursor"] = buffer_->cursor().Serialize();
  j["next_lease_id"] = next_lease_id_;
  return j.dump();
}

absl::Status LeaseTable::RestoreState(const std::string& state) {
  try {
    nlohmann::json j = nlohmann::json::parse(state);
    if (j.at("format").get<int>() != 1) return absl::DataLossError("unknown ingest state format");
    absl::Status st = buffer_->RestoreCursor(j.at("cursor").get<std::string>());
    if (!st.ok()) return st;
    // A learner killed after this checkpoint may have granted ids beyond the
    // saved counter to actors that still hold them: skip well past those so
    // that no id is ever granted twice across a SIGKILL.
    constexpr uint64_t kResumeLeaseIdGap = uint64_t{1} << 20;
    next_lease_id_ = std::max<uint64_t>(next_lease_id_,
                                        j.at("next_lease_id").get<uint64_t>() + kResumeLeaseIdGap);
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::DataLossError(absl::StrCat("bad ingest state: ", e.what()));
  }
}

}  // namespace rlvr::learner
