#include "common/policy/weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/base/checksum.h"
#include "common/policy/model.h"

namespace rlvr::policy {
namespace {

ModelConfig Small() {
  ModelConfig c;
  c.d_model = 16;
  c.n_layers = 2;
  c.n_heads = 2;
  c.d_ff = 24;
  return c;
}

Transformer Make(uint64_t seed, ModelConfig c = Small()) {
  auto m = CreateTransformer(c, 11, seed);
  EXPECT_TRUE(m.ok());
  return *m;
}

std::vector<torch::Tensor> Snapshot(Transformer& m) {
  std::vector<torch::Tensor> out;
  for (const auto& p : m->parameters()) out.push_back(p.detach().clone());
  return out;
}

bool SameAs(Transformer& m, const std::vector<torch::Tensor>& snap) {
  auto params = m->parameters();
  if (params.size() != snap.size()) return false;
  for (size_t i = 0; i < snap.size(); ++i) {
    if (!torch::equal(params[i], snap[i])) return false;
  }
  return true;
}

void Reseal(std::string* blob) {
  uint32_t crc = Crc32(std::string_view(blob->data(), blob->size() - 4));
  std::memcpy(blob->data() + blob->size() - 4, &crc, 4);
}

TEST(WeightsTest, RoundTripIsBitExact) {
  Transformer a = Make(1), b = Make(2);
  const std::string blob = SerializeWeights(a, 42);
  auto peek = PeekWeightsVersion(blob);
  ASSERT_TRUE(peek.ok());
  EXPECT_EQ(*peek, 42u);
  uint64_t version = 0;
  ASSERT_TRUE(LoadWeights(blob, b, &version).ok());
  EXPECT_EQ(version, 42u);
  auto pa = a->parameters(), pb = b->parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    ASSERT_EQ(std::memcmp(pa[i].data_ptr(), pb[i].data_ptr(), pa[i].nbytes()), 0);
  }
  EXPECT_EQ(SerializeWeights(b, 42), blob);
  EXPECT_TRUE(LoadWeights(blob, b, nullptr).ok());
  EXPECT_EQ(WeightsBlobBytes(a), blob.size());            // Known without serializing.
  EXPECT_EQ(WeightsBlobBytes(Small(), 11), blob.size());  // And without a model.
}

// Serializing into a buffer that held something else (a larger, different
// blob) replaces it whole and reuses its memory.
TEST(WeightsTest, SerializeIntoAReusedBufferGivesTheSameBlob) {
  Transformer a = Make(1);
  const std::string expected = SerializeWeights(a, 7);
  std::string buffer(3 * expected.size(), 'x');
  const char* memory = buffer.data();
  SerializeWeightsInto(a, 7, &buffer);
  EXPECT_EQ(buffer, expected);
  EXPECT_EQ(buffer.data(), memory) << "the buffer's memory should be reused";
  SerializeWeightsInto(a, 8, &buffer);
  EXPECT_EQ(PeekWeightsVersion(buffer).value_or(0), 8u);
  EXPECT_EQ(buffer.size(), expected.size());
}

// The chunk CRCs handed to the weight publisher are those of the blob's
// chunks, the trailing CRC included in the last; the blob is the same with
// or without them, for chunks that split headers, names and tensors.
TEST(WeightsTest, ChunkCrcsAreThoseOfTheBlobsChunks) {
  Transformer a = Make(5);
  const std::string plain = SerializeWeights(a, 9);
  for (size_t chunk : std::vector<size_t>{1, 3, 100, 1000, 4096, plain.size() - 1, plain.size(),
                                          plain.size() + 5}) {
    std::string blob;
    std::vector<uint32_t> crcs = {123};  // Replaced.
    SerializeWeightsInto(a, 9, &blob, chunk, &crcs);
    ASSERT_EQ(blob, plain) << "chunk " << chunk;
    ASSERT_EQ(crcs.size(), (blob.size() + chunk - 1) / chunk) << "chunk " << chunk;
    for (size_t i = 0; i < crcs.size(); ++i) {
      const size_t len = std::min(chunk, blob.size() - i * chunk);
      ASSERT_EQ(crcs[i], Crc32(std::string_view(blob.data() + i * chunk, len)))
          << "chunk " << chunk << " index " << i;
    }
  }
  Transformer b = Make(6);
  EXPECT_TRUE(LoadWeights(plain, b, nullptr).ok());  // Its trailing CRC checks out.
}

TEST(WeightsTest, LayoutIsWhatTheModelRegisters) {
  ModelConfig c = Small();
  for (int layers : {1, 3}) {
    c.n_layers = layers;
    c.d_ff = 24 + layers;
    Transformer m = Make(3, c);
    const std::vector<ParameterShape> layout = ParameterLayout(c, 11);
    const auto named = m->named_parameters(/*recurse=*/true);
    ASSERT_EQ(layout.size(), named.size());
    for (size_t i = 0; i < layout.size(); ++i) {
      EXPECT_EQ(layout[i].name, named[i].key());
      EXPECT_EQ(layout[i].dims, named[i].value().sizes().vec()) << layout[i].name;
      EXPECT_EQ(named[i].value().scalar_type(), torch::kFloat32) << layout[i].name;
    }
    EXPECT_EQ(WeightsBlobBytes(c, 11), SerializeWeights(m, 1).size());
  }
  // HF layouts: the HF tensor names, in registration order.
  for (const char* arch : {"llama", "qwen2", "qwen3"}) {
    ModelConfig h = Small();
    h.arch = arch;
    h.n_kv_heads = 1;
    h.head_dim = 6;
    h.qkv_bias = true;
    h.o_bias = h.mlp_bias = std::string(arch) == "llama";
    h.qk_norm = std::string(arch) == "qwen3";
    h.tie_embeddings = std::string(arch) != "llama";
    auto m = CreateTransformer(h, 11, 1);
    ASSERT_TRUE(m.ok()) << m.status();
    const std::vector<ParameterShape> layout = ParameterLayout(h, 11);
    const auto named = (*m)->named_parameters(/*recurse=*/true);
    ASSERT_EQ(layout.size(), named.size()) << arch;
    for (size_t i = 0; i < layout.size(); ++i) {
      EXPECT_EQ(layout[i].name, named[i].key());
      EXPECT_EQ(layout[i].dims, named[i].value().sizes().vec()) << layout[i].name;
    }
    EXPECT_EQ(layout.front().name, "model.embed_tokens.weight");
    EXPECT_EQ(layout.back().name,
              std::string(arch) == "llama" ? "lm_head.weight" : "model.norm.weight");
    EXPECT_EQ(WeightsBlobBytes(h, 11), SerializeWeights(*m, 1).size());
    // A blob round-trips through LoadWeights.
    auto other = CreateTransformer(h, 11, 2);
    ASSERT_TRUE(LoadWeights(SerializeWeights(*m, 3), *other, nullptr).ok());
    for (size_t i = 0; i < named.size(); ++i) {
      EXPECT_TRUE(torch::equal(named[i].value(), (*other)->named_parameters()[i].value()));
    }
  }
}

struct Corruption {
  std::string label;
  std::string blob;
  std::string expect;  // Substring of the error message.
};

TEST(WeightsTest, EveryCorruptionIsRejectedAndModelUntouched) {
  Transformer src = Make(1);
  const std::string good = SerializeWeights(src, 5);
  std::vector<Corruption> cases;
  for (size_t len : {size_t{0}, size_t{10}, size_t{27}, good.size() / 2, good.size() - 1}) {
    cases.push_back({"truncated to " + std::to_string(len), good.substr(0, len), ""});
  }
  std::string flipped = good;
  flipped[good.size() / 2] ^= 0x10;
  cases.push_back({"bit flip", flipped, "checksum"});
  std::string bad_crc = good;
  bad_crc.back() ^= 1;
  cases.push_back({"bad checksum", bad_crc, "checksum"});
  std::string magic = good;
  magic[0] = 'X';
  cases.push_back({"bad magic", magic, "magic"});
  std::string format = good;
  format[8] = 9;
  Reseal(&format);
  cases.push_back({"format version", format, "format version"});
  // Name: the first tensor is "embed" right after the 24-byte header and its u32 length.
  std::string name = good;
  ASSERT_EQ(name.substr(28, 5), "embed");
  name[28] = 'E';
  Reseal(&name);
  cases.push_back({"wrong name", name, "unknown tensor 'Embed'"});
  std::string dtype = good;
  dtype[33] = static_cast<char>(torch::kFloat64);
  Reseal(&dtype);
  cases.push_back({"wrong dtype code", dtype, "dtype"});
  ModelConfig wide = Small();
  wide.d_model = 32;
  Transformer other_shape = Make(1, wide);
  cases.push_back({"wrong shape", SerializeWeights(other_shape, 5), "shape"});
  Transformer f64 = Make(1);
  f64->to(torch::kFloat64);
  cases.push_back({"wrong dtype", SerializeWeights(f64, 5), "dtype"});
  ModelConfig deeper = Small();
  deeper.n_layers = 3;
  Transformer extra = Make(1, deeper);
  cases.push_back({"extra tensor", SerializeWeights(extra, 5), "unknown tensor"});
  ModelConfig shallow = Small();
  shallow.n_layers = 1;
  Transformer fewer = Make(1, shallow);
  cases.push_back({"missing tensor", SerializeWeights(fewer, 5), "missing tensor"});
  std::string trailing = good.substr(0, good.size() - 4) + "abcd";
  trailing += "    ";
  Reseal(&trailing);
  cases.push_back({"trailing bytes", trailing, "trailing"});

  for (const auto& c : cases) {
    Transformer target = Make(3);
    auto before = Snapshot(target);
    uint64_t version = 77;
    absl::Status s = LoadWeights(c.blob, target, &version);
    EXPECT_FALSE(s.ok()) << c.label;
    EXPECT_NE(s.message().find(c.expect), absl::string_view::npos)
        << c.label << ": " << s.message();
    EXPECT_TRUE(SameAs(target, before)) << c.label << ": model was modified";
    EXPECT_EQ(version, 77u) << c.label;
  }
  EXPECT_FALSE(PeekWeightsVersion(magic).ok());
  EXPECT_FALSE(PeekWeightsVersion(good.substr(0, 10)).ok());
}

TEST(WeightsTest, FilesAreWrittenAtomicallyIntoNewDirectories) {
  const std::string dir = ::testing::TempDir() + "/rlvr_weights_test/nested";
  std::filesystem::remove_all(::testing::TempDir() + "/rlvr_weights_test");
  const std::string path = dir + "/w.rlvrw";
  Transformer a = Make(1), b = Make(2);
  ASSERT_TRUE(SaveWeightsFile(path, a, 9).ok());
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1);  // no temp file left behind
  uint64_t version = 0;
  ASSERT_TRUE(LoadWeightsFile(path, b, &version).ok());
  EXPECT_EQ(version, 9u);
  EXPECT_EQ(SerializeWeights(b, 9), SerializeWeights(a, 9));
  EXPECT_FALSE(LoadWeightsFile(dir + "/missing", b, nullptr).ok());
}

}  // namespace
}  // namespace rlvr::policy
