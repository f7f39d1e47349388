#include "learner/ingest.h"

#include <algorithm>
#include <utility>

#include <glog/logging.h>
#include <google/protobuf/io/coded_stream.h>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "learner/rollout_decoder.h"
#include "learner/rollout_validation.h"

namespace rlvr::learner {
namespace {
constexpr size_t kClosedHistory = 1 << 17;

// Estimated memory of a buffered group (buffer_bytes accounting).
int64_t GroupBytes(const Group& group) {
  int64_t bytes = 64;
  for (const Rollout& r : group.rollouts) {
    bytes += 32 + 4 * static_cast<int64_t>(r.tokens.size()) +
             4 * static_cast<int64_t>(r.behaviour_logprobs.size());
  }
  return bytes;
}
}  // namespace

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
    : options_(std::move(options)),
      prompts_(std::move(prompts)),
      metrics_(metrics),
      cursor_(prompts_.size(), options_.seed) {
  metrics_->buffer_capacity_groups->Set(options_.buffer_groups);
}

Ingest::~Ingest() { Stop(); }

void Ingest::SetWakeCallback(std::function<void()> wake) { wake_ = std::move(wake); }

void Ingest::SetEvictCallback(std::function<void(uint64_t, const std::string&)> evict) {
  evict_ = std::move(evict);
}

void Ingest::Start() {
  absl::MutexLock l(&thread_mu_);
  if (expiry_thread_.joinable()) return;
  thread_stop_ = false;
  expiry_thread_ = std::thread([this] { ExpiryLoop(); });
}

void Ingest::Stop() {
  {
    absl::MutexLock l(&mu_);
    stopped_ = true;
    granting_ = false;
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
  granting_ = false;
}

absl::StatusOr<uint64_t> Ingest::OpenSession(int capacity) {
  if (capacity < 1) return absl::InvalidArgumentError("Hello.capacity must be >= 1");
  absl::MutexLock l(&mu_);
  if (stopped_) return absl::UnavailableError("learner is shutting down");
  if (static_cast<int>(sessions_.size()) >= options_.max_sessions) {
    return absl::ResourceExhaustedError(
        absl::StrCat("learner serves at most ", options_.max_sessions, " sessions"));
  }
  uint64_t id = next_session_id_++;
  Session session;
  session.capacity = std::min(capacity, std::max(1, options_.max_capacity));
  session.last_progress = absl::Now();
  sessions_[id] = session;
  UpdateGaugesLocked();
  return id;
}

void Ingest::CloseSession(uint64_t session) {
  bool lost = false;
  {
    absl::MutexLock l(&mu_);
    if (sessions_.erase(session) == 0) return;
    std::vector<uint64_t> ids;
    for (const auto& [id, lease] : leases_) {
      if (lease.session == session) ids.push_back(id);
    }
    for (uint64_t id : ids) LoseLeaseLocked(id, Closed::kLost);
    lost = !ids.empty();
    UpdateGaugesLocked();
    UpdateSuspendedGaugeLocked();
    LOG(INFO) << "session " << session << " closed; " << ids.size() << " leases re-queued";
  }
  if (lost) Wake();
}

std::vector<uint64_t> Ingest::SessionsByProgress() {
  std::vector<std::pair<absl::Time, uint64_t>> order;
  {
    absl::MutexLock l(&mu_);
    order.reserve(sessions_.size());
    for (const auto& [id, s] : sessions_) {
      if (!s.suspended) order.emplace_back(s.last_progress, id);
    }
  }
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<uint64_t> out;
  out.reserve(order.size());
  for (const auto& [t, id] : order) out.push_back(id);
  return out;
}

bool Ingest::Suspended(uint64_t session) {
  absl::MutexLock l(&mu_);
  auto it = sessions_.find(session);
  return it != sessions_.end() && it->second.suspended;
}

void Ingest::AnsweredLocked(uint64_t session) {
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return;
  Session& s = it->second;
  s.expired_streak = 0;
  if (!s.suspended) return;
  s.suspended = false;
  UpdateSuspendedGaugeLocked();
  LOG(INFO) << "session " << session << " answered again; leases resume";
}

void Ingest::UpdateSuspendedGaugeLocked() {
  int n = 0;
  for (const auto& [id, s] : sessions_) n += s.suspended ? 1 : 0;
  metrics_->sessions_suspended->Set(n);
}

void Ingest::Return(uint64_t session, const std::vector<uint64_t>& lease_ids) {
  bool lost = false;
  {
    absl::MutexLock l(&mu_);
    AnsweredLocked(session);
    for (uint64_t id : lease_ids) {
      auto it = leases_.find(id);
      if (it == leases_.end() || it->second.session != session) continue;
      LoseLeaseLocked(id, Closed::kLost);
      lost = true;
    }
    UpdateGaugesLocked();
  }
  if (lost) Wake();
}

std::vector<rlvr::v1::WorkLease> Ingest::Grant(uint64_t session) {
  std::vector<rlvr::v1::WorkLease> out;
  absl::MutexLock l(&mu_);
  if (stopped_ || !granting_ || !published_) return out;
  auto sit = sessions_.find(session);
  if (sit == sessions_.end()) return out;
  Session& s = sit->second;
  if (s.suspended) return out;  // Hung: no new work until it answers.
  const absl::Time now = absl::Now();
  while (s.outstanding < s.capacity) {
    CursorSlot slot;
    WindowEntry* entry = nullptr;
    if (SyncMode()) {
      if (window_taken_) break;
      for (WindowEntry& e : window_) {
        if (e.lease_id == 0 && !e.group.has_value()) {
          entry = &e;
          break;
        }
      }
      if (entry == nullptr) break;
      slot = entry->slot;
    } else {
      if (static_cast<int64_t>(buffer_.size() + leases_.size()) >= options_.buffer_groups) break;
      slot = cursor_.Take();
    }
    Lease lease;
    lease.id = next_lease_id_++;
    lease.session = session;
    lease.slot = slot;
    lease.deadline = now + absl::Seconds(options_.lease_timeout_s);
    const uint64_t lag = options_.max_policy_lag;
    lease.min_version = latest_version_ > lag ? latest_version_ - lag : 0;
    if (entry != nullptr) entry->lease_id = lease.id;
    leases_[lease.id] = lease;
    ++s.outstanding;
    ++granted_;
    metrics_->leases_granted->Increment();

    const LeasePrompt& p = prompts_[slot.prompt_index];
    rlvr::v1::WorkLease& w = out.emplace_back();
    w.set_lease_id(lease.id);
    w.set_prompt_id(p.id);
    for (int t : p.tokens) w.add_prompt_token_ids(t);
    w.set_group_size(options_.group_size);
    rlvr::v1::SamplingParams* sp = w.mutable_sampling();
    sp->set_temperature(static_cast<float>(options_.sampling.temperature));
    sp->set_top_k(options_.sampling.top_k);
    sp->set_top_p(static_cast<float>(options_.sampling.top_p));
    sp->set_max_new_tokens(options_.sampling.max_new_tokens);
    if (options_.stop_ids.empty()) {
      sp->add_stop_token_ids(options_.eos_id);
    } else {
      for (int id : options_.stop_ids) sp->add_stop_token_ids(id);
    }
    sp->set_seed(PromptCursor::SlotSeed(options_.seed, slot.epoch, slot.prompt_index));
    w.set_deadline_unix_ms(absl::ToUnixMillis(lease.deadline));
    w.set_task(options_.task_name);
    w.set_answer(p.answer);
    w.set_min_policy_version(lease.min_version);
  }
  if (!out.empty()) UpdateGaugesLocked();
  return out;
}

bool Ingest::TakeRateTokenLocked(uint64_t session) {
  if (options_.max_groups_per_s <= 0) return true;
  auto it = sessions_.find(session);
  if (it == sessions_.end()) return true;  // Closed session: nothing to meter.
  Session& s = it->second;
  const double rate = options_.max_groups_per_s;
  const double burst = std::max(1.0, rate);
  const absl::Time now = absl::Now();
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

rlvr::v1::Ack Ingest::RejectLocked(uint64_t lease_id, rlvr::v1::RejectReason reason,
                                   std::string detail) {
  rlvr::v1::Ack ack;
  ack.set_lease_id(lease_id);
  ack.set_accepted(false);
  ack.set_reason(reason);
  if (detail.size() > 256) detail.resize(256);
  ack.set_detail(std::move(detail));
  ++rejected_;
  metrics_->Rejected(reason).Increment();
  return ack;
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
    AnsweredLocked(session);
    acks->Reserve(acks->size() + static_cast<int>(count));
    for (size_t i = 0; i < count; ++i) {
      ReceivedGroup& group = (*groups)[i];
      rlvr::v1::Ack* ack = acks->Add();
      *ack = SubmitLocked(session, &group, &wake);
      if (refill && ack->accepted() && !spare_groups_.empty()) {
        group.group = std::move(spare_groups_.back());
        spare_groups_.pop_back();
      }
    }
    UpdateGaugesLocked();
  }
  if (wake) Wake();
}

rlvr::v1::Ack Ingest::SubmitLocked(uint64_t session, ReceivedGroup* received, bool* wake_out) {
  rlvr::v1::Ack ack;
  bool& wake = *wake_out;
  const size_t message_bytes = received->message_bytes;
  {
    const uint64_t id = received->group.lease_id;
    auto it = leases_.find(id);
    const bool live = it != leases_.end() && it->second.session == session;
    if (stopped_) {
      if (live) LoseLeaseLocked(id, Closed::kLost);
      return RejectLocked(id, rlvr::v1::REJECT_REASON_UNAVAILABLE, "learner is shutting down");
    }
    const int64_t group_bytes = GroupBytes(received->group);
    if (!TakeRateTokenLocked(session)) {
      if (live) {
        LoseLeaseLocked(id, Closed::kLost);
        wake = true;
      }
      ack = RejectLocked(id, rlvr::v1::REJECT_REASON_RATE_LIMITED,
                         absl::StrCat("session exceeds ", options_.max_groups_per_s,
                                      " groups/s; lease re-queued"));
    } else if (static_cast<int64_t>(message_bytes) > options_.max_message_bytes) {
      if (live) {
        LoseLeaseLocked(id, Closed::kLost);
        wake = true;
      }
      ack = RejectLocked(id, rlvr::v1::REJECT_REASON_OVERSIZE,
                         absl::StrCat("message of ", message_bytes, " bytes exceeds ",
                                      options_.max_message_bytes));
    } else if (!live) {
      auto cit = closed_.find(id);
      if (cit != closed_.end() && cit->second == Closed::kAccepted) {
        ack = RejectLocked(id, rlvr::v1::REJECT_REASON_DUPLICATE,
                           absl::StrCat("lease ", id, " was already answered"));
      } else if (cit != closed_.end() && cit->second == Closed::kExpired) {
        ack = RejectLocked(id, rlvr::v1::REJECT_REASON_EXPIRED_LEASE,
                           absl::StrCat("lease ", id, " expired and was re-queued"));
      } else {
        ack = RejectLocked(id, rlvr::v1::REJECT_REASON_UNKNOWN_LEASE,
                           absl::StrCat("lease ", id, " is not outstanding on this session"));
      }
    } else {
      const Lease lease = it->second;
      const LeasePrompt& p = prompts_[lease.slot.prompt_index];
      const uint64_t lag = options_.max_policy_lag;
      const uint64_t v = received->group.policy_version;
      ValidationResult vr;
      if (absl::Now() > lease.deadline) {
        LoseLeaseLocked(id, Closed::kExpired);
        ack = RejectLocked(id, rlvr::v1::REJECT_REASON_EXPIRED_LEASE,
                           absl::StrCat("lease ", id, " deadline passed"));
        wake = true;
      } else if (vr = ValidateGroupContent(*received, GroupExpectations{p.id, options_.group_size,
                                                                     options_.sampling.max_new_tokens,
                                                                     options_.vocab_size});
                 !vr.ok()) {
        LoseLeaseLocked(id, Closed::kLost);
        ack = RejectLocked(id, vr.reason, std::move(vr.detail));
        wake = true;
      } else if (v > latest_version_ || v < lease.min_version ||
                 (latest_version_ > lag && v < latest_version_ - lag)) {
        LoseLeaseLocked(id, Closed::kLost);
        ack = RejectLocked(id, rlvr::v1::REJECT_REASON_STALE_VERSION,
                           absl::StrCat("version ", v, " outside [",
                                        std::max<uint64_t>(lease.min_version,
                                                           latest_version_ > lag
                                                               ? latest_version_ - lag
                                                               : 0),
                                        ", ", latest_version_, "]"));
        wake = true;
      } else if (options_.buffer_bytes > 0 && held_bytes_ + group_bytes > options_.buffer_bytes) {
        LoseLeaseLocked(id, Closed::kLost);
        ack = RejectLocked(id, rlvr::v1::REJECT_REASON_UNAVAILABLE,
                           absl::StrCat("buffer byte cap: ", held_bytes_, " + ", group_bytes,
                                        " > learner.buffer_bytes ", options_.buffer_bytes,
                                        "; lease re-queued"));
        wake = true;
      } else {
        held_bytes_ += group_bytes;
        leases_.erase(id);
        auto sit = sessions_.find(session);
        if (sit != sessions_.end()) {
          --sit->second.outstanding;
          sit->second.last_progress = absl::Now();
        }
        RecordClosedLocked(id, Closed::kAccepted);
        TrainingGroup tg;
        tg.slot = lease.slot;
        // The received Group moves on; its wire fields (lease_id, prompt_id,
        // equal to the lease's, policy_version, rollouts) were all set by
        // the decoder or the conversion. The rest comes from the lease.
        static_assert(sizeof(Group) == sizeof(std::string) + 3 * sizeof(uint64_t) +
                                           2 * sizeof(std::vector<int>),
                      "a field was added to Group: set it here or in the decoder");
        tg.group = std::move(received->group);
        Group& g = tg.group;
        g.prompt_index = lease.slot.prompt_index;
        g.prompt.assign(p.tokens.begin(), p.tokens.end());
        if (SyncMode()) {
          for (WindowEntry& e : window_) {
            if (e.lease_id == id) {
              e.group = std::move(g);
              break;
            }
          }
        } else {
          buffer_.push_back(std::move(tg));
        }
        ++accepted_;
        metrics_->groups_accepted->Increment();
        ack.set_lease_id(id);
        ack.set_accepted(true);
        // Wake the trainer only when this group may complete its update:
        // a wake-up per group cost a context switch per group (the largest
        // item of an ingest profile together with gRPC's own).
        if (UpdateReadyLocked()) cv_.SignalAll();
      }
    }
  }
  return ack;
}

bool Ingest::UpdateReadyLocked() const {
  const size_t need = options_.groups_per_update;
  if (!SyncMode()) return buffer_.size() >= need;
  if (window_taken_ || window_.size() != need) return false;
  for (const WindowEntry& e : window_) {
    if (!e.group.has_value()) return false;
  }
  return true;
}

void Ingest::RecordClosedLocked(uint64_t lease_id, Closed why) {
  closed_[lease_id] = why;
  while (closed_.size() > kClosedHistory) closed_.erase(closed_.begin());
}

void Ingest::RequeueLocked(const CursorSlot& slot) {
  if (SyncMode()) {
    for (WindowEntry& e : window_) {
      if (e.slot == slot) {
        e.lease_id = 0;
        return;
      }
    }
  }
  cursor_.Requeue(slot);
}

void Ingest::LoseLeaseLocked(uint64_t lease_id, Closed why) {
  auto it = leases_.find(lease_id);
  if (it == leases_.end()) return;
  const Lease lease = it->second;
  leases_.erase(it);
  auto sit = sessions_.find(lease.session);
  if (sit != sessions_.end()) --sit->second.outstanding;
  RecordClosedLocked(lease_id, why);
  RequeueLocked(lease.slot);
  ++reissued_;
  metrics_->leases_reissued->Increment();
}

void Ingest::ExpireLeases(absl::Time now) {
  bool lost = false;
  std::vector<std::pair<uint64_t, std::string>> evicted;
  {
    absl::MutexLock l(&mu_);
    std::vector<uint64_t> ids;
    for (const auto& [id, lease] : leases_) {
      if (lease.deadline < now) ids.push_back(id);
    }
    for (uint64_t id : ids) {
      auto lit = leases_.find(id);
      if (lit == leases_.end()) continue;  // Its session was closed just now.
      const uint64_t session = lit->second.session;
      LoseLeaseLocked(id, Closed::kExpired);
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
        evicted.emplace_back(session, absl::StrCat(s.expired_streak,
                                                   " consecutive leases expired without an "
                                                   "answer (learner.lease_expiries_to_close = ",
                                                   limit, "); reconnect when ready"));
        // Closed here so that it holds no leases and no session slot from now on.
        for (auto it = leases_.begin(); it != leases_.end();) {
          const uint64_t other = it->first;
          const bool mine = it->second.session == session;
          ++it;
          if (mine) LoseLeaseLocked(other, Closed::kLost);
        }
        sessions_.erase(sit);
        LOG(WARNING) << "session " << session << " closed: " << evicted.back().second;
      }
    }
    lost = !ids.empty();
    if (lost) {
      UpdateGaugesLocked();
      UpdateSuspendedGaugeLocked();
    }
  }
  if (evict_) {
    for (const auto& [session, why] : evicted) evict_(session, why);
  }
  if (lost) Wake();
}

absl::StatusOr<std::vector<TrainingGroup>> Ingest::WaitForUpdate(
    const std::function<bool()>& stop) {
  const size_t need = options_.groups_per_update;
  while (true) {
    bool wake = false;
    std::optional<std::vector<TrainingGroup>> taken;
    {
      absl::MutexLock l(&mu_);
      if (stopped_) return absl::CancelledError("ingest stopped");
      if (SyncMode()) {
        if (UpdateReadyLocked()) {
          std::vector<WindowEntry*> sorted;
          for (WindowEntry& e : window_) sorted.push_back(&e);
          std::sort(sorted.begin(), sorted.end(),
                    [](const WindowEntry* a, const WindowEntry* b) { return a->slot < b->slot; });
          std::vector<TrainingGroup> out;
          for (WindowEntry* e : sorted) {
            metrics_->staleness_versions->Observe(
                static_cast<double>(latest_version_ - e->group->policy_version));
            held_bytes_ -= GroupBytes(*e->group);
            out.push_back(TrainingGroup{std::move(*e->group), e->slot});
          }
          window_taken_ = true;
          UpdateGaugesLocked();
          return out;
        }
      } else {
        const uint64_t lag = options_.max_policy_lag;
        for (auto it = buffer_.begin(); it != buffer_.end();) {
          if (it->group.policy_version + lag < latest_version_) {
            metrics_->dropped_stale->Increment();
            held_bytes_ -= GroupBytes(it->group);
            cursor_.Requeue(it->slot);
            ++reissued_;
            metrics_->leases_reissued->Increment();
            it = buffer_.erase(it);
            wake = true;
          } else {
            ++it;
          }
        }
        if (buffer_.size() >= need) {
          taken.emplace();
          for (size_t i = 0; i < need; ++i) {
            metrics_->staleness_versions->Observe(
                static_cast<double>(latest_version_ - buffer_.front().group.policy_version));
            held_bytes_ -= GroupBytes(buffer_.front().group);
            taken->push_back(std::move(buffer_.front()));
            buffer_.pop_front();
          }
          wake = true;  // Credits freed.
        }
        if (wake) UpdateGaugesLocked();
      }
      if (!wake) cv_.WaitWithTimeout(&mu_, absl::Milliseconds(50));
    }
    if (wake) Wake();
    if (taken.has_value()) return std::move(*taken);
    if (stop && stop()) return absl::CancelledError("stop requested");
  }
}

void Ingest::CompleteUpdate(const std::vector<TrainingGroup>& groups) {
  absl::MutexLock l(&mu_);
  for (const TrainingGroup& g : groups) cursor_.MarkTrained(g.slot);
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
  {
    absl::MutexLock l(&mu_);
    if (published_ && version <= latest_version_) {
      LOG(WARNING) << "Publish(" << version << ") does not advance " << latest_version_;
    }
    latest_version_ = std::max(latest_version_, version);
    published_ = true;
    if (SyncMode() && (window_.empty() || window_taken_)) {
      window_.clear();
      for (int i = 0; i < options_.groups_per_update; ++i) {
        window_.push_back(WindowEntry{cursor_.Take(), 0, std::nullopt});
      }
      window_taken_ = false;
    }
    UpdateGaugesLocked();
  }
  Wake();
}

std::string Ingest::SerializeState() {
  absl::MutexLock l(&mu_);
  nlohmann::json j;
  j["format"] = 1;
  j["cursor"] = cursor_.Serialize();
  j["next_lease_id"] = next_lease_id_;
  return j.dump();
}

absl::Status Ingest::RestoreState(const std::string& state) {
  absl::MutexLock l(&mu_);
  try {
    nlohmann::json j = nlohmann::json::parse(state);
    if (j.at("format").get<int>() != 1) return absl::DataLossError("unknown ingest state format");
    absl::Status st = cursor_.Restore(j.at("cursor").get<std::string>());
    if (!st.ok()) return st;
    // A learner killed after this checkpoint may have granted ids beyond the
    // saved counter to actors that still hold them: skip well past those so
    // that no id is ever granted twice across a SIGKILL.
    constexpr uint64_t kResumeLeaseIdGap = uint64_t{1} << 20;
    next_lease_id_ = std::max<uint64_t>(
        next_lease_id_, j.at("next_lease_id").get<uint64_t>() + kResumeLeaseIdGap);
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::DataLossError(absl::StrCat("bad ingest state: ", e.what()));
  }
}

void Ingest::UpdateGaugesLocked() {
  metrics_->leases_outstanding->Set(static_cast<double>(leases_.size()));
  metrics_->actors_connected->Set(static_cast<double>(sessions_.size()));
  size_t buffered = buffer_.size();
  if (SyncMode() && !window_taken_) {
    buffered = 0;
    for (const WindowEntry& e : window_) buffered += e.group.has_value() ? 1 : 0;
  }
  metrics_->buffer_groups->Set(static_cast<double>(buffered));
}

IngestSnapshot Ingest::Snapshot() {
  absl::MutexLock l(&mu_);
  IngestSnapshot s;
  s.sessions = sessions_.size();
  s.buffer_groups = static_cast<uint32_t>(metrics_->buffer_groups->Value());
  s.buffer_capacity = options_.buffer_groups;
  s.leases_outstanding = leases_.size();
  s.groups_accepted = accepted_;
  s.groups_rejected = rejected_;
  s.leases_reissued = reissued_;
  s.leases_granted = granted_;
  s.latest_version = latest_version_;
  s.epoch = cursor_.epoch();
  s.cursor = cursor_.cursor();
  return s;
}

}  // namespace rlvr::learner
