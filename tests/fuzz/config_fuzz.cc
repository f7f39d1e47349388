// Fuzz target: arbitrary bytes as a run-config YAML document, and as a
// `--set` override. Loading must return a Status, never crash or hang; a
// document that loads must dump to YAML that loads to the same values.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/config/config_schema.h"
#include "common/config/run_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  rlvr::RunConfig config;
  rlvr::ConfigSchema schema;
  rlvr::DescribeRunConfig(&config, &schema);
  if (schema.ApplyYaml(text, "fuzz").ok() && rlvr::ValidateRunConfig(config).ok()) {
    std::string dumped = rlvr::RunConfigToYaml(config);
    rlvr::RunConfig again;
    rlvr::ConfigSchema schema2;
    rlvr::DescribeRunConfig(&again, &schema2);
    if (!schema2.ApplyYaml(dumped, "dumped").ok() || rlvr::RunConfigToYaml(again) != dumped) {
      std::abort();  // The dump of a valid config must reload identically.
    }
  }
  rlvr::RunConfig c2;
  rlvr::ConfigSchema s2;
  rlvr::DescribeRunConfig(&c2, &s2);
  (void)s2.ApplyOverride(text);
  return 0;
}
