#include "common/policy/model.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/policy/decode_kernels.h"

namespace rlvr::policy {
namespace {

// Additive mask value for keys that must not be attended to. Finite so that a
// query whose keys are all masked (a pad position) gets a harmless uniform
// softmax instead of NaN; exp(kMaskValue - max) is exactly 0 otherwise.
constexpr double kMaskValue = -1e9;

constexpr double kRmsEps = 1e-6;  // RMSNorm epsilon inside the square root.

// Rotates the pairs (x[..., i], x[..., i + D/2]) by the given angles.
// x [..., B, H, S, D]; cos/sin [B, 1, S, D/2] (broadcast over the leading
// dimensions, so queries and keys can be rotated in one pass).
torch::Tensor ApplyRope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  torch::Tensor x1 = x.narrow(-1, 0, half);
  torch::Tensor x2 = x.narrow(-1, half, half);
  return torch::cat({x1 * cos - x2 * sin, x1 * sin + x2 * cos}, -1);
}

// x [N, K] times w [M, K] transposed: [N, M]; plus `residual` [N, M] when
// defined. A single row goes through matrix-vector BLAS: OpenBLAS's GEMM
// packs the whole weight matrix on every call, which for one row (batch-1
// decoding) costs more than the product itself.
torch::Tensor Project(const torch::Tensor& x, const torch::Tensor& w,
                      const torch::Tensor& residual = torch::Tensor()) {
  if (x.size(0) == 1) {
    torch::Tensor row = x.reshape({-1});
    torch::Tensor y = residual.defined() ? torch::addmv(residual.reshape({-1}), w, row)
                                         : torch::mv(w, row);
    return y.view({1, -1});
  }
  return residual.defined() ? torch::addmm(residual, x, w.t()) : torch::mm(x, w.t());
}

}  // namespace

std::vector<ParameterShape> ParameterLayout(const rlvr::ModelConfig& config, int vocab_size) {
  // As TransformerImpl's constructor registers them; named_parameters()
  // lists a module's own parameters before its submodules'.
  const int64_t d = config.d_model;
  const int64_t ff = config.d_ff;
  std::vector<ParameterShape> out;
  out.push_back({"embed", {vocab_size, d}});
  out.push_back({"final_norm", {d}});
  for (int i = 0; i < config.n_layers; ++i) {
    const std::string block = absl::StrCat("layers.", i, ".");
    out.push_back({block + "attn_norm", {d}});
    out.push_back({block + "qkv", {3 * d, d}});
    out.push_back({block + "out", {d, d}});
    out.push_back({block + "mlp_norm", {d}});
    out.push_back({block + "gate_up", {2 * ff, d}});
    out.push_back({block + "down", {d, ff}});
  }
  return out;
}

