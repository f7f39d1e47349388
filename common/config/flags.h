// Command-line flags for one subcommand of the `rlvr` CLI.
//
// Flags are `--name=value` or `--name value`; booleans also accept `--name`
// and `--noname`; list flags may repeat (`--set a=1 --set b=2`). Parsing is
// strict: an unknown flag or a bad value is an error naming the flag.
// Thread-compatible; used only by `main`s in services/.
#ifndef RLVR_COMMON_CONFIG_FLAGS_H_
#define RLVR_COMMON_CONFIG_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"

namespace rlvr {

class FlagSet {
 public:
  FlagSet(std::string command, std::string summary);

  // Registration: `out` holds the default and receives the parsed value.
  void String(std::string name, std::string* out, std::string help);
  void Int(std::string name, int* out, std::string help);
  void Int64(std::string name, int64_t* out, std::string help);
  void Double(std::string name, double* out, std::string help);
  void Bool(std::string name, bool* out, std::string help);
  void StringList(std::string name, std::vector<std::string>* out, std::string help);

  // Parses argv[0..argc) (the arguments after the subcommand name).
  absl::Status Parse(int argc, char** argv);

  // What every `rlvr <command>` main does with its arguments: parses
  // argv[1..argc) (argv[0] is the subcommand); on a bad flag prints
  // "rlvr <command>: <error>" to stderr and returns 2; on --help prints
  // Usage() to stdout and returns 0; otherwise returns nullopt (go on).
  std::optional<int> ParseCommandLine(int argc, char** argv);

  // True if --help or -h was given; the caller prints Usage() and exits 0.
  bool help_requested() const { return help_requested_; }
  // Arguments that are not flags, in order.
  const std::vector<std::string>& positional() const { return positional_; }
  // "usage: rlvr <command> [flags]" with each flag, its default and help.
  std::string Usage() const;

 private:
  struct Flag {
    std::string name;
    std::variant<std::string*, int*, int64_t*, double*, bool*, std::vector<std::string>*> out;
    std::string help;
    std::string default_text;
  };
  Flag* Find(const std::string& name);
  absl::Status Set(Flag& f, const std::string& value);

  std::string command_;
  std::string summary_;
  std::vector<Flag> flags_;
  std::vector<std::string> positional_;
  bool help_requested_ = false;
};

}  // namespace rlvr

#endif  // RLVR_COMMON_CONFIG_FLAGS_H_
