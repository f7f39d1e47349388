#include "common/policy/evaluate.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "common/policy/model.h"
#include "common/policy/sampler.h"

namespace rlvr::policy {
namespace {
constexpr size_t kRowsPerBatch = 64;  // Rows generated together.
}  // namespace

absl::StatusOr<EvalResult> Evaluate(Transformer& model, const Tokenizer& tokenizer,
                                    const Task& task, const std::vector<Prompt>& prompts, int k,
                                    double temperature, int max_new_tokens, uint64_t seed,
                                    const std::function<void(const EvalProgress&)>& on_progress) {
  if (k < 0) return absl::InvalidArgumentError("eval: k must be >= 0");
  std::vector<std::vector<int>> encoded;
  encoded.reserve(prompts.size());
  for (const Prompt& p : prompts) {
    auto ids = EncodePrompt(tokenizer, p.text);
    if (!ids.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("eval: prompt ", p.id, ": ", ids.status().message()));
    }
    encoded.push_back(*std::move(ids));
  }
  EvalResult result;
  result.prompts = static_cast<int>(prompts.size());
  result.k = k;
  if (prompts.empty()) return result;
  try {
    // Rows: (prompt, sample) pairs; sample -1 is the greedy one.
    auto run = [&](bool greedy, int samples_per_prompt, std::vector<int>* correct) {
      if (greedy) result.greedy.assign(prompts.size(), GreedyCompletion{});
      SamplingOptions options;
      options.greedy = greedy;
      options.temperature = temperature;
      options.max_new_tokens = max_new_tokens;
      options.stop_token_ids = task.stop_ids();
      if (options.stop_token_ids.empty()) options.stop_token_ids = {tokenizer.eos_id()};
      const size_t rows = prompts.size() * samples_per_prompt;
      for (size_t begin = 0; begin < rows; begin += kRowsPerBatch) {
        const size_t end = std::min(rows, begin + kRowsPerBatch);
        std::vector<const std::vector<int>*> batch;
        std::vector<uint64_t> seeds;
        for (size_t row = begin; row < end; ++row) {
          batch.push_back(&encoded[row / samples_per_prompt]);
          seeds.push_back(seed * 1000003ULL + row);
        }
        std::vector<Sample> out = Generate(model, batch, seeds, options);
        for (size_t row = begin; row < end; ++row) {
          const Prompt& p = prompts[row / samples_per_prompt];
          std::string text = CompletionText(tokenizer, out[row - begin].tokens);
          Verdict v = task.Verify(p.answer, text);
          if (v.reward >= 1.0) (*correct)[row / samples_per_prompt] += 1;
          if (greedy) {
            result.greedy[row] = GreedyCompletion{std::move(text), v.reason, v.reward >= 1.0};
          }
        }
        if (on_progress) {
          on_progress(EvalProgress{greedy ? "greedy" : absl::StrCat("pass@", samples_per_prompt),
                                   static_cast<int>(end / samples_per_prompt),
                                   static_cast<int>(prompts.size())});
        }
      }
    };
    std::vector<int> greedy_correct(prompts.size(), 0);
    run(/*greedy=*/true, 1, &greedy_correct);
    int greedy_hits = 0;
    for (int c : greedy_correct) greedy_hits += c > 0;
    result.greedy_accuracy = double(greedy_hits) / prompts.size();
    if (k > 0) {
      std::vector<int> sample_correct(prompts.size(), 0);
      run(/*greedy=*/false, k, &sample_correct);
      int pass = 0;
      int64_t hits = 0;
      for (int c : sample_correct) {
        pass += c > 0;
        hits += c;
      }
      result.pass_at_k = double(pass) / prompts.size();
      result.sample_accuracy = double(hits) / (double(prompts.size()) * k);
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("eval: ", e.what()));
  }
  return result;
}

}  // namespace rlvr::policy