TransformerImpl::TransformerImpl(const rlvr::ModelConfig& config, int vocab_size)
    : config_(config), vocab_size_(vocab_size) {
  TORCH_CHECK(vocab_size >= 1, "vocab_size must be >= 1");
  TORCH_CHECK(config.n_heads >= 1 && config.d_model % config.n_heads == 0,
              "d_model must be divisible by n_heads");
  head_dim_ = config.d_model / config.n_heads;
  TORCH_CHECK(head_dim_ % 2 == 0, "head dimension must be even for RoPE");
  TORCH_CHECK(config.n_layers >= 1 && config.d_ff >= 1, "n_layers and d_ff must be >= 1");
  const int64_t d = config.d_model;
  const double std = config.init_std;
  torch::NoGradGuard no_grad;
  // Keep ParameterLayout in step with what is registered here.
  embed_ = register_parameter("embed", torch::randn({vocab_size, d}) * std);
  // Parameter names may not contain '.', so blocks are nested modules:
  // "layers" -> "<i>" -> parameters, giving "layers.<i>.qkv" and so on.
  auto layers = register_module("layers", std::make_shared<torch::nn::Module>());
  for (int i = 0; i < config.n_layers; ++i) {
    auto block = layers->register_module(absl::StrCat(i), std::make_shared<torch::nn::Module>());
    Layer l;
    l.attn_norm = block->register_parameter("attn_norm", torch::ones({d}));
    l.qkv = block->register_parameter("qkv", torch::randn({3 * d, d}) * std);
    l.out = block->register_parameter("out", torch::randn({d, d}) * std);
    l.mlp_norm = block->register_parameter("mlp_norm", torch::ones({d}));
    l.gate_up = block->register_parameter("gate_up", torch::randn({2 * config.d_ff, d}) * std);
    l.down = block->register_parameter("down", torch::randn({d, config.d_ff}) * std);
    layers_.push_back(l);
  }
  final_norm_ = register_parameter("final_norm", torch::ones({d}));
  inv_freq_ = torch::pow(config.rope_theta,
                         -torch::arange(0, head_dim_, 2, torch::kFloat64) / double(head_dim_));
  // The same float64 angles ForwardWithPositions would compute, tabulated
  // once for positions [0, max_seq_len): decoding then looks them up instead
  // of spending ~8 small tensor ops per step on them.
  torch::Tensor angles =
      torch::arange(config.max_seq_len, torch::kFloat64).unsqueeze(-1) * inv_freq_;
  rope_table_ = torch::cat({angles.cos(), angles.sin()}, -1);  // [max_seq_len, head_dim]
}

std::pair<torch::Tensor, torch::Tensor> TransformerImpl::RopeAngles(const torch::Tensor& positions,
                                                                    bool in_table) const {
  const auto dtype = embed_.scalar_type();
  const int64_t b = positions.size(0);
  const int64_t s = positions.size(1);
  const int64_t half = head_dim_ / 2;
  if (in_table) {
    torch::Tensor cs =
        rope_table_.index_select(0, positions.reshape({-1})).to(dtype).view({b, 1, s, 2 * half});
    return {cs.narrow(-1, 0, half), cs.narrow(-1, half, half)};
  }
  torch::Tensor angles = positions.to(torch::kFloat64).unsqueeze(-1) * inv_freq_;  // [B,S,D/2]
  return {angles.cos().to(dtype).unsqueeze(1), angles.sin().to(dtype).unsqueeze(1)};
}

int64_t TransformerImpl::num_parameters() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

torch::Tensor TransformerImpl::RmsNorm(const torch::Tensor& x, const torch::Tensor& weight) const {
  return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + kRmsEps) * weight;
}

void TransformerImpl::CheckTokenRange(const torch::Tensor& tokens) const {
  if (tokens.numel() == 0) return;
  if (tokens.is_cpu() && tokens.is_contiguous()) {
    // A plain scan: two reductions plus two item() calls would cost more
    // than the whole embedding lookup of a decode step.
    const int64_t* t = tokens.data_ptr<int64_t>();
    for (int64_t i = 0, n = tokens.numel(); i < n; ++i) {
      TORCH_CHECK(t[i] >= 0 && t[i] < vocab_size_, "token id out of vocabulary [0, ", vocab_size_,
                  ")");
    }
    return;
  }
  TORCH_CHECK(tokens.min().item<int64_t>() >= 0 && tokens.max().item<int64_t>() < vocab_size_,
              "token id out of vocabulary [0, ", vocab_size_, ")");
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& tokens) {
  TORCH_CHECK(tokens.dim() == 2, "tokens must be [B, L]");
  torch::Tensor positions =
      torch::arange(tokens.size(1), tokens.options().dtype(torch::kInt64)).expand_as(tokens);
  return ForwardWithPositions(tokens, positions, torch::Tensor(), nullptr);
}

torch::Tensor TransformerImpl::Hidden(const torch::Tensor& tokens) {
  TORCH_CHECK(tokens.dim() == 2, "tokens must be [B, L]");
  torch::Tensor positions =
      torch::arange(tokens.size(1), tokens.options().dtype(torch::kInt64)).expand_as(tokens);
  return HiddenWithPositions(tokens, positions, torch::Tensor(), nullptr);
}

