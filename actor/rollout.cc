#include "actor/rollout.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/base/splitmix.h"

namespace rlvr::actor {
namespace {

double SecondsSince(absl::Time t0) { return absl::ToDoubleSeconds(absl::Now() - t0); }

// Leases that may share one Generate call: identical sampling parameters
// (the seed is per row, so it is not part of the key).
using SamplingKey = std::tuple<float, int32_t, float, int32_t, std::vector<int32_t>>;

SamplingKey KeyOf(const rlvr::v1::SamplingParams& p) {
  return {p.temperature(), p.top_k(), p.top_p(), p.max_new_tokens(),
          std::vector<int32_t>(p.stop_token_ids().begin(), p.stop_token_ids().end())};
}

constexpr size_t kMaxReasonBytes = 256;

// Cuts `s` to at most kMaxReasonBytes without splitting a UTF-8 sequence
// (proto3 strings must stay valid UTF-8).
std::string TruncateReason(const std::string& s) {
  if (s.size() <= kMaxReasonBytes) return s;
  size_t n = kMaxReasonBytes;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n);
}

}  // namespace

uint64_t RowSeed(uint64_t lease_seed, int row_in_group) {
  return SplitMix64(SplitMix64(lease_seed) ^ static_cast<uint64_t>(row_in_group));
}

policy::SamplingOptions SamplingFromLease(const rlvr::v1::SamplingParams& params) {
  policy::SamplingOptions o;
  o.temperature = params.temperature();
  o.top_k = params.top_k();
  o.top_p = params.top_p();
  o.max_new_tokens = params.max_new_tokens();
  o.stop_token_ids.assign(params.stop_token_ids().begin(), params.stop_token_ids().end());
  o.greedy = false;
  return o;
}

absl::Status ValidateLease(const rlvr::v1::WorkLease& lease, int vocab_size, int max_seq_len) {
  if (lease.group_size() < 1 || lease.group_size() > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("group_size ", lease.group_size()));
  }
  if (lease.prompt_token_ids_size() == 0) return absl::InvalidArgumentError("empty prompt");
  for (int t : lease.prompt_token_ids()) {
    if (t < 0 || t >= vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrCat("prompt token ", t, " not in vocab ", vocab_size));
    }
  }
  const auto& s = lease.sampling();
  if (!(s.temperature() > 0) || !std::isfinite(s.temperature())) {
    return absl::InvalidArgumentError(absl::StrCat("temperature ", s.temperature()));
  }
  if (s.top_k() < 0 || !(s.top_p() > 0 && s.top_p() <= 1)) {
    return absl::InvalidArgumentError("top_k/top_p out of range");
  }
  if (s.max_new_tokens() < 1) {
    return absl::InvalidArgumentError(absl::StrCat("max_new_tokens ", s.max_new_tokens()));
  }
  for (int t : s.stop_token_ids()) {
    if (t < 0 || t >= vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat("stop token ", t, " not in vocab"));
    }
  }
  if (lease.prompt_token_ids_size() + s.max_new_tokens() > max_seq_len) {
    return absl::InvalidArgumentError(absl::StrCat("prompt (", lease.prompt_token_ids_size(),
                                                   ") + max_new_tokens (", s.max_new_tokens(),
                                                   ") exceeds max_seq_len ", max_seq_len));
  }
  return absl::OkStatus();
}

policy::EngineGroup EngineGroupFromLease(const rlvr::v1::WorkLease& lease) {
  policy::EngineGroup g;
  g.id = lease.lease_id();
  g.prompt.assign(lease.prompt_token_ids().begin(), lease.prompt_token_ids().end());
  g.options = SamplingFromLease(lease.sampling());
  for (int j = 0; j < lease.group_size(); ++j)
    g.seeds.push_back(RowSeed(lease.sampling().seed(), j));
  return g;
}

