// Fuzz target: arbitrary bytes as a weight blob. LoadWeights must return a
// Status, never crash, and when it refuses a blob the model's parameters must
// be bit-identical to before (the "old weights intact" contract). A blob it
// accepts must re-serialize to the same bytes.
#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/policy/model.h"
#include "common/policy/weights.h"
#include "common/run_config.h"

namespace {

rlvr::policy::Transformer& Model() {
  static rlvr::policy::Transformer* model = [] {
    torch::set_num_threads(1);
    rlvr::ModelConfig c;
    c.d_model = 8;
    c.n_layers = 1;
    c.n_heads = 2;
    c.d_ff = 16;
    c.max_seq_len = 16;
    torch::manual_seed(3);
    return new rlvr::policy::Transformer(c, 16);
  }();
  return *model;
}

std::vector<torch::Tensor> Snapshot() {
  std::vector<torch::Tensor> out;
  for (const auto& p : Model()->parameters()) out.push_back(p.detach().clone());
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string blob(reinterpret_cast<const char*>(data), size);
  std::vector<torch::Tensor> before = Snapshot();
  uint64_t version = 0;
  absl::Status s = rlvr::policy::LoadWeights(blob, Model(), &version);
  if (!s.ok()) {
    auto params = Model()->parameters();
    for (size_t i = 0; i < params.size(); ++i) {
      if (!torch::equal(params[i], before[i])) std::abort();  // Refused, yet changed.
    }
    return 0;
  }
  if (rlvr::policy::SerializeWeights(Model(), version) != blob) std::abort();
  return 0;
}
