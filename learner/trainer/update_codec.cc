#include "learner/trainer/update_codec.h"

#include <bit>
#include <cstdint>
#include <cstring>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "rlvr/v1/trainer_sync.pb.h"

namespace rlvr::learner::internal {
namespace {

// Frame: magic, format, header length (u64 little-endian), the UpdateHeader,
// then the state's three blobs with the sizes the header gives. The lengths
// make every truncation and every trailing byte an error (a protobuf message
// cut at a field boundary would still parse).
constexpr char kMagic[4] = {'R', 'L', 'V', 'U'};
constexpr uint32_t kFormat = 2;  // 1: the hand-written layout before protobuf.
constexpr size_t kFrameBytes = 4 + 4 + 8;
// Format 1's counters record (checkpoints written before format 2): magic and
// three u64. Still read, so those checkpoints resume.
constexpr char kLegacyCountersMagic[4] = {'R', 'L', 'V', 'C'};

static_assert(std::endian::native == std::endian::little, "the frame is little-endian");

template <typename T>
void AppendRaw(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
T ReadRaw(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

void ToProto(const TrainerCounters& c, rlvr::v1::TrainerCounters* p) {
  p->set_step(c.step);
  p->set_version(c.version);
  p->set_optimizer_steps(c.optimizer_steps);
}

TrainerCounters FromProto(const rlvr::v1::TrainerCounters& p) {
  return {p.step(), p.version(), p.optimizer_steps()};
}

// BatchStats's members as the header carries them (stats_counts,
// stats_means): append only, never reorder.
constexpr int64_t BatchStats::*kStatsCounts[] = {&BatchStats::groups_in,
                                                 &BatchStats::groups_zero_variance,
                                                 &BatchStats::groups_dropped_zero_variance,
                                                 &BatchStats::groups_dropped_balance,
                                                 &BatchStats::groups_used,
                                                 &BatchStats::rollouts_in,
                                                 &BatchStats::rollouts_used,
                                                 &BatchStats::rollouts_dropped_balance,
                                                 &BatchStats::positive_rollouts,
                                                 &BatchStats::negative_rollouts};
constexpr double BatchStats::*kStatsMeans[] = {&BatchStats::reward_mean, &BatchStats::accuracy,
                                               &BatchStats::zero_variance_fraction,
                                               &BatchStats::max_step_imbalance};

template <typename T, typename Repeated>
void AssignTo(std::vector<T>* out, const Repeated& in) {
  out->assign(in.data(), in.data() + in.size());
}

template <typename Repeated, typename T>
void AssignFrom(Repeated* out, const std::vector<T>& in) {
  out->Assign(in.begin(), in.end());
}

}  // namespace

std::string EncodeUpdateMessage(const UpdateMessage& m) {
  rlvr::v1::UpdateHeader h;
  h.set_stop(m.stop);
  if (m.state.has_value()) {
    h.set_has_state(true);
    ToProto(m.state->counters, h.mutable_state_counters());
    h.set_weights_bytes(m.state->weights.size());
    h.set_reference_weights_bytes(m.state->reference_weights.size());
    h.set_optimizer_bytes(m.state->optimizer.size());
  }
  for (const Group& g : m.groups) {
    rlvr::v1::SyncGroup* pg = h.add_groups();
    pg->set_prompt_id(g.prompt_id);
    pg->set_prompt_index(g.prompt_index);
    pg->set_lease_id(g.lease_id);
    pg->set_policy_version(g.policy_version);
    AssignFrom(pg->mutable_prompt(), g.prompt);
    for (const Rollout& r : g.rollouts) {
      rlvr::v1::SyncRollout* pr = pg->add_rollouts();
      AssignFrom(pr->mutable_tokens(), r.tokens);
      AssignFrom(pr->mutable_behaviour_logprobs(), r.behaviour_logprobs);
      pr->set_reward(r.reward);
    }
  }
  for (const OptimizerStep& s : m.plan.steps) {
    rlvr::v1::SyncOptimizerStep* ps = h.add_steps();
    ps->set_normalizer(s.normalizer);
    ps->set_tokens(s.tokens);
    ps->set_rollouts(s.rollouts);
    for (const SelectedGroup& sg : s.groups) {
      rlvr::v1::SyncSelectedGroup* psg = ps->add_groups();
      psg->set_group(sg.group);
      AssignFrom(psg->mutable_rollouts(), sg.rollouts);
      AssignFrom(psg->mutable_advantages(), sg.advantages);
    }
  }
  for (auto member : kStatsCounts) h.add_stats_counts(m.plan.stats.*member);
  for (auto member : kStatsMeans) h.add_stats_means(m.plan.stats.*member);

  const size_t header = h.ByteSizeLong();
  std::string out;
  out.reserve(kFrameBytes + header + h.weights_bytes() + h.reference_weights_bytes() +
              h.optimizer_bytes());
  out.append(kMagic, 4);
  AppendRaw<uint32_t>(&out, kFormat);
  AppendRaw<uint64_t>(&out, header);
  const size_t at = out.size();
  out.resize(at + header);
  h.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data() + at));
  if (m.state.has_value()) {
    out += m.state->weights;
    out += m.state->reference_weights;
    out += m.state->optimizer;
  }
  return out;
}

absl::StatusOr<UpdateMessage> DecodeUpdateMessage(absl::string_view bytes) {
  auto bad = [&](const char* what) {
    return absl::DataLossError(
        absl::StrCat("update message: bad or truncated ", what, " (", bytes.size(), " bytes)"));
  };
  if (bytes.size() < kFrameBytes || std::memcmp(bytes.data(), kMagic, 4) != 0) {
    return bad("header");
  }
  if (ReadRaw<uint32_t>(bytes.data() + 4) != kFormat) return bad("format version");
  const uint64_t header = ReadRaw<uint64_t>(bytes.data() + 8);
  if (header > bytes.size() - kFrameBytes || header > INT32_MAX) return bad("header length");
  rlvr::v1::UpdateHeader h;
  if (!h.ParseFromArray(bytes.data() + kFrameBytes, static_cast<int>(header))) {
    return bad("header message");
  }
  absl::string_view blobs = bytes.substr(kFrameBytes + header);
  if (!h.has_state() && (h.weights_bytes() | h.reference_weights_bytes() | h.optimizer_bytes())) {
    return bad("state sizes");
  }
  // Each size against what is left, so the sum cannot overflow.
  auto take = [&](uint64_t n, std::string* out) {
    if (n > blobs.size()) return false;
    out->assign(blobs.data(), n);
    blobs.remove_prefix(n);
    return true;
  };
  UpdateMessage m;
  m.stop = h.stop();
  if (h.has_state()) {
    TrainerState s;
    s.counters = FromProto(h.state_counters());
    if (!take(h.weights_bytes(), &s.weights) ||
        !take(h.reference_weights_bytes(), &s.reference_weights) ||
        !take(h.optimizer_bytes(), &s.optimizer)) {
      return bad("state");
    }
    m.state = std::move(s);
  }
  if (!blobs.empty()) return bad("trailing bytes");

  m.groups.resize(h.groups_size());
  for (int i = 0; i < h.groups_size(); ++i) {
    const rlvr::v1::SyncGroup& pg = h.groups(i);
    Group& g = m.groups[i];
    g.prompt_id = pg.prompt_id();
    g.prompt_index = pg.prompt_index();
    g.lease_id = pg.lease_id();
    g.policy_version = pg.policy_version();
    AssignTo(&g.prompt, pg.prompt());
    g.rollouts.resize(pg.rollouts_size());
    for (int j = 0; j < pg.rollouts_size(); ++j) {
      const rlvr::v1::SyncRollout& pr = pg.rollouts(j);
      AssignTo(&g.rollouts[j].tokens, pr.tokens());
      AssignTo(&g.rollouts[j].behaviour_logprobs, pr.behaviour_logprobs());
      g.rollouts[j].reward = pr.reward();
    }
  }
  m.plan.steps.resize(h.steps_size());
  for (int i = 0; i < h.steps_size(); ++i) {
    const rlvr::v1::SyncOptimizerStep& ps = h.steps(i);
    OptimizerStep& s = m.plan.steps[i];
    s.normalizer = ps.normalizer();
    s.tokens = ps.tokens();
    s.rollouts = ps.rollouts();
    s.groups.resize(ps.groups_size());
    for (int j = 0; j < ps.groups_size(); ++j) {
      const rlvr::v1::SyncSelectedGroup& psg = ps.groups(j);
      SelectedGroup& sg = s.groups[j];
      if (psg.group() < 0 || psg.group() >= h.groups_size()) return bad("group index");
      sg.group = psg.group();
      AssignTo(&sg.rollouts, psg.rollouts());
      AssignTo(&sg.advantages, psg.advantages());
      for (int ro : sg.rollouts) {
        if (ro < 0 || ro >= h.groups(sg.group).rollouts_size()) return bad("rollout index");
      }
      if (sg.advantages.size() != sg.rollouts.size()) return bad("advantages");
    }
  }
  if (h.stats_counts_size() != static_cast<int>(std::size(kStatsCounts)) ||
      h.stats_means_size() != static_cast<int>(std::size(kStatsMeans))) {
    return bad("stats");
  }
  for (size_t i = 0; i < std::size(kStatsCounts); ++i) {
    m.plan.stats.*kStatsCounts[i] = h.stats_counts(static_cast<int>(i));
  }
  for (size_t i = 0; i < std::size(kStatsMeans); ++i) {
    m.plan.stats.*kStatsMeans[i] = h.stats_means(static_cast<int>(i));
  }
  return m;
}

std::string EncodeCounters(const TrainerCounters& c) {
  rlvr::v1::TrainerCounters p;
  ToProto(c, &p);
  return p.SerializeAsString();
}

absl::StatusOr<TrainerCounters> DecodeCounters(absl::string_view bytes) {
  if (bytes.size() >= 4 && std::memcmp(bytes.data(), kLegacyCountersMagic, 4) == 0) {
    if (bytes.size() != 4 + 3 * sizeof(uint64_t)) {
      return absl::DataLossError("trainer counters: bad or truncated record (format 1)");
    }
    return TrainerCounters{ReadRaw<uint64_t>(bytes.data() + 4),
                           ReadRaw<uint64_t>(bytes.data() + 12),
                           ReadRaw<uint64_t>(bytes.data() + 20)};
  }
  rlvr::v1::TrainerCounters p;
  if (!p.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::DataLossError("trainer counters: bad or truncated record");
  }
  return FromProto(p);
}

}  // namespace rlvr::learner::internal
