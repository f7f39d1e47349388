#include "common/policy/hf_fixture_testing.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/policy/logprobs.h"

namespace rlvr::policy::hf_fixtures {
namespace {

torch::Tensor Row(const std::vector<int>& ids) {
  return torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kInt64).unsqueeze(0);
}

// Log-softmax over the last dimension in float32 on the model's device (as
// rlvr's score and log-prob paths widen reduced-precision logits).
torch::Tensor LogSoftmax(const torch::Tensor& logits) {
  return torch::log_softmax(logits.to(torch::kFloat32), -1);
}

// logp [N, V] at (row n, ids[n]) for each row, on the CPU in float64.
torch::Tensor Picked(const torch::Tensor& logp, const std::vector<int64_t>& ids) {
  torch::Tensor index = torch::tensor(ids, torch::kInt64).to(logp.device()).unsqueeze(1);
  return logp.gather(1, index).squeeze(1).to(torch::kCPU, torch::kFloat64);
}

}  // namespace

std::vector<std::string> HfFixtureNames() {
  return {"qwen2_f32_tied", "qwen3_f32_tied", "qwen3_bf16_untied_sharded",
          "llama_f32_tied_rope_llama3", "llama_bf16_untied_bias"};
}

std::string HfFixtureDir(const std::string& name) {
  const char* src = std::getenv("RLVR_SOURCE_DIR");
  return std::string(src != nullptr ? src : ".") + "/tests/data/hf/" + name;
}

std::vector<ExpectedSequence> ReadHfExpected(const std::string& dir) {
  std::ifstream in(dir + "/expected.json", std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str());
  std::vector<ExpectedSequence> out;
  for (const nlohmann::json& s : j["sequences"]) {
    out.push_back({s["ids"].get<std::vector<int>>(), s["logprobs"].get<std::vector<double>>(),
                   s["greedy"].get<std::vector<int>>(),
                   s["greedy_margin"].get<std::vector<double>>()});
  }
  return out;
}

FixtureDiff SingleSequenceDiff(Transformer& model, const std::vector<ExpectedSequence>& seqs,
                               double greedy_margin) {
  torch::NoGradGuard no_grad;
  FixtureDiff diff;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const ExpectedSequence& seq = seqs[s];
    const torch::Tensor logp = LogSoftmax(model->forward(Row(seq.ids)))[0];  // [L, V]
    const int64_t n = static_cast<int64_t>(seq.ids.size());
    const torch::Tensor argmax = logp.argmax(-1).cpu();
    auto am = argmax.accessor<int64_t, 1>();
    if (n > 1) {
      const torch::Tensor picked = Picked(logp.narrow(0, 0, n - 1),
                                          std::vector<int64_t>(seq.ids.begin() + 1, seq.ids.end()));
      auto lp = picked.accessor<double, 1>();
      for (int64_t i = 0; i + 1 < n; ++i) {
        diff.max_abs = std::max(diff.max_abs, std::abs(lp[i] - seq.logprobs[i]));
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      if (greedy_margin < 0 || seq.margin[i] <= greedy_margin) continue;
      ++diff.greedy_checked;
      if (am[i] != seq.greedy[i]) {
        if (diff.greedy_mismatches++ == 0) {
          diff.first_mismatch = absl::StrCat("sequence ", s, " position ", i, ": got ", am[i],
                                             ", want ", seq.greedy[i]);
        }
      }
    }
  }
  return diff;
}

