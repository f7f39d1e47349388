// Fuzz target: arbitrary bytes as a weight blob. LoadWeights must return a
// Status, never crash, and when it refuses a blob the model's parameters must
// be bit-identical to before (the "old weights intact" contract). A blob it
// accepts must re-serialize to the same bytes.
//
// Each input is tried twice: as given, and with its trailing CRC-32 rewritten
// to match the bytes before it. Almost every mutation breaks the checksum, so
// without the second try the fuzzer would never get past it into the tensor
// table parser and the shape/dtype/size checks.
#include <torch/torch.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/checksum.h"
#include "common/config/run_config.h"
#include "common/policy/model.h"
#include "common/policy/weights.h"

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
    return new rlvr::policy::Transformer(c, 16, /*init_seed=*/3);
  }();
  return *model;
}

std::vector<torch::Tensor> Snapshot() {
  std::vector<torch::Tensor> out;
  for (const auto& p : Model()->parameters()) out.push_back(p.detach().clone());
  return out;
}

// Bit-for-bit comparison: an accepted blob may carry NaNs, which
// torch::equal reports as different from themselves.
bool SameBits(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  const torch::Tensor ca = a.contiguous();
  const torch::Tensor cb = b.contiguous();
  return std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0;
}

void AbortUnlessUnchanged(const std::vector<torch::Tensor>& before) {
  auto params = Model()->parameters();
  for (size_t i = 0; i < params.size(); ++i) {
    if (!SameBits(params[i], before[i])) std::abort();  // Refused, yet changed.
  }
}

// Puts the model back to its initial weights, so that every input runs from
// the same state and a crash reproduces from its input alone.
void Reset() {
  static const std::vector<torch::Tensor> initial = Snapshot();
  torch::NoGradGuard no_grad;
  auto params = Model()->parameters();
  for (size_t i = 0; i < params.size(); ++i) params[i].copy_(initial[i]);
}

void CheckLoad(const std::string& blob) {
  std::vector<torch::Tensor> before = Snapshot();
  uint64_t version = 0;
  absl::Status s = rlvr::policy::LoadWeights(blob, Model(), &version);
  if (!s.ok()) {
    AbortUnlessUnchanged(before);
    return;
  }
  if (rlvr::policy::SerializeWeights(Model(), version) != blob) std::abort();
  // The weights just accepted (any bit patterns, NaNs included) must survive a
  // refused load: damage the checksum and try again.
  std::string damaged = blob;
  damaged.back() ^= 0x01;
  std::vector<torch::Tensor> loaded = Snapshot();
  if (rlvr::policy::LoadWeights(damaged, Model(), &version).ok()) std::abort();
  AbortUnlessUnchanged(loaded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string blob(reinterpret_cast<const char*>(data), size);
  Reset();
  CheckLoad(blob);
  if (size >= 4) {
    const uint32_t crc = rlvr::Crc32(std::string_view(blob.data(), size - 4));
    std::string fixed = blob;
    std::memcpy(fixed.data() + size - 4, &crc, 4);  // Little-endian, as the blob stores it.
    if (fixed != blob) CheckLoad(fixed);
  }
  return 0;
}
