#include "common/tasks/verify_jsonl.h"

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace rlvr {
namespace {

struct Line {
  int64_t number = 0;  // 1-based line in the input
  std::string text;
  std::string output;  // the JSON line written for it
  bool error = false;
  double reward = 0;
  bool well_formed = false;
};

nlohmann::ordered_json OptionalString(const std::optional<std::string>& s) {
  return s.has_value() ? nlohmann::ordered_json(*s) : nlohmann::ordered_json(nullptr);
}

std::string Dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

class Scorer {
 public:
  Scorer(std::map<std::string, std::unique_ptr<Verifier>> verifiers, std::string default_name)
      : verifiers_(std::move(verifiers)), default_name_(std::move(default_name)) {}

  void Score(Line* line) const {
    auto fail = [&](const std::string& why) {
      line->error = true;
      line->output = Dump(nlohmann::ordered_json{{"line", line->number}, {"error", why}});
    };
    nlohmann::json j = nlohmann::json::parse(line->text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) return fail("invalid JSON");
    if (!j.is_object()) return fail("not a JSON object");
    auto completion = j.find("completion");
    if (completion == j.end() || !completion->is_string()) {
      return fail("\"completion\" must be a string");
    }
    auto answer = j.find("answer");
    std::string reference;
    if (answer != j.end() && answer->is_string()) {
      reference = answer->get<std::string>();
    } else if (answer != j.end() && answer->is_number()) {
      reference = answer->dump();
    } else {
      return fail("\"answer\" must be a string or a number");
    }
    std::string name = default_name_;
    if (auto v = j.find("verifier"); v != j.end()) {
      if (!v->is_string()) return fail("\"verifier\" must be a string");
      name = v->get<std::string>();
    }
    auto it = verifiers_.find(name);
    if (it == verifiers_.end()) {
      return fail(absl::StrCat("unknown verifier '", name, "'; known: ", KnownVerifierNames()));
    }
    const VerdictDetail d = it->second->Explain(reference, completion->get<std::string>());
    line->reward = d.verdict.reward;
    line->well_formed = d.well_formed;
    nlohmann::ordered_json out;
    out["reward"] = d.verdict.reward;
    out["extracted"] = d.extracted;
    out["parsed"] = nlohmann::ordered_json{{"completion", OptionalString(d.parsed_completion)},
                                           {"answer", OptionalString(d.parsed_answer)}};
    out["well_formed"] = d.well_formed;
    out["reason"] = d.verdict.reason;
    line->output = Dump(out);
  }

 private:
  std::map<std::string, std::unique_ptr<Verifier>> verifiers_;
  std::string default_name_;
};

// Scores lines[0..n) on `threads` threads (strided), joined before returning.
void ScoreBatch(const Scorer& scorer, std::vector<Line>* lines, int threads) {
  const size_t n = lines->size();
  const size_t workers = std::min<size_t>(static_cast<size_t>(threads), n);
  if (workers <= 1) {
    for (Line& l : *lines) scorer.Score(&l);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(workers);
  for (size_t w = 0; w < workers; ++w) {
    pool.emplace_back([&scorer, lines, w, workers, n] {
      for (size_t i = w; i < n; i += workers) scorer.Score(&(*lines)[i]);
    });
  }
  for (std::thread& t : pool) t.join();
}

}  // namespace

absl::StatusOr<VerifyJsonlStats> VerifyJsonl(std::istream& in, std::ostream& out,
                                             const VerifyJsonlOptions& options) {
  if (options.threads < 1) return absl::InvalidArgumentError("threads must be at least 1");
  if (options.batch_lines < 1) return absl::InvalidArgumentError("batch_lines must be at least 1");
  std::map<std::string, std::unique_ptr<Verifier>> verifiers;
  for (const char* name : {"final_answer", "gsm8k", "boxed", "exact", "math"}) {
    absl::StatusOr<std::unique_ptr<Verifier>> v = MakeVerifier(name, options.verifier_options);
    if (!v.ok()) return v.status();
    verifiers[name] = *std::move(v);
  }
  if (verifiers.find(options.verifier) == verifiers.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown verifier '", options.verifier, "'; known: ", KnownVerifierNames()));
  }
  const Scorer scorer(std::move(verifiers), options.verifier);
  VerifyJsonlStats stats;
  std::vector<Line> batch;
  int64_t number = 0;
  std::string text;
  bool more = true;
  while (more) {
    batch.clear();
    while (static_cast<int>(batch.size()) < options.batch_lines) {
      if (!std::getline(in, text)) {
        more = false;
        break;
      }
      ++number;
      if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
      Line line;
      line.number = number;
      line.text = std::move(text);
      batch.push_back(std::move(line));
    }
    ScoreBatch(scorer, &batch, options.threads);
    for (const Line& l : batch) {
      out << l.output << '\n';
      ++stats.lines;
      if (l.error) {
        ++stats.errors;
        continue;
      }
      stats.reward_sum += l.reward;
      if (l.reward == 1.0) ++stats.correct;
      if (l.well_formed) ++stats.well_formed;
    }
    if (!out) return absl::DataLossError("writing the output failed");
  }
  out.flush();
  if (!out) return absl::DataLossError("writing the output failed");
  return stats;
}

}  // namespace rlvr
