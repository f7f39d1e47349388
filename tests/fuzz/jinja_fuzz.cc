// Fuzz target: arbitrary bytes as a Jinja chat template (common/jinja). The
// input is the template, optionally followed by a NUL byte and a JSON
// context; without one (or when it is not a JSON object) a small chat
// conversation is the context. Parsing and rendering must return a Status,
// never crash, hang or run past the render limits.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "common/jinja/template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string source = input.substr(0, nul);
  nlohmann::ordered_json context;
  if (nul != std::string::npos) {
    context = nlohmann::ordered_json::parse(input.substr(nul + 1), nullptr,
                                            /*allow_exceptions=*/false);
  }
  if (context.is_discarded() || !context.is_object()) {
    context = nlohmann::ordered_json::parse(R"({
      "messages": [{"role": "system", "content": " Be brief. "},
                   {"role": "user", "content": "What is 2+3?\n"},
                   {"role": "assistant", "content": "<think>\nadd\n</think>\n\n5"}],
      "add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>",
      "tools": null, "enable_thinking": false})");
  }
  auto parsed = rlvr::jinja::Template::Parse(source);
  if (!parsed.ok()) return 0;
  rlvr::jinja::RenderOptions options;
  options.max_output_bytes = 1 << 20;
  options.max_loop_iterations = 100000;
  options.max_call_depth = 32;
  options.now = [] { return absl::FromUnixSeconds(1700000000); };
  options.time_zone = absl::UTCTimeZone();
  auto rendered = (*parsed)->Render(context, options);
  if (rendered.ok() && static_cast<int64_t>(rendered->size()) > options.max_output_bytes) {
    std::abort();  // The output limit must hold.
  }
  return 0;
}
