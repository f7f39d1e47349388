// Fuzz target: the learner's ingest path (validation + lease bookkeeping +
// buffer) under arbitrary and structurally mutated ActorMessages.
//
// The input drives a small session: the first byte picks how the rest is
// used: (a) parsed as raw ActorMessage bytes, or (b) as a script of
// mutations applied to a valid group for a real lease. Whatever happens,
// Submit (and SubmitBatch, for RolloutBatch messages and for mutated groups
// placed between valid ones) must answer every group with an Ack and never crash, and an accepted
// group must satisfy every documented invariant (checked here independently of the validator):
// known lease, right group size and prompt id, token ids in the vocabulary, lengths consistent and
// within max_new_tokens, log-probs finite and <= 0, rewards in [0, 1], version not newer than
// published.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "learner/ingest.h"
#include "learner/learner_metrics.h"
#include "rlvr/v1/session.pb.h"

namespace {

using rlvr::learner::Ingest;
using rlvr::learner::IngestOptions;
using rlvr::learner::LeasePrompt;

constexpr int kVocab = 16;
constexpr int kGroup = 4;
constexpr int kMaxNew = 6;

class Reader {
 public:
  Reader(const uint8_t* d, size_t n) : d_(d), n_(n) {}
  bool empty() const { return i_ >= n_; }
  uint8_t Byte() { return i_ < n_ ? d_[i_++] : 0; }
  float Float() {
    uint32_t bits = 0;
    for (int k = 0; k < 4; ++k) bits = (bits << 8) | Byte();
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    return f;
  }
  std::string Rest() {
    std::string s(reinterpret_cast<const char*>(d_ + i_), n_ - i_);
    i_ = n_;
    return s;
  }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t i_ = 0;
};

bool Invariants(const rlvr::v1::RolloutGroup& g, const rlvr::v1::WorkLease& lease,
                uint64_t published) {
  if (g.lease_id() != lease.lease_id() || g.prompt_id() != lease.prompt_id()) return false;
  if (g.completions_size() != lease.group_size()) return false;
  if (g.policy_version() > published) return false;
  for (const auto& c : g.completions()) {
    if (c.token_ids_size() == 0 || c.token_ids_size() > lease.sampling().max_new_tokens())
      return false;
    if (c.behaviour_logprobs_size() != c.token_ids_size()) return false;
    for (int t : c.token_ids()) {
      if (t < 0 || t >= kVocab) return false;
    }
    for (float lp : c.behaviour_logprobs()) {
      if (!std::isfinite(lp) || lp > 0) return false;
    }
    if (!std::isfinite(c.reward()) || c.reward() < 0 || c.reward() > 1) return false;
  }
  return true;
}

rlvr::v1::RolloutGroup ValidGroup(const rlvr::v1::WorkLease& lease, uint64_t version) {
  rlvr::v1::RolloutGroup g;
  g.set_lease_id(lease.lease_id());
  g.set_prompt_id(lease.prompt_id());
  g.set_policy_version(version);
  for (int i = 0; i < lease.group_size(); ++i) {
    auto* c = g.add_completions();
    for (int t = 0; t < 3; ++t) {
      c->add_token_ids((i + t) % kVocab);
      c->add_behaviour_logprobs(-0.5f);
    }
    c->set_reward(i % 2);
  }
  return g;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static auto* metrics =
      new rlvr::learner::LearnerMetrics(std::make_shared<prometheus::Registry>());
  Reader in(data, size);
  IngestOptions o;
  o.group_size = kGroup;
  o.sampling.max_new_tokens = kMaxNew;
  o.max_policy_lag = in.Byte() % 3;
  o.buffer_groups = 8;
  o.groups_per_update = 4;
  o.vocab_size = kVocab;
  o.eos_id = 1;
  std::vector<LeasePrompt> prompts;
  for (int i = 0; i < 6; ++i) prompts.push_back({"p" + std::to_string(i), {2, 3, 4}, "7"});
  Ingest ingest(o, prompts, metrics);
  const uint64_t published = 3;
  ingest.Publish(published);
  auto session = ingest.OpenSession(4);
  if (!session.ok()) std::abort();
  std::vector<rlvr::v1::WorkLease> leases = ingest.Grant(*session);
  if (leases.empty()) std::abort();  // A fresh session with credits must get leases.

  int rounds = 0;
  while (!in.empty() && rounds++ < 16) {
    uint8_t mode = in.Byte();
    const rlvr::v1::WorkLease& lease = leases[mode % leases.size()];
    rlvr::v1::RolloutGroup group;
    size_t wire = 0;
    // Checks one Ack against the group it answers.
    auto check = [&](const rlvr::v1::RolloutGroup& g, const rlvr::v1::Ack& ack) {
      if (ack.lease_id() != g.lease_id()) std::abort();
      if (ack.accepted()) {
        const rlvr::v1::WorkLease* owner = nullptr;
        for (const auto& l : leases) {
          if (l.lease_id() == g.lease_id()) owner = &l;
        }
        if (owner == nullptr || !Invariants(g, *owner, published)) std::abort();
      } else if (ack.reason() == rlvr::v1::REJECT_REASON_UNSPECIFIED) {
        std::abort();  // A refusal always names its reason.
      }
    };
    // A batch: one Ack per group, in order, each judged alone.
    auto submit_batch = [&](const rlvr::v1::RolloutBatch& batch) {
      google::protobuf::RepeatedPtrField<rlvr::v1::Ack> acks;
      ingest.SubmitBatch(*session, batch, &acks);
      if (acks.size() != batch.groups_size()) std::abort();
      for (int i = 0; i < acks.size(); ++i) check(batch.groups(i), acks.Get(i));
      for (auto& l : ingest.Grant(*session)) leases.push_back(l);
    };
    if (mode & 0x80) {
      rlvr::v1::ActorMessage msg;
      std::string bytes = in.Rest();
      if (!msg.ParseFromString(bytes)) continue;
      if (msg.has_group_batch()) {
        submit_batch(msg.group_batch());
        continue;
      }
      if (!msg.has_group()) continue;
      group = msg.group();
      wire = bytes.size();
    } else {
      group = ValidGroup(lease, published - (mode & 0x3));
      int edits = in.Byte() % 8;
      for (int e = 0; e < edits && !in.empty(); ++e) {
        uint8_t what = in.Byte();
        if (group.completions_size() == 0) break;
        auto* c = group.mutable_completions(in.Byte() % group.completions_size());
        switch (what % 9) {
          case 0:
            if (c->token_ids_size()) c->set_token_ids(0, static_cast<int8_t>(in.Byte()) * 3);
            break;
          case 1:
            if (c->behaviour_logprobs_size()) c->set_behaviour_logprobs(0, in.Float());
            break;
          case 2:
            c->set_reward(in.Float());
            break;
          case 3:
            c->add_token_ids(in.Byte() % 20);
            break;
          case 4:
            group.add_completions()->CopyFrom(*c);
            break;
          case 5:
            group.set_policy_version(in.Byte());
            break;
          case 6:
            group.set_lease_id(group.lease_id() + in.Byte());
            break;
          case 7:
            group.set_prompt_id(std::string(1, static_cast<char>('a' + in.Byte() % 3)));
            break;
          default:
            c->clear_token_ids();
            c->clear_behaviour_logprobs();
            break;
        }
      }
      wire = group.ByteSizeLong();
      if (mode & 0x40) {
        // The mutated group inside a batch, between valid groups for the
        // next leases: those must not be affected by it.
        rlvr::v1::RolloutBatch batch;
        const rlvr::v1::WorkLease& next = leases[(mode + 1) % leases.size()];
        *batch.add_groups() = ValidGroup(next, published);
        *batch.add_groups() = std::move(group);
        *batch.add_groups() = ValidGroup(leases[(mode + 2) % leases.size()], published);
        submit_batch(batch);
        continue;
      }
    }
    check(group, ingest.Submit(*session, group, wire));
    for (auto& l : ingest.Grant(*session)) leases.push_back(l);
  }
  ingest.CloseSession(*session);
  ingest.Stop();
  return 0;
}
