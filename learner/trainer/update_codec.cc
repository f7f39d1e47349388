#include "learner/trainer/update_codec.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"

namespace rlvr::learner::internal {
namespace {

constexpr char kMagic[4] = {'R', 'L', 'V', 'U'};
constexpr uint32_t kFormat = 1;
constexpr char kCountersMagic[4] = {'R', 'L', 'V', 'C'};

static_assert(std::endian::native == std::endian::little, "the codec assumes little-endian hosts");

class Writer {
 public:
  template <typename T>
  void Put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void PutBytes(absl::string_view s) {
    Put<uint64_t>(s.size());
    out_.append(s.data(), s.size());
  }
  template <typename T>
  void PutVector(const std::vector<T>& v) {
    Put<uint64_t>(v.size());
    if (!v.empty()) out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void Raw(const char* p, size_t n) { out_.append(p, n); }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(absl::string_view in) : in_(in) {}
  template <typename T>
  bool Get(T* v) {
    if (in_.size() - pos_ < sizeof(T)) return Fail();
    std::memcpy(v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool GetBytes(std::string* s) {
    uint64_t n = 0;
    if (!Get(&n) || n > in_.size() - pos_) return Fail();
    s->assign(in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  template <typename T>
  bool GetVector(std::vector<T>* v) {
    uint64_t n = 0;
    if (!Get(&n) || n > (in_.size() - pos_) / sizeof(T)) return Fail();
    v->resize(n);
    if (n > 0) std::memcpy(v->data(), in_.data() + pos_, n * sizeof(T));
    pos_ += n * sizeof(T);
    return true;
  }
  // A count of items each at least `min_item_bytes` long (guards resize()).
  bool GetCount(uint64_t* n, size_t min_item_bytes) {
    if (!Get(n) || *n > (in_.size() - pos_) / std::max<size_t>(1, min_item_bytes)) return Fail();
    return true;
  }
  bool Expect(const char (&magic)[4]) {
    if (in_.size() - pos_ < 4 || std::memcmp(in_.data() + pos_, magic, 4) != 0) return Fail();
    pos_ += 4;
    return true;
  }
  bool AtEnd() const { return pos_ == in_.size(); }
  bool failed() const { return failed_; }

 private:
  bool Fail() {
    failed_ = true;
    return false;
  }
  absl::string_view in_;
  size_t pos_ = 0;
  bool failed_ = false;
};

static_assert(sizeof(int) == 4 && sizeof(float) == 4);

void PutStats(Writer& w, const BatchStats& s) {
  for (int64_t v : {s.groups_in, s.groups_zero_variance, s.groups_dropped_zero_variance,
                    s.groups_dropped_balance, s.groups_used, s.rollouts_in, s.rollouts_used,
                    s.rollouts_dropped_balance, s.positive_rollouts, s.negative_rollouts}) {
    w.Put<int64_t>(v);
  }
  for (double v : {s.reward_mean, s.accuracy, s.zero_variance_fraction, s.max_step_imbalance}) {
    w.Put<double>(v);
  }
}

bool GetStats(Reader& r, BatchStats* s) {
  for (int64_t* v :
       {&s->groups_in, &s->groups_zero_variance, &s->groups_dropped_zero_variance,
        &s->groups_dropped_balance, &s->groups_used, &s->rollouts_in, &s->rollouts_used,
        &s->rollouts_dropped_balance, &s->positive_rollouts, &s->negative_rollouts}) {
    if (!r.Get(v)) return false;
  }
  for (double* v :
       {&s->reward_mean, &s->accuracy, &s->zero_variance_fraction, &s->max_step_imbalance}) {
    if (!r.Get(v)) return false;
  }
  return true;
}

}  // namespace

std::string EncodeUpdateMessage(const UpdateMessage& m) {
  Writer w;
  w.Raw(kMagic, 4);
  w.Put<uint32_t>(kFormat);
  w.Put<uint8_t>(m.stop ? 1 : 0);
  w.Put<uint8_t>(m.state.has_value() ? 1 : 0);
  if (m.state) {
    w.Put<uint64_t>(m.state->counters.step);
    w.Put<uint64_t>(m.state->counters.version);
    w.Put<uint64_t>(m.state->counters.optimizer_steps);
    w.PutBytes(m.state->weights);
    w.PutBytes(m.state->reference_weights);
    w.PutBytes(m.state->optimizer);
  }
  w.Put<uint64_t>(m.groups.size());
  for (const Group& g : m.groups) {
    w.PutBytes(g.prompt_id);
    w.Put<uint64_t>(g.prompt_index);
    w.Put<uint64_t>(g.lease_id);
    w.Put<uint64_t>(g.policy_version);
    w.PutVector(g.prompt);
    w.Put<uint64_t>(g.rollouts.size());
    for (const Rollout& r : g.rollouts) {
      w.PutVector(r.tokens);
      w.PutVector(r.behaviour_logprobs);
      w.Put<double>(r.reward);
    }
  }
  w.Put<uint64_t>(m.plan.steps.size());
  for (const OptimizerStep& s : m.plan.steps) {
    w.Put<double>(s.normalizer);
    w.Put<int64_t>(s.tokens);
    w.Put<int64_t>(s.rollouts);
    w.Put<uint64_t>(s.groups.size());
    for (const SelectedGroup& sg : s.groups) {
      w.Put<int32_t>(sg.group);
      w.PutVector(sg.rollouts);
      w.PutVector(sg.advantages);
    }
  }
  PutStats(w, m.plan.stats);
  return w.Take();
}

absl::StatusOr<UpdateMessage> DecodeUpdateMessage(absl::string_view bytes) {
  Reader r(bytes);
  UpdateMessage m;
  uint32_t format = 0;
  uint8_t stop = 0, has_state = 0;
  auto bad = [&](const char* what) {
    return absl::DataLossError(
        absl::StrCat("update message: bad or truncated ", what, " (", bytes.size(), " bytes)"));
  };
  if (!r.Expect(kMagic) || !r.Get(&format)) return bad("header");
  if (format != kFormat) return bad("format version");
  if (!r.Get(&stop) || !r.Get(&has_state)) return bad("flags");
  m.stop = stop != 0;
  if (has_state != 0) {
    TrainerState s;
    if (!r.Get(&s.counters.step) || !r.Get(&s.counters.version) ||
        !r.Get(&s.counters.optimizer_steps) || !r.GetBytes(&s.weights) ||
        !r.GetBytes(&s.reference_weights) || !r.GetBytes(&s.optimizer)) {
      return bad("state");
    }
    m.state = std::move(s);
  }
  uint64_t n_groups = 0;
  if (!r.GetCount(&n_groups, 40)) return bad("group count");
  m.groups.resize(n_groups);
  for (Group& g : m.groups) {
    uint64_t n_rollouts = 0;
    if (!r.GetBytes(&g.prompt_id) || !r.Get(&g.prompt_index) || !r.Get(&g.lease_id) ||
        !r.Get(&g.policy_version) || !r.GetVector(&g.prompt) || !r.GetCount(&n_rollouts, 24)) {
      return bad("group");
    }
    g.rollouts.resize(n_rollouts);
    for (Rollout& ro : g.rollouts) {
      if (!r.GetVector(&ro.tokens) || !r.GetVector(&ro.behaviour_logprobs) || !r.Get(&ro.reward)) {
        return bad("rollout");
      }
    }
  }
  uint64_t n_steps = 0;
  if (!r.GetCount(&n_steps, 32)) return bad("step count");
  m.plan.steps.resize(n_steps);
  for (OptimizerStep& s : m.plan.steps) {
    uint64_t n_selected = 0;
    if (!r.Get(&s.normalizer) || !r.Get(&s.tokens) || !r.Get(&s.rollouts) ||
        !r.GetCount(&n_selected, 20)) {
      return bad("step");
    }
    s.groups.resize(n_selected);
    for (SelectedGroup& sg : s.groups) {
      int32_t group = 0;
      if (!r.Get(&group) || !r.GetVector(&sg.rollouts) || !r.GetVector(&sg.advantages)) {
        return bad("selected group");
      }
      if (group < 0 || static_cast<uint64_t>(group) >= n_groups) return bad("group index");
      sg.group = group;
      for (int ro : sg.rollouts) {
        if (ro < 0 || static_cast<size_t>(ro) >= m.groups[group].rollouts.size()) {
          return bad("rollout index");
        }
      }
      if (sg.advantages.size() != sg.rollouts.size()) return bad("advantages");
    }
  }
  if (!GetStats(r, &m.plan.stats)) return bad("stats");
  if (!r.AtEnd()) return bad("trailing bytes");
  return m;
}

std::string EncodeCounters(const TrainerCounters& c) {
  Writer w;
  w.Raw(kCountersMagic, 4);
  w.Put<uint64_t>(c.step);
  w.Put<uint64_t>(c.version);
  w.Put<uint64_t>(c.optimizer_steps);
  return w.Take();
}

absl::StatusOr<TrainerCounters> DecodeCounters(absl::string_view bytes) {
  Reader r(bytes);
  TrainerCounters c;
  if (!r.Expect(kCountersMagic) || !r.Get(&c.step) || !r.Get(&c.version) ||
      !r.Get(&c.optimizer_steps) || !r.AtEnd()) {
    return absl::DataLossError("trainer counters: bad or truncated record");
  }
  return c;
}

}  // namespace rlvr::learner::internal
