// rlvr_offline_rl: the single-process RL loop of offline_rl.h.
//   rlvr_offline_rl --config configs/chain.yaml --out runs/x [--set key=value]... [--pretrain_only]
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/config/run_config.h"
#include "learner/core/offline_rl.h"

int main(int argc, char** argv) {
  std::string config_path;
  std::vector<std::string> overrides;
  rlvr::learner::OfflineRlOptions options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const bool has_value = i + 1 < argc;
    if (arg == "--config" && has_value) {
      config_path = argv[++i];
    } else if (arg == "--set" && has_value) {
      overrides.push_back(argv[++i]);
    } else if (arg == "--out" && has_value) {
      options.out_dir = argv[++i];
    } else if (arg == "--pretrain_only") {
      options.pretrain_only = true;
    } else {
      std::fprintf(stderr,
                   "usage: %s --config PATH --out DIR [--set key=value]... [--pretrain_only]\n",
                   argv[0]);
      return 2;
    }
  }
  auto config = rlvr::LoadRunConfig(config_path, overrides);
  if (!config.ok()) {
    std::fprintf(stderr, "%s\n", config.status().ToString().c_str());
    return 2;
  }
  if (options.out_dir.empty() && !options.pretrain_only) {
    std::fprintf(stderr, "--out is required\n");
    return 2;
  }
  absl::Status s = rlvr::learner::RunOfflineRl(*config, options);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
