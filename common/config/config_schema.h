// A typed, schema-checked configuration binder.
//
// A schema maps dotted key paths ("loss.clip_eps") to fields of a plain
// struct, with a type, an allowed range or set, and a help line. Loading YAML
// through a schema is strict: an unknown key, a value of the wrong type or one
// outside its range is an error whose message names the key path and what was
// expected. Keys absent from the YAML keep the struct's defaults.
//
// Thread safety: a ConfigSchema is used by one thread; it holds raw pointers
// into the struct it describes, which must outlive it.
#ifndef RLVR_COMMON_CONFIG_CONFIG_SCHEMA_H_
#define RLVR_COMMON_CONFIG_CONFIG_SCHEMA_H_

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace rlvr {

class ConfigSchema {
 public:
  ConfigSchema() = default;
  ConfigSchema(const ConfigSchema&) = delete;
  ConfigSchema& operator=(const ConfigSchema&) = delete;

  // Registration. `path` is dotted, unique; ranges are inclusive.
  void Int(std::string path, int* field, int64_t min, int64_t max, std::string help);
  void Int64(std::string path, int64_t* field, int64_t min, int64_t max, std::string help);
  void Double(std::string path, double* field, double min, double max, std::string help);
  void Bool(std::string path, bool* field, std::string help);
  void String(std::string path, std::string* field, std::string help);
  // A string restricted to `allowed`.
  void Enum(std::string path, std::string* field, std::vector<std::string> allowed,
            std::string help);
  // A list of integers, each within [min, max].
  void IntList(std::string path, std::vector<int>* field, int64_t min, int64_t max,
               std::string help);
  // `old_path` is an earlier name of the registered `new_path`: still
  // accepted (YAML and overrides), with a warning on stderr; setting both in
  // one document is an error. ToYaml and Help show only the new name.
  void Renamed(std::string old_path, std::string new_path);

  // Applies a YAML document (a mapping, possibly nested, or empty). Errors:
  // InvalidArgument naming the key path for unknown keys, wrong types, values
  // out of range; a YAML syntax error names the line. On error the struct may
  // be partially updated: callers load into a fresh struct.
  absl::Status ApplyYaml(absl::string_view yaml_text, absl::string_view source_name);

  // Applies one "key.path=value" override; the value is parsed as YAML scalar
  // (or flow list for list fields) with the same checks as ApplyYaml.
  absl::Status ApplyOverride(absl::string_view assignment);

  // The current values of every field as a nested YAML document, in
  // registration order; re-loading it reproduces the same values.
  std::string ToYaml() const;

  // One line per key: path, type, current value, help.
  std::string Help() const;

 private:
  struct Entry {
    std::string path;
    std::variant<int*, int64_t*, double*, bool*, std::string*, std::vector<int>*> field;
    int64_t imin = 0, imax = 0;
    double dmin = 0, dmax = 0;
    std::vector<std::string> allowed;  // Enum only.
    std::string help;
  };
  // The entry of `path`, or of the new name when `path` is an old one.
  const Entry* Find(absl::string_view path) const;
  absl::Status SetFromText(const Entry& e, absl::string_view text, bool is_sequence,
                           const std::vector<std::string>& items);
  std::string ValueText(const Entry& e) const;
  std::string TypeName(const Entry& e) const;

  std::vector<Entry> entries_;
  std::vector<std::pair<std::string, std::string>> renamed_;  // Old path, new path.
  friend class ConfigSchemaYamlWalker;
};

}  // namespace rlvr

#endif  // RLVR_COMMON_CONFIG_CONFIG_SCHEMA_H_
