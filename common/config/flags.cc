#include "common/config/flags.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rlvr {

FlagSet::FlagSet(std::string command, std::string summary)
    : command_(std::move(command)), summary_(std::move(summary)) {}

void FlagSet::String(std::string name, std::string* out, std::string help) {
  flags_.push_back({std::move(name), out, std::move(help), absl::StrCat("\"", *out, "\"")});
}
void FlagSet::Int(std::string name, int* out, std::string help) {
  flags_.push_back({std::move(name), out, std::move(help), absl::StrCat(*out)});
}
void FlagSet::Int64(std::string name, int64_t* out, std::string help) {
  flags_.push_back({std::move(name), out, std::move(help), absl::StrCat(*out)});
}
void FlagSet::Double(std::string name, double* out, std::string help) {
  flags_.push_back({std::move(name), out, std::move(help), absl::StrCat(*out)});
}
void FlagSet::Bool(std::string name, bool* out, std::string help) {
  flags_.push_back({std::move(name), out, std::move(help), *out ? "true" : "false"});
}
void FlagSet::StringList(std::string name, std::vector<std::string>* out, std::string help) {
  flags_.push_back(
      {std::move(name), out, std::move(help), absl::StrCat("[", absl::StrJoin(*out, ", "), "]")});
}

FlagSet::Flag* FlagSet::Find(const std::string& name) {
  for (auto& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

absl::Status FlagSet::Set(Flag& f, const std::string& value) {
  auto bad = [&](absl::string_view expected) {
    return absl::InvalidArgumentError(
        absl::StrCat("flag --", f.name, ": expected ", expected, ", got '", value, "'"));
  };
  if (auto* p = std::get_if<std::string*>(&f.out)) {
    **p = value;
  } else if (auto* p = std::get_if<std::vector<std::string>*>(&f.out)) {
    (*p)->push_back(value);
  } else if (auto* p = std::get_if<bool*>(&f.out)) {
    if (value == "true" || value == "1") {
      **p = true;
    } else if (value == "false" || value == "0") {
      **p = false;
    } else {
      return bad("true or false");
    }
  } else if (auto* p = std::get_if<double*>(&f.out)) {
    errno = 0;
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || errno || *end != '\0' || !std::isfinite(v)) return bad("a number");
    **p = v;
  } else {
    errno = 0;
    char* end = nullptr;
    long long v = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || errno || *end != '\0') return bad("an integer");
    if (auto* pi = std::get_if<int*>(&f.out)) {
      if (v < INT32_MIN || v > INT32_MAX) return bad("a 32-bit integer");
      **pi = static_cast<int>(v);
    } else {
      *std::get<int64_t*>(f.out) = v;
    }
  }
  return absl::OkStatus();
}

absl::Status FlagSet::Parse(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h" || arg == "-help") {
      help_requested_ = true;
      continue;
    }
    if (arg.size() < 3 || arg.compare(0, 2, "--") != 0) {
      positional_.push_back(arg);
      continue;
    }
    std::string body = arg.substr(2);
    std::string name = body, value;
    bool has_value = false;
    if (size_t eq = body.find('='); eq != std::string::npos) {
      name = body.substr(0, eq);
      value = body.substr(eq + 1);
      has_value = true;
    }
    Flag* f = Find(name);
    if (f == nullptr && !has_value && name.compare(0, 2, "no") == 0) {
      Flag* neg = Find(name.substr(2));
      if (neg != nullptr && std::holds_alternative<bool*>(neg->out)) {
        *std::get<bool*>(neg->out) = false;
        continue;
      }
    }
    if (f == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown flag --", name, " for 'rlvr ", command_, "' (see --help)"));
    }
    if (!has_value) {
      if (std::holds_alternative<bool*>(f->out)) {
        *std::get<bool*>(f->out) = true;
        continue;
      }
      if (i + 1 >= argc) {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      }
      value = argv[++i];
    }
    if (absl::Status s = Set(*f, value); !s.ok()) return s;
  }
  return absl::OkStatus();
}

std::optional<int> FlagSet::ParseCommandLine(int argc, char** argv) {
  if (absl::Status s = Parse(argc - 1, argv + 1); !s.ok()) {
    std::fprintf(stderr, "rlvr %s: %s\n", command_.c_str(), std::string(s.message()).c_str());
    return 2;
  }
  if (help_requested_) {
    std::printf("%s", Usage().c_str());
    return 0;
  }
  return std::nullopt;
}

std::string FlagSet::Usage() const {
  std::string out =
      absl::StrCat("usage: rlvr ", command_, " [flags]\n\n", summary_, "\n\nflags:\n");
  for (const auto& f : flags_) {
    absl::StrAppend(&out, "  --", f.name, " (default ", f.default_text, ")\n      ", f.help, "\n");
  }
  absl::StrAppend(&out, "  --help\n      Print this message and exit.\n");
  return out;
}

}  // namespace rlvr
