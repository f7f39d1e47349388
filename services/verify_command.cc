// `rlvr verify`: flags -> VerifyJsonlOptions -> VerifyJsonl (common/tasks/verify_jsonl.h)
// on a JSONL file; one JSON line per input line on stdout (or --output), a
// summary with the rate on stderr.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/config/flags.h"
#include "common/tasks/verify_jsonl.h"
#include "services/commands.h"

namespace rlvr::services {

int VerifyCommand(int argc, char** argv) {
  std::string input = "-";
  std::string output = "-";
  VerifyJsonlOptions options;
  FlagSet flags(
      "verify",
      "Scores completions against references with a verifier, showing why each\n"
      "reward is what it is. Reads JSONL lines\n"
      "  {\"completion\": \"...\", \"answer\": \"...\" or a number, \"verifier\": \"...\" "
      "(optional)}\n"
      "and prints one JSON line per input line, in order:\n"
      "  {\"reward\", \"extracted\" (the answer found in the completion),\n"
      "   \"parsed\": {\"completion\", \"answer\"} (each side's normal form; null when it did\n"
      "   not parse), \"well_formed\", \"reason\"}\n"
      "or {\"line\": N, \"error\": \"...\"} for a line that is not valid input. A summary\n"
      "(lines, correct, errors, lines/s) goes to stderr. Exit status: 0; 1 when a line\n"
      "was invalid or the files failed; 2 for bad flags. Verifiers and the math rules:\n"
      "docs/tasks.md.");
  flags.String("input", &input, "JSONL file to score; - reads stdin.");
  flags.String("output", &output, "Where the results go; - writes stdout.");
  flags.String("verifier", &options.verifier,
               "Verifier of lines without a \"verifier\" key: final_answer, gsm8k, boxed, exact "
               "or math.");
  flags.Double("format_reward", &options.verifier_options.format_reward,
               "Reward of a wrong but well-formed answer (task.format_reward).");
  flags.Double("math_relative_tolerance", &options.verifier_options.math_relative_tolerance,
               "math: relative tolerance of a decimal against an exact or irrational value "
               "(task.math_relative_tolerance).");
  flags.Int("threads", &options.threads, "Lines verified in parallel (output order is kept).");
  if (std::optional<int> exit_code = flags.ParseCommandLine(argc, argv)) return *exit_code;

  std::ifstream in_file;
  if (input != "-") {
    in_file.open(input);
    if (!in_file) {
      std::fprintf(stderr, "rlvr verify: cannot read %s\n", input.c_str());
      return 1;
    }
  }
  std::ofstream out_file;
  if (output != "-") {
    out_file.open(output, std::ios::out | std::ios::trunc);
    if (!out_file) {
      std::fprintf(stderr, "rlvr verify: cannot write %s\n", output.c_str());
      return 1;
    }
  }
  std::istream& in = input == "-" ? std::cin : in_file;
  std::ostream& out = output == "-" ? std::cout : out_file;
  std::ios::sync_with_stdio(false);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<VerifyJsonlStats> stats = VerifyJsonl(in, out, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!stats.ok()) {
    std::fprintf(stderr, "rlvr verify: %s\n", std::string(stats.status().message()).c_str());
    return stats.status().code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
  }
  const int64_t valid = stats->lines - stats->errors;
  std::fprintf(stderr,
               "rlvr verify: %lld lines: %lld correct (%.1f%%), %lld well formed, %lld invalid; "
               "mean reward %.4f; %.2f s, %.0f lines/s\n",
               static_cast<long long>(stats->lines), static_cast<long long>(stats->correct),
               valid > 0 ? 100.0 * static_cast<double>(stats->correct) / valid : 0.0,
               static_cast<long long>(stats->well_formed), static_cast<long long>(stats->errors),
               valid > 0 ? stats->reward_sum / valid : 0.0, seconds,
               seconds > 0 ? static_cast<double>(stats->lines) / seconds : 0.0);
  return stats->errors > 0 ? 1 : 0;
}

}  // namespace rlvr::services