double BatchDiff(Transformer& model, const std::vector<ExpectedSequence>& seqs) {
  torch::NoGradGuard no_grad;
  std::vector<std::vector<int>> prompts, completions;
  for (size_t r = 0; r < seqs.size(); ++r) {
    const auto& ids = seqs[r].ids;
    const size_t p = r % 2 == 0 ? 1 : ids.size() / 2;  // Prompt lengths differ too.
    prompts.emplace_back(ids.begin(), ids.begin() + p);
    completions.emplace_back(ids.begin() + p, ids.end());
  }
  std::vector<const std::vector<int>*> pp, cp;
  for (size_t r = 0; r < seqs.size(); ++r) {
    pp.push_back(&prompts[r]);
    cp.push_back(&completions[r]);
  }
  CompletionLogProbs out = ComputeCompletionLogProbs(model, pp, cp, /*with_entropy=*/false);
  torch::Tensor host = out.logprobs.to(torch::kCPU, torch::kFloat64);
  auto lp = host.accessor<double, 2>();
  double worst = 0;
  for (size_t r = 0; r < seqs.size(); ++r) {
    const size_t p = prompts[r].size();
    for (size_t t = 0; t < completions[r].size(); ++t) {
      worst = std::max(worst, std::abs(lp[r][t] - seqs[r].logprobs[p - 1 + t]));
    }
  }
  return worst;
}

double DecodeDiff(Transformer& model, const std::vector<ExpectedSequence>& seqs) {
  torch::NoGradGuard no_grad;
  const int64_t b = static_cast<int64_t>(seqs.size());
  std::vector<int64_t> prompt_len, total_len;
  int64_t max_prompt = 0, max_rest = 0;
  for (int64_t r = 0; r < b; ++r) {
    const int64_t n = static_cast<int64_t>(seqs[r].ids.size());
    prompt_len.push_back(std::max<int64_t>(1, n / 3 + r));
    total_len.push_back(n);
    max_prompt = std::max(max_prompt, prompt_len[r]);
    max_rest = std::max(max_rest, n - prompt_len[r]);
  }
  torch::Tensor tokens = torch::zeros({b, max_prompt}, torch::kInt64);
  torch::Tensor positions = torch::zeros({b, max_prompt}, torch::kInt64);
  torch::Tensor bias = torch::zeros({b, 1, 1, max_prompt}, torch::kFloat32);
  for (int64_t r = 0; r < b; ++r) {
    const int64_t pad = max_prompt - prompt_len[r];
    for (int64_t j = 0; j < max_prompt; ++j) {
      if (j < pad) {
        bias[r][0][0][j] = -1e9;
      } else {
        tokens[r][j] = seqs[r].ids[j - pad];
        positions[r][j] = j - pad;
      }
    }
  }
  KvCache cache = model->NewCache(b, max_prompt + max_rest);
  cache.key_bias.narrow(3, 0, max_prompt).copy_(bias);
  cache.has_key_bias = true;
  torch::Tensor logits = model->ForwardWithPositions(tokens, positions, torch::Tensor(), &cache)
                             .select(1, max_prompt - 1);
  double worst = 0;
  for (int64_t step = 0;; ++step) {
    // Row r predicts ids[i + 1] from position i = prompt_len[r] - 1 + step.
    std::vector<int64_t> target(b, 0);
    bool any = false;
    for (int64_t r = 0; r < b; ++r) {
      const int64_t i = prompt_len[r] - 1 + step;
      if (i + 1 < total_len[r]) {
        target[r] = seqs[r].ids[i + 1];
        any = true;
      }
    }
    if (!any) break;
    const torch::Tensor picked = Picked(LogSoftmax(logits), target);
    auto lp = picked.accessor<double, 1>();
    torch::Tensor next = torch::zeros({b, 1}, torch::kInt64);
    torch::Tensor pos = torch::zeros({b, 1}, torch::kInt64);
    for (int64_t r = 0; r < b; ++r) {
      const int64_t i = prompt_len[r] - 1 + step;
      if (i + 1 >= total_len[r]) continue;
      worst = std::max(worst, std::abs(lp[r] - seqs[r].logprobs[i]));
      next[r][0] = target[r];
      pos[r][0] = i + 1;
    }
    if (step + 1 > max_rest) break;
    logits = model->ForwardWithPositions(next, pos, torch::Tensor(), &cache).select(1, 0);
  }
  return worst;
}

}  // namespace rlvr::policy::hf_fixtures
