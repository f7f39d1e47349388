#include "common/config/config_schema.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/base/status_macros.h"

namespace rlvr {
namespace {

absl::Status KeyError(absl::string_view path, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("config key '", path, "': ", what));
}

bool ParseInt(absl::string_view text, int64_t* out) {
  std::string s(absl::StripAsciiWhitespace(text));
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

bool ParseDouble(absl::string_view text, double* out) {
  std::string s(absl::StripAsciiWhitespace(text));
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool ParseBool(absl::string_view text, bool* out) {
  std::string s = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  if (s == "true" || s == "yes" || s == "on") {
    *out = true;
    return true;
  }
  if (s == "false" || s == "no" || s == "off") {
    *out = false;
    return true;
  }
  return false;
}

}  // namespace

// Walks a parsed YAML tree and applies each leaf through the schema.
class ConfigSchemaYamlWalker {
 public:
  explicit ConfigSchemaYamlWalker(ConfigSchema* schema) : schema_(schema) {}

  absl::Status Walk(const YAML::Node& node, const std::string& prefix) {
    if (node.IsNull()) return absl::OkStatus();
    if (node.IsMap()) {
      const ConfigSchema::Entry* leaf = prefix.empty() ? nullptr : schema_->Find(prefix);
      if (leaf != nullptr) {
        return KeyError(prefix,
                        absl::StrCat("expected ", schema_->TypeName(*leaf), ", got a mapping"));
      }
      for (const auto& kv : node) {
        if (!kv.first.IsScalar()) return KeyError(prefix, "mapping keys must be scalars");
        std::string key = kv.first.as<std::string>();
        std::string path = prefix.empty() ? key : absl::StrCat(prefix, ".", key);
        RETURN_IF_ERROR(Walk(kv.second, path));
      }
      return absl::OkStatus();
    }
    const ConfigSchema::Entry* e = schema_->Find(prefix);
    if (e != nullptr && !applied_.insert(e).second) {
      return KeyError(prefix, absl::StrCat("set twice (", e->path, " under its old and new name)"));
    }
    if (e == nullptr) {
      if (HasChildren(prefix)) {
        return KeyError(prefix, "is a section; expected a mapping of its keys");
      }
      return KeyError(prefix, "unknown key");
    }
    if (node.IsSequence()) {
      std::vector<std::string> items;
      for (const auto& item : node) {
        if (!item.IsScalar()) return KeyError(prefix, "list items must be scalars");
        items.push_back(item.as<std::string>());
      }
      return schema_->SetFromText(*e, "", /*is_sequence=*/true, items);
    }
    return schema_->SetFromText(*e, node.as<std::string>(), /*is_sequence=*/false, {});
  }

 private:
  bool HasChildren(const std::string& prefix) const {
    std::string p = prefix + ".";
    for (const auto& e : schema_->entries_) {
      if (e.path.compare(0, p.size(), p) == 0) return true;
    }
    return false;
  }
  ConfigSchema* schema_;
  std::set<const ConfigSchema::Entry*> applied_;  // Each key once per document.
};

void ConfigSchema::Int(std::string path, int* field, int64_t min, int64_t max, std::string help) {
  entries_.push_back(Entry{std::move(path), field, min, max, 0, 0, {}, std::move(help)});
}
void ConfigSchema::Int64(std::string path, int64_t* field, int64_t min, int64_t max,
                         std::string help) {
  entries_.push_back(Entry{std::move(path), field, min, max, 0, 0, {}, std::move(help)});
}
void ConfigSchema::Double(std::string path, double* field, double min, double max,
                          std::string help) {
  entries_.push_back(Entry{std::move(path), field, 0, 0, min, max, {}, std::move(help)});
}
void ConfigSchema::Bool(std::string path, bool* field, std::string help) {
  entries_.push_back(Entry{std::move(path), field, 0, 0, 0, 0, {}, std::move(help)});
}
void ConfigSchema::String(std::string path, std::string* field, std::string help) {
  entries_.push_back(Entry{std::move(path), field, 0, 0, 0, 0, {}, std::move(help)});
}
void ConfigSchema::Enum(std::string path, std::string* field, std::vector<std::string> allowed,
                        std::string help) {
  entries_.push_back(
      Entry{std::move(path), field, 0, 0, 0, 0, std::move(allowed), std::move(help)});
}
void ConfigSchema::IntList(std::string path, std::vector<int>* field, int64_t min, int64_t max,
                           std::string help) {
  entries_.push_back(Entry{std::move(path), field, min, max, 0, 0, {}, std::move(help)});
}

void ConfigSchema::Renamed(std::string old_path, std::string new_path) {
  renamed_.emplace_back(std::move(old_path), std::move(new_path));
}

const ConfigSchema::Entry* ConfigSchema::Find(absl::string_view path) const {
  for (const auto& e : entries_) {
    if (e.path == path) return &e;
  }
  for (const auto& [old_path, new_path] : renamed_) {
    if (old_path != path) continue;
    std::fprintf(stderr, "config: %s is now %s; the old name still works but will go\n",
                 old_path.c_str(), new_path.c_str());
    for (const auto& e : entries_) {
      if (e.path == new_path) return &e;
    }
  }
  return nullptr;
}

std::string ConfigSchema::TypeName(const Entry& e) const {
  switch (e.field.index()) {
    case 0:
    case 1:
      return absl::StrCat("an integer in [", e.imin, ", ", e.imax, "]");
    case 2:
      return absl::StrCat("a number in [", e.dmin, ", ", e.dmax, "]");
    case 3:
      return "a boolean (true/false)";
    case 4:
      if (!e.allowed.empty()) return absl::StrCat("one of {", absl::StrJoin(e.allowed, ", "), "}");
      return "a string";
    default:
      return absl::StrCat("a list of integers in [", e.imin, ", ", e.imax, "]");
  }
}

absl::Status ConfigSchema::SetFromText(const Entry& e, absl::string_view text, bool is_sequence,
                                       const std::vector<std::string>& items) {
  auto wrong = [&](absl::string_view got) {
    return KeyError(e.path, absl::StrCat("expected ", TypeName(e), ", got '", got, "'"));
  };
  if (is_sequence && e.field.index() != 5) return wrong("a list");
  switch (e.field.index()) {
    case 0:
    case 1: {
      int64_t v;
      if (!ParseInt(text, &v)) return wrong(text);
      if (v < e.imin || v > e.imax) {
        return KeyError(e.path,
                        absl::StrCat("value ", v, " is out of range; expected ", TypeName(e)));
      }
      if (e.field.index() == 0) {
        *std::get<int*>(e.field) = static_cast<int>(v);
      } else {
        *std::get<int64_t*>(e.field) = v;
      }
      return absl::OkStatus();
    }
    case 2: {
      double v;
      if (!ParseDouble(text, &v)) return wrong(text);
      if (v < e.dmin || v > e.dmax) {
        return KeyError(e.path,
                        absl::StrCat("value ", v, " is out of range; expected ", TypeName(e)));
      }
      *std::get<double*>(e.field) = v;
      return absl::OkStatus();
    }
    case 3: {
      bool v;
      if (!ParseBool(text, &v)) return wrong(text);
      *std::get<bool*>(e.field) = v;
      return absl::OkStatus();
    }
    case 4: {
      std::string v(text);
      if (!e.allowed.empty()) {
        bool ok = false;
        for (const auto& a : e.allowed) ok = ok || a == v;
        if (!ok) return wrong(text);
      }
      *std::get<std::string*>(e.field) = v;
      return absl::OkStatus();
    }
    default: {
      std::vector<int> out;
      if (!is_sequence) {
        // A scalar override like "1,2,3" or a single integer.
        std::string s(absl::StripAsciiWhitespace(text));
        if (!s.empty()) {
          for (absl::string_view piece : absl::StrSplit(s, ',')) {
            int64_t v;
            if (!ParseInt(piece, &v)) return wrong(text);
            out.push_back(static_cast<int>(v));
          }
        }
      } else {
        for (const auto& item : items) {
          int64_t v;
          if (!ParseInt(item, &v)) return wrong(item);
          out.push_back(static_cast<int>(v));
        }
      }
      for (int v : out) {
        if (v < e.imin || v > e.imax) {
          return KeyError(
              e.path, absl::StrCat("list value ", v, " is out of range; expected ", TypeName(e)));
        }
      }
      *std::get<std::vector<int>*>(e.field) = std::move(out);
      return absl::OkStatus();
    }
  }
}

absl::Status ConfigSchema::ApplyYaml(absl::string_view yaml_text, absl::string_view source_name) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source_name, ": YAML syntax error at line ",
                                                   e.mark.line + 1, ", column ", e.mark.column + 1,
                                                   ": ", e.msg));
  }
  if (!root.IsNull() && !root.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(source_name, ": the config must be a mapping of sections"));
  }
  ConfigSchemaYamlWalker walker(this);
  absl::Status s = walker.Walk(root, "");
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(source_name, ": ", s.message()));
  return absl::OkStatus();
}

