#include "services/runner/cpu_list.h"

#include <sched.h>

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace rlvr::runner {
namespace {

constexpr int kMaxCpu = 4095;

absl::StatusOr<int> ParseCpu(absl::string_view s, absl::string_view text) {
  int cpu = -1;
  if (s.empty() || s.find_first_not_of("0123456789") != absl::string_view::npos ||
      !absl::SimpleAtoi(s, &cpu) || cpu > kMaxCpu) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a CPU list (numbers 0-",
                                                   kMaxCpu, " and ranges, e.g. \"0,2-3\")"));
  }
  return cpu;
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text) {
  std::vector<int> cpus;
  absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (trimmed.empty()) return cpus;
  for (absl::string_view part : absl::StrSplit(trimmed, ',')) {
    part = absl::StripAsciiWhitespace(part);
    std::vector<absl::string_view> ends = absl::StrSplit(part, absl::MaxSplits('-', 1));
    absl::StatusOr<int> first = ParseCpu(ends[0], text);
    if (!first.ok()) return first.status();
    int last = *first;
    if (ends.size() == 2) {
      absl::StatusOr<int> l = ParseCpu(ends[1], text);
      if (!l.ok()) return l.status();
      last = *l;
      if (last < *first) {
        return absl::InvalidArgumentError(
            absl::StrCat("'", text, "': range ", part, " is descending"));
      }
    }
    for (int c = *first; c <= last; ++c) cpus.push_back(c);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::vector<int> AllowedCpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

absl::StatusOr<std::vector<int>> ParseCpuListFor(absl::string_view key, absl::string_view text,
                                                 const std::vector<int>& allowed) {
  absl::StatusOr<std::vector<int>> cpus = ParseCpuList(text);
  if (!cpus.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config key '", key, "': ", cpus.status().message()));
  }
  for (int c : *cpus) {
    if (!std::binary_search(allowed.begin(), allowed.end(), c)) {
      return absl::InvalidArgumentError(
          absl::StrCat("config key '", key, "': CPU ", c,
                       " is not available (allowed: ", FormatCpuList(allowed), ")"));
    }
  }
  return cpus;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!out.empty()) out += ",";
    absl::StrAppend(&out, cpus[i]);
    if (j > i) absl::StrAppend(&out, "-", cpus[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace rlvr::runner