torch::Tensor TransformerImpl::ForwardWithPositions(const torch::Tensor& tokens,
                                                    const torch::Tensor& positions,
                                                    const torch::Tensor& key_bias, KvCache* cache) {
  torch::Tensor h = HiddenWithPositions(tokens, positions, key_bias, cache);
  return Project(h.view({-1, h.size(-1)}), OutputWeight())
      .view({h.size(0), h.size(1), vocab_size_});
}

KvCache TransformerImpl::NewCache(int64_t batch, int64_t capacity) const {
  KvCache cache;
  const auto opts = embed_.options().requires_grad(false);
  for (size_t i = 0; i < layers_.size(); ++i) {
    cache.keys.push_back(torch::zeros({batch, config_.n_heads, capacity, head_dim_}, opts));
    cache.values.push_back(torch::zeros({batch, config_.n_heads, capacity, head_dim_}, opts));
  }
  cache.key_bias = torch::zeros({batch, 1, 1, capacity}, opts);
  cache.capacity = capacity;
  return cache;
}

torch::Tensor TransformerImpl::HiddenWithPositions(const torch::Tensor& tokens,
                                                   const torch::Tensor& positions,
                                                   const torch::Tensor& key_bias, KvCache* cache) {
  TORCH_CHECK(tokens.dim() == 2 && tokens.scalar_type() == torch::kInt64,
              "tokens must be [B, S] int64");
  TORCH_CHECK(positions.sizes() == tokens.sizes(), "positions must match tokens");
  const int64_t b = tokens.size(0);
  const int64_t s = tokens.size(1);
  TORCH_CHECK(s >= 1, "need at least one token");
  CheckTokenRange(tokens);
  // The RoPE table covers [0, max_seq_len); other positions are computed.
  bool positions_in_table = true;
  if (positions.numel() == 0) {
    positions_in_table = true;
  } else if (positions.is_cpu() && positions.is_contiguous()) {
    const int64_t* p = positions.data_ptr<int64_t>();
    const auto [lo, hi] = std::minmax_element(p, p + positions.numel());
    positions_in_table = *lo >= 0 && *hi < rope_table_.size(0);
  } else {
    positions_in_table = positions.min().item<int64_t>() >= 0 &&
                         positions.max().item<int64_t>() < rope_table_.size(0);
  }
  const int64_t past = cache != nullptr ? cache->length : 0;
  if (cache != nullptr) {
    TORCH_CHECK(cache->keys.size() == layers_.size() && cache->key_bias.size(0) == b,
                "cache does not match model/batch");
    TORCH_CHECK(past + s <= cache->capacity, "KV cache capacity exceeded");
  }
  const int64_t total = past + s;
  // Decoding into a cache without autograd (Generate) takes the fused loops
  // of decode_kernels.h; everything else uses the tensor ops below.
  const bool fused = cache != nullptr && !torch::GradMode::is_enabled() &&
                     embed_.scalar_type() == torch::kFloat32 && embed_.is_cpu() &&
                     positions_in_table && positions.is_contiguous() &&
                     cache->keys.front().is_contiguous() && cache->values.front().is_contiguous();
  auto norm = [&](const torch::Tensor& x, const torch::Tensor& w) {
    return fused ? RmsNormRows(x, w, kRmsEps) : RmsNorm(x, w);
  };

  // RoPE angles per row and position, [B,1,S,D/2] each (the fused path reads
  // the table directly).
  torch::Tensor cos, sin;
  if (!fused) std::tie(cos, sin) = RopeAngles(positions, positions_in_table);

  // Additive attention mask [B or 1, 1, S, total]: causal among the new
  // tokens plus the caller's key bias.
  torch::Tensor mask;
  if (s > 1) {
    mask = torch::full({s, total}, kMaskValue, embed_.options().requires_grad(false))
               .triu(past + 1)
               .view({1, 1, s, total});
  }
  torch::Tensor bias = key_bias;
  if (cache != nullptr) {
    bias = cache->has_key_bias ? cache->key_bias.narrow(3, 0, total) : torch::Tensor();
    if (key_bias.defined()) {
      TORCH_CHECK(key_bias.size(3) == total, "key_bias must cover cache + new keys");
      bias = key_bias;
    }
  }
  if (bias.defined()) mask = mask.defined() ? mask + bias : bias;

  // The residual stream is kept as [B*S, D] so that every projection is one
  // 2-D BLAS call with the residual addition folded into it.
  const double scale = 1.0 / std::sqrt(double(head_dim_));
  const int64_t d = config_.d_model;
  const int64_t h = config_.n_heads;
  torch::Tensor x = embed_.index_select(0, tokens.reshape({-1}));  // [B*S, D]
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    torch::Tensor qkv = Project(norm(x, l.attn_norm), l.qkv);  // [B*S, 3D]
    torch::Tensor q, k, v;                                     // [B,H,S|total,Dh]
    if (fused) {
      // Queries come back pre-multiplied by the attention scale.
      q = RotateIntoCache(qkv, positions, rope_table_, h, past, scale, cache->keys[i],
                          cache->values[i]);
      k = cache->keys[i].narrow(2, 0, total);
      v = cache->values[i].narrow(2, 0, total);
    } else {
      qkv = qkv.view({b, s, 3, h, head_dim_}).permute({2, 0, 3, 1, 4});  // [3,B,H,S,Dh]
      torch::Tensor qk = ApplyRope(qkv.narrow(0, 0, 2), cos, sin);       // [2,B,H,S,Dh]
      q = qk[0];
      k = qk[1];
      v = qkv[2];
      if (cache != nullptr) {
        cache->keys[i].narrow(2, past, s).copy_(k);
        cache->values[i].narrow(2, past, s).copy_(v);
        k = cache->keys[i].narrow(2, 0, total);
        v = cache->values[i].narrow(2, 0, total);
      }
    }
    torch::Tensor scores = torch::matmul(q, k.transpose(-2, -1));  // [B,H,S,total]
    if (!fused) scores = scores * scale;
    if (mask.defined()) scores = scores + mask;
    torch::Tensor attn = torch::matmul(torch::softmax(scores, -1), v);  // [B,H,S,Dh]
    attn = attn.transpose(1, 2).reshape({b * s, d});
    x = Project(attn, l.out, x);
    torch::Tensor gu = Project(norm(x, l.mlp_norm), l.gate_up);  // [B*S, 2F]
    torch::Tensor gate = gu.narrow(-1, 0, config_.d_ff);
    torch::Tensor up = gu.narrow(-1, config_.d_ff, config_.d_ff);
    x = Project(torch::silu(gate) * up, l.down, x);
  }
  if (cache != nullptr) cache->length = total;
  return norm(x, final_norm_).view({b, s, d});
}

absl::StatusOr<Transformer> CreateTransformer(const rlvr::ModelConfig& config, int vocab_size,
                                              uint64_t init_seed) {
  if (vocab_size < 1) return absl::InvalidArgumentError("model: vocab_size must be >= 1");
  if (config.n_heads < 1 || config.d_model % config.n_heads != 0) {
    return absl::InvalidArgumentError("model: d_model must be divisible by n_heads");
  }
  if ((config.d_model / config.n_heads) % 2 != 0) {
    return absl::InvalidArgumentError("model: head dimension must be even (RoPE)");
  }
  if (config.n_layers < 1 || config.d_ff < 1) {
    return absl::InvalidArgumentError("model: n_layers and d_ff must be >= 1");
  }
  try {
    torch::manual_seed(init_seed);
    return Transformer(config, vocab_size);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("model: ", e.what()));
  }
}

}  // namespace rlvr::policy
