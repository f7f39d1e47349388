// Verifier benchmark: lines/s of `rlvr verify`'s engine (VerifyJsonl,
// common/tasks/verify_jsonl.h) with the math verifier on generated rollouts,
// against the boxed verifier (normalised strings) on the same lines in the
// same run, and with several threads. Each completion is ~600 characters of
// reasoning text with math spans, then a boxed answer in one of a dozen
// spellings (integers, fractions, radicals, pi, sets, intervals, tuples,
// expressions in x, equations, matrices, percentages, text), right or wrong.
//
// usage: verify_bench [--lines N=100000] [--threads T=2] [--write FILE]
//   --write FILE: only write the generated JSONL (for timing `rlvr verify`).
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/base/splitmix.h"
#include "common/tasks/verify_jsonl.h"

namespace {

struct Pair {
  const char* reference;
  const char* right;
  const char* wrong;
};

// Reference, an equivalent spelling, a near miss.
const Pair kPairs[] = {
    {"72", "72", "73"},
    {"\\frac{7}{8}", "0.875", "\\frac{8}{7}"},
    {"\\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt3}{2}", "\\frac{\\sqrt{2}}{2}"},
    {"2\\pi", "6.2831853", "\\pi"},
    {"\\{1, 2, 3\\}", "\\{3, 2, 1\\}", "\\{1, 2\\}"},
    {"[0, 1)", "\\left[0, 1\\right)", "(0, 1)"},
    {"(3, -1)", "\\left( 3, -1 \\right)", "(-1, 3)"},
    {"x^2 - 1", "(x+1)(x-1)", "x^2 + 1"},
    {"y = 2x + 1", "2x + 1", "y = 2x - 1"},
    {"\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}",
     "\\begin{bmatrix} 1 & 2 \\\\ 3 & 4 \\end{bmatrix}",
     "\\begin{pmatrix} 1 & 3 \\\\ 2 & 4 \\end{pmatrix}"},
    {"25\\%", "0.25", "2.5"},
    {"\\text{Monday}", "\\text{monday}", "\\text{Tuesday}"},
    {"1 \\pm \\sqrt{5}", "1+\\sqrt{5}, 1-\\sqrt{5}", "1+\\sqrt{5}"},
    {"12,000", "12000", "12,001"},
};

std::string Reasoning(uint64_t* state) {
  static const char* kWords[] = {"so",  "we",    "have", "the",  "sum",   "of",  "both",
                                 "is",  "then",  "each", "term", "gives", "and", "hence",
                                 "let", "first", "note", "that", "it",    "by",  "parts"};
  std::string s = "Let me work through this step by step. ";
  while (s.size() < 600) {
    *state = rlvr::SplitMix64(*state);
    const uint64_t r = *state;
    if (r % 9 == 0) {
      s += "$" + std::to_string(r % 97) + " + " + std::to_string((r >> 8) % 89) + " = " +
           std::to_string(r % 97 + (r >> 8) % 89) + "$ ";
    } else if (r % 9 == 1) {
      s += "\\frac{" + std::to_string(r % 13 + 1) + "}{" + std::to_string((r >> 4) % 7 + 2) + "} ";
    } else {
      s += std::string(kWords[r % (sizeof(kWords) / sizeof(kWords[0]))]) + " ";
    }
  }
  return s;
}

std::string Generate(int lines) {
  std::string out;
  uint64_t state = 20261128;
  const int n_pairs = sizeof(kPairs) / sizeof(kPairs[0]);
  for (int i = 0; i < lines; ++i) {
    const Pair& p = kPairs[i % n_pairs];
    state = rlvr::SplitMix64(state);
    const bool right = state % 2 == 0;
    const std::string completion = Reasoning(&state) + "Therefore the answer is $\\boxed{" +
                                   (right ? p.right : p.wrong) + "}$.";
    nlohmann::json j = {{"completion", completion}, {"answer", p.reference}};
    out += j.dump() + "\n";
  }
  return out;
}

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct Run {
  double wall = 0;
  double cpu = 0;
  rlvr::VerifyJsonlStats stats;
};

Run Time(const std::string& input, const std::string& verifier, int threads) {
  rlvr::VerifyJsonlOptions options;
  options.verifier = verifier;
  options.threads = threads;
  std::istringstream in(input);
  std::ostringstream out;
  const double cpu0 = ThreadCpuSeconds();
  const auto t0 = std::chrono::steady_clock::now();
  absl::StatusOr<rlvr::VerifyJsonlStats> stats = rlvr::VerifyJsonl(in, out, options);
  Run r;
  r.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu = ThreadCpuSeconds() - cpu0;
  if (!stats.ok()) {
    std::fprintf(stderr, "verify_bench: %s\n", std::string(stats.status().message()).c_str());
    std::exit(1);
  }
  r.stats = *stats;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int lines = 100000;
  int threads = 2;
  std::string write;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--lines") {
      lines = std::atoi(argv[i + 1]);
    } else if (flag == "--threads") {
      threads = std::atoi(argv[i + 1]);
    } else if (flag == "--write") {
      write = argv[i + 1];
    } else {
      std::fprintf(stderr, "usage: verify_bench [--lines N] [--threads T] [--write FILE]\n");
      return 2;
    }
  }
  const std::string input = Generate(lines);
  if (!write.empty()) {
    std::ofstream(write) << input;
    std::printf("wrote %d lines (%.1f MB) to %s\n", lines, input.size() / 1e6, write.c_str());
    return 0;
  }
  std::printf("verify_bench: %d generated rollouts, %.1f MB (%.0f bytes/line)\n", lines,
              input.size() / 1e6, static_cast<double>(input.size()) / lines);
  const Run boxed = Time(input, "boxed", 1);
  const Run math = Time(input, "math", 1);
  const Run math_t = Time(input, "math", threads);
  auto print = [&](const char* name, const Run& r) {
    std::printf("  %-18s %8.0f lines/s wall (%.2f s), %8.0f lines/s per CPU second; %lld correct\n",
                name, lines / r.wall, r.wall, lines / r.cpu,
                static_cast<long long>(r.stats.correct));
  };
  print("boxed, 1 thread", boxed);
  print("math, 1 thread", math);
  char label[32];
  std::snprintf(label, sizeof(label), "math, %d threads", threads);
  print(label, math_t);
  std::printf("  math / boxed time per line (CPU): %.2f\n", math.cpu / boxed.cpu);
  // Half the lines carry the right spelling: the math verifier must find them.
  if (math.stats.correct != math_t.stats.correct || math.stats.correct < lines / 2 - lines / 20) {
    std::printf("FAIL: math verifier found %lld correct of ~%d\n",
                static_cast<long long>(math.stats.correct), lines / 2);
    return 1;
  }
  return 0;
}
