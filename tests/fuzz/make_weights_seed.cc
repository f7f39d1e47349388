// Writes seed inputs for the weights fuzz target: a valid blob of the fuzz
// target's tiny model, and truncated and bit-flipped variants.
//   make_weights_seed OUT_DIR
#include <torch/torch.h>

#include <fstream>
#include <string>

#include "common/policy/model.h"
#include "common/policy/weights.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  rlvr::ModelConfig c;
  c.d_model = 8;
  c.n_layers = 1;
  c.n_heads = 2;
  c.d_ff = 16;
  c.max_seq_len = 16;
  rlvr::policy::Transformer model(c, 16, /*init_seed=*/11);
  std::string blob = rlvr::policy::SerializeWeights(model, 7);
  std::string dir = argv[1];
  std::ofstream(dir + "/seed-valid.bin", std::ios::binary) << blob;
  std::ofstream(dir + "/seed-truncated.bin", std::ios::binary) << blob.substr(0, blob.size() / 2);
  std::string flipped = blob;
  flipped[flipped.size() / 3] ^= 0x10;
  std::ofstream(dir + "/seed-flipped.bin", std::ios::binary) << flipped;
  return 0;
}