absl::Status ConfigSchema::ApplyOverride(absl::string_view assignment) {
  size_t eq = assignment.find('=');
  if (eq == absl::string_view::npos || eq == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("override '", assignment, "': expected key.path=value"));
  }
  std::string path(assignment.substr(0, eq));
  absl::StripAsciiWhitespace(&path);
  std::string value(assignment.substr(eq + 1));
  absl::StripAsciiWhitespace(&value);
  const Entry* e = Find(path);
  if (e == nullptr) return KeyError(path, "unknown key (from --set)");
  if (e->field.index() == 5 && !value.empty() && value.front() == '[') {
    YAML::Node n;
    try {
      n = YAML::Load(value);
    } catch (const YAML::Exception& ex) {
      return KeyError(path, absl::StrCat("cannot parse list: ", ex.msg));
    }
    std::vector<std::string> items;
    for (const auto& item : n) items.push_back(item.as<std::string>());
    return SetFromText(*e, "", true, items);
  }
  return SetFromText(*e, value, false, {});
}

std::string ConfigSchema::ValueText(const Entry& e) const {
  switch (e.field.index()) {
    case 0:
      return absl::StrCat(*std::get<int*>(e.field));
    case 1:
      return absl::StrCat(*std::get<int64_t*>(e.field));
    case 2: {
      std::ostringstream os;
      os.precision(17);
      os << *std::get<double*>(e.field);
      std::string s = os.str();
      if (s.find_first_of(".eE") == std::string::npos) s += ".0";
      return s;
    }
    case 3:
      return *std::get<bool*>(e.field) ? "true" : "false";
    case 4: {
      YAML::Emitter em;
      em << YAML::DoubleQuoted << *std::get<std::string*>(e.field);
      return em.c_str();
    }
    default:
      return absl::StrCat("[", absl::StrJoin(*std::get<std::vector<int>*>(e.field), ", "), "]");
  }
}

std::string ConfigSchema::ToYaml() const {
  std::string out;
  std::vector<std::string> open;  // Currently open section path components.
  for (const auto& e : entries_) {
    std::vector<std::string> parts = absl::StrSplit(e.path, '.');
    size_t common = 0;
    while (common < open.size() && common + 1 < parts.size() && open[common] == parts[common]) {
      ++common;
    }
    open.resize(common);
    for (size_t i = common; i + 1 < parts.size(); ++i) {
      absl::StrAppend(&out, std::string(2 * i, ' '), parts[i], ":\n");
      open.push_back(parts[i]);
    }
    absl::StrAppend(&out, std::string(2 * (parts.size() - 1), ' '), parts.back(), ": ",
                    ValueText(e), "\n");
  }
  return out;
}

std::string ConfigSchema::Help() const {
  std::string out;
  for (const auto& e : entries_) {
    absl::StrAppend(&out, "  ", e.path, " = ", ValueText(e), "\n      ", TypeName(e), ". ", e.help,
                    "\n");
  }
  return out;
}

}  // namespace rlvr