void BuildGroup(const rlvr::v1::WorkLease& lease, uint64_t version,
                absl::Span<const policy::Sample> samples, const Tokenizer& tokenizer,
                const Task& task, double seconds, rlvr::v1::RolloutGroup* group,
                GroupTally* tally) {
  group->set_lease_id(lease.lease_id());
  group->set_prompt_id(lease.prompt_id());
  group->set_policy_version(version);
  for (const policy::Sample& s : samples) {
    rlvr::v1::Completion* c = group->add_completions();
    c->mutable_token_ids()->Assign(s.tokens.begin(), s.tokens.end());
    c->mutable_behaviour_logprobs()->Assign(s.logprobs.begin(), s.logprobs.end());
    std::vector<int> text_tokens = s.tokens;
    if (s.stopped && !text_tokens.empty()) text_tokens.pop_back();
    const Verdict verdict = task.Verify(lease.answer(), tokenizer.Decode(text_tokens));
    c->set_reward(static_cast<float>(verdict.reward));
    c->set_verifier_reason(TruncateReason(verdict.reason));
    c->set_finish_reason(s.stopped ? rlvr::v1::FINISH_REASON_STOP : rlvr::v1::FINISH_REASON_LENGTH);
    tally->tokens += static_cast<int64_t>(s.tokens.size());
    tally->reward_sum += verdict.reward;
    ++tally->completions;
  }
  group->set_generation_seconds(seconds);
}

absl::StatusOr<BatchResult> GenerateGroups(policy::Transformer& model, uint64_t version,
                                           const Tokenizer& tokenizer, const Task& task,
                                           const std::vector<const rlvr::v1::WorkLease*>& leases,
                                           GroupPool* pool) {
  const auto t_start = absl::Now();
  BatchResult result;
  if (pool != nullptr) {
    result.groups = pool->Take(leases.size());
  } else {
    result.groups.resize(leases.size());
  }

  // Prompts as int vectors, once per lease; rows point into them.
  std::vector<std::vector<int>> prompts(leases.size());
  std::map<SamplingKey, std::vector<size_t>> by_sampling;
  for (size_t i = 0; i < leases.size(); ++i) {
    prompts[i].assign(leases[i]->prompt_token_ids().begin(), leases[i]->prompt_token_ids().end());
    by_sampling[KeyOf(leases[i]->sampling())].push_back(i);
  }

  for (const auto& [key, members] : by_sampling) {
    const policy::SamplingOptions options = SamplingFromLease(leases[members[0]]->sampling());
    std::vector<const std::vector<int>*> rows;
    std::vector<uint64_t> seeds;
    for (size_t i : members) {
      const auto& lease = *leases[i];
      for (int j = 0; j < lease.group_size(); ++j) {
        rows.push_back(&prompts[i]);
        seeds.push_back(RowSeed(lease.sampling().seed(), j));
      }
    }
    std::vector<policy::Sample> samples;
    const auto t_gen = absl::Now();
    try {
      samples = policy::Generate(model, rows, seeds, options, &result.generate);
    } catch (const std::exception& e) {
      return absl::InternalError(absl::StrCat("generation failed: ", e.what()));
    }
    result.generate_seconds += SecondsSince(t_gen);
    if (samples.size() != rows.size()) {
      return absl::InternalError(absl::StrCat("Generate returned ", samples.size(), " samples for ",
                                              rows.size(), " rows"));
    }

    size_t row = 0;
    GroupTally tally;
    for (size_t i : members) {
      const auto& lease = *leases[i];
      const absl::Span<const policy::Sample> rows_of_lease(samples.data() + row,
                                                           lease.group_size());
      row += lease.group_size();
      BuildGroup(lease, version, rows_of_lease, tokenizer, task, 0, &result.groups[i], &tally);
    }
    result.tokens += tally.tokens;
    result.reward_sum += tally.reward_sum;
    result.completions += tally.completions;
  }

  result.total_seconds = SecondsSince(t_start);
  for (auto& g : result.groups) g.set_generation_seconds(result.total_seconds);
  return result;
}

}  // namespace rlvr::actor
