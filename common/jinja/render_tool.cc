// jinja_render: renders templates given as JSON lines on stdin,
// {"template": "...", "context": {...}}, and writes one JSON line per input:
// {"output": "..."} or {"error": "..."}. strftime_now is pinned to
// 2025-03-14 09:26:53 UTC, as in scripts/render-chat-templates. For
// scripts/jinja-differential, which compares the engine with Jinja2 on
// random templates.
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "common/jinja/template.h"

int main() {
  rlvr::jinja::RenderOptions options;
  options.time_zone = absl::UTCTimeZone();
  options.now = [] {
    return absl::FromCivil(absl::CivilSecond(2025, 3, 14, 9, 26, 53), absl::UTCTimeZone());
  };
  std::string line;
  while (std::getline(std::cin, line)) {
    const nlohmann::ordered_json in =
        nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    if (in.is_discarded() || !in.is_object() || !in.contains("template") ||
        !in["template"].is_string()) {
      out["error"] = "input: expected {\"template\": string, \"context\": object}";
    } else {
      auto parsed = rlvr::jinja::Template::Parse(in["template"].get<std::string>());
      absl::StatusOr<std::string> rendered =
          parsed.ok()
              ? (*parsed)->Render(in.value("context", nlohmann::ordered_json::object()), options)
              : absl::StatusOr<std::string>(parsed.status());
      if (rendered.ok()) {
        out["output"] = *rendered;
      } else {
        out["error"] = std::string(rendered.status().message());
      }
    }
    std::cout << out.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  }
  return 0;
}
