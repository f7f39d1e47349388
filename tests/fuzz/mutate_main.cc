// A bounded random-mutation run of a fuzz target with the normal (gcc) build,
// for the test suite: no coverage guidance (scripts/fuzz runs libFuzzer with
// it), but every run of the suite feeds the target thousands of new inputs
// derived from its corpus. Usage:
//   <target>_mutate [--seconds S] [--runs N] [--seed K] [--dict FILE] [--hang_seconds H]
//                   DIR_OR_FILE...
// Stops after S seconds or N runs, whichever comes first. Mutations: byte
// flips, inserted and erased bytes and ranges, duplicated ranges, dictionary
// tokens (libFuzzer's dictionary format), splices of two inputs, digit runs
// made huge, bracket nesting. A crash (signal) or an input running longer than
// H seconds writes the input to ./mutate-crash-<run> and fails; the message
// says which file, so that it can be added to tests/fuzz/regressions/.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

// The input being run, for the signal handler (written before each run).
std::string g_current;
char g_crash_path[64] = "mutate-crash";

void WriteCurrentAndDie(int sig) {
  const int fd = open(g_crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    ssize_t ignored = write(fd, g_current.data(), g_current.size());
    (void)ignored;
    close(fd);
  }
  const char* what = sig == SIGALRM ? "mutate: an input ran too long (hang); it is in "
                                    : "mutate: the target crashed; the input is in ";
  ssize_t ignored = write(2, what, strlen(what));
  ignored = write(2, g_crash_path, strlen(g_crash_path));
  ignored = write(2, "\n", 1);
  (void)ignored;
  signal(sig == SIGALRM ? SIGABRT : sig, SIG_DFL);
  raise(sig == SIGALRM ? SIGABRT : sig);
}

uint64_t g_state = 1;
uint64_t Next() {
  // SplitMix64.
  uint64_t z = (g_state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
size_t Below(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }

// Tokens of a libFuzzer dictionary: lines `name="value"` or `"value"` with
// \\, \" and \xNN escapes.
std::vector<std::string> LoadDict(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    const size_t open = line.find('"');
    const size_t close = line.rfind('"');
    if (line.empty() || line[0] == '#' || open == std::string::npos || close <= open) continue;
    std::string token;
    for (size_t i = open + 1; i < close; ++i) {
      if (line[i] == '\\' && i + 1 < close) {
        const char c = line[++i];
        if (c == 'x' && i + 2 < close) {
          token.push_back(static_cast<char>(std::stoi(line.substr(i + 1, 2), nullptr, 16)));
          i += 2;
        } else {
          token.push_back(c);
        }
      } else {
        token.push_back(line[i]);
      }
    }
    out.push_back(token);
  }
  return out;
}

std::string Mutate(const std::vector<std::string>& corpus, const std::vector<std::string>& dict) {
  std::string s = corpus[Below(corpus.size())];
  const int steps = 1 + static_cast<int>(Below(4));
  for (int k = 0; k < steps; ++k) {
    const size_t pos = Below(s.size() + 1);
    switch (Below(9)) {
      case 0:
        if (!s.empty()) s[Below(s.size())] ^= static_cast<char>(1u << Below(8));
        break;
      case 1:
        s.insert(pos, 1, static_cast<char>(Below(256)));
        break;
      case 2:
        if (!s.empty()) s.erase(Below(s.size()), 1 + Below(8));
        break;
      case 3: {
        if (s.empty()) break;
        const size_t from = Below(s.size());
        s.insert(pos, s.substr(from, 1 + Below(16)));
        break;
      }
      case 4:
      case 5:
        if (!dict.empty()) s.insert(pos, dict[Below(dict.size())]);
        break;
      case 6: {
        const std::string& other = corpus[Below(corpus.size())];
        s = s.substr(0, pos) + other.substr(Below(other.size() + 1));
        break;
      }
      case 7:
        s.insert(pos, std::string(1 + Below(40), static_cast<char>('0' + Below(10))));
        break;
      case 8: {
        const size_t n = 1 + Below(100);
        s.insert(pos, std::string(n, "({[|"[Below(4)]));
        break;
      }
    }
    if (s.size() > 8192) s.resize(8192);
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  double seconds = 10;
  long long runs = 100000;
  int hang_seconds = 10;
  std::string dict_path;
  std::vector<fs::path> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--seconds") {
      seconds = std::atof(value().c_str());
    } else if (a == "--runs") {
      runs = std::atoll(value().c_str());
    } else if (a == "--seed") {
      g_state = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--dict") {
      dict_path = value();
    } else if (a == "--hang_seconds") {
      hang_seconds = std::atoi(value().c_str());
    } else if (fs::is_directory(a)) {
      for (const auto& e : fs::recursive_directory_iterator(a)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else if (fs::is_regular_file(a)) {
      files.push_back(a);
    }
  }
  std::vector<std::string> corpus;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    corpus.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (corpus.empty()) {
    std::fprintf(stderr, "mutate: no inputs found\n");
    return 1;
  }
  const std::vector<std::string> dict =
      dict_path.empty() ? std::vector<std::string>{} : LoadDict(dict_path);
  for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL, SIGALRM})
    signal(sig, WriteCurrentAndDie);
  const auto start = std::chrono::steady_clock::now();
  long long done = 0;
  for (; done < runs; ++done) {
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >=
        seconds) {
      break;
    }
    g_current = Mutate(corpus, dict);
    std::snprintf(g_crash_path, sizeof(g_crash_path), "mutate-crash-%lld", done);
    alarm(static_cast<unsigned>(hang_seconds));
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(g_current.data()), g_current.size());
    alarm(0);
  }
  std::printf("mutate: %lld runs on %zu corpus inputs and %zu dictionary tokens in %.1f s, clean\n",
              done, corpus.size(), dict.size(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return 0;
}
