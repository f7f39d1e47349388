#include "common/policy/model.h"

#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/policy/decode_kernels.h"

namespace rlvr::policy {
namespace {

// Additive mask value for keys that must not be attended to. Finite so that a
// query whose keys are all masked (a pad position) gets a harmless uniform
// softmax instead of NaN; exp(kMaskValue - max) is exactly 0 otherwise.
constexpr double kMaskValue = -1e9;

// Rotates the pairs (x[..., i], x[..., i + D/2]) by the given angles.
// x [..., B, H, S, D]; cos/sin [B, 1, S, D/2] (broadcast over the leading
// dimensions, so queries and keys can be rotated in one pass).
torch::Tensor ApplyRope(const torch::Tensor& x, const torch::Tensor& cos,
                        const torch::Tensor& sin) {
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
    torch::Tensor y =
        residual.defined() ? torch::addmv(residual.reshape({-1}), w, row) : torch::mv(w, row);
    return y.view({1, -1});
  }
  return residual.defined() ? torch::addmm(residual, x, w.t()) : torch::mm(x, w.t());
}

// What each parameter is, for the constructor to keep a handle on it.
enum class Role {
  kEmbed,
  kFinalNorm,
  kLmHead,
  kAttnNorm,
  kMlpNorm,
  kQkv,
  kGateUp,
  kQ,
  kK,
  kV,
  kQBias,
  kKBias,
  kVBias,
  kOut,
  kOutBias,
  kQNorm,
  kKNorm,
  kGate,
  kUp,
  kGateBias,
  kUpBias,
  kDown,
  kDownBias
};

struct ParamSpec {
  std::string name;
  std::vector<int64_t> dims;
  int layer;  // -1 for model-level parameters.
  Role role;
};

bool IsNorm(Role r) {
  return r == Role::kFinalNorm || r == Role::kAttnNorm || r == Role::kMlpNorm ||
         r == Role::kQNorm || r == Role::kKNorm;
}
bool IsBias(Role r) {
  return r == Role::kQBias || r == Role::kKBias || r == Role::kVBias || r == Role::kOutBias ||
         r == Role::kGateBias || r == Role::kUpBias || r == Role::kDownBias;
}

int64_t HeadDim(const rlvr::ModelConfig& c) {
  return c.head_dim > 0 ? c.head_dim : c.d_model / c.n_heads;
}
int64_t KvHeads(const rlvr::ModelConfig& c) { return c.n_kv_heads > 0 ? c.n_kv_heads : c.n_heads; }

// Every parameter in named_parameters() order: a module lists its own
// parameters first, then its submodules in the order they were first
// registered, and the constructor registers in exactly this order.
std::vector<ParamSpec> Specs(const rlvr::ModelConfig& c, int vocab) {
  const int64_t d = c.d_model;
  const int64_t ff = c.d_ff;
  std::vector<ParamSpec> out;
  if (c.arch == "builtin") {
    out.push_back({"embed", {vocab, d}, -1, Role::kEmbed});
    out.push_back({"final_norm", {d}, -1, Role::kFinalNorm});
    for (int i = 0; i < c.n_layers; ++i) {
      const std::string block = absl::StrCat("layers.", i, ".");
      out.push_back({block + "attn_norm", {d}, i, Role::kAttnNorm});
      out.push_back({block + "qkv", {3 * d, d}, i, Role::kQkv});
      out.push_back({block + "out", {d, d}, i, Role::kOut});
      out.push_back({block + "mlp_norm", {d}, i, Role::kMlpNorm});
      out.push_back({block + "gate_up", {2 * ff, d}, i, Role::kGateUp});
      out.push_back({block + "down", {d, ff}, i, Role::kDown});
    }
    return out;
  }
  const int64_t dh = HeadDim(c);
  const int64_t q_width = c.n_heads * dh;
  const int64_t kv_width = KvHeads(c) * dh;
  out.push_back({"model.embed_tokens.weight", {vocab, d}, -1, Role::kEmbed});
  for (int i = 0; i < c.n_layers; ++i) {
    const std::string attn = absl::StrCat("model.layers.", i, ".self_attn.");
    const std::string mlp = absl::StrCat("model.layers.", i, ".mlp.");
    const std::string block = absl::StrCat("model.layers.", i, ".");
    out.push_back({attn + "q_proj.weight", {q_width, d}, i, Role::kQ});
    if (c.qkv_bias) out.push_back({attn + "q_proj.bias", {q_width}, i, Role::kQBias});
    out.push_back({attn + "k_proj.weight", {kv_width, d}, i, Role::kK});
    if (c.qkv_bias) out.push_back({attn + "k_proj.bias", {kv_width}, i, Role::kKBias});
    out.push_back({attn + "v_proj.weight", {kv_width, d}, i, Role::kV});
    if (c.qkv_bias) out.push_back({attn + "v_proj.bias", {kv_width}, i, Role::kVBias});
    out.push_back({attn + "o_proj.weight", {d, q_width}, i, Role::kOut});
    if (c.o_bias) out.push_back({attn + "o_proj.bias", {d}, i, Role::kOutBias});
    if (c.qk_norm) {
      out.push_back({attn + "q_norm.weight", {dh}, i, Role::kQNorm});
      out.push_back({attn + "k_norm.weight", {dh}, i, Role::kKNorm});
    }
    out.push_back({mlp + "gate_proj.weight", {ff, d}, i, Role::kGate});
    if (c.mlp_bias) out.push_back({mlp + "gate_proj.bias", {ff}, i, Role::kGateBias});
    out.push_back({mlp + "up_proj.weight", {ff, d}, i, Role::kUp});
    if (c.mlp_bias) out.push_back({mlp + "up_proj.bias", {ff}, i, Role::kUpBias});
    out.push_back({mlp + "down_proj.weight", {d, ff}, i, Role::kDown});
    if (c.mlp_bias) out.push_back({mlp + "down_proj.bias", {d}, i, Role::kDownBias});
    out.push_back({block + "input_layernorm.weight", {d}, i, Role::kAttnNorm});
    out.push_back({block + "post_attention_layernorm.weight", {d}, i, Role::kMlpNorm});
  }
  out.push_back({"model.norm.weight", {d}, -1, Role::kFinalNorm});
  if (!c.tie_embeddings) out.push_back({"lm_head.weight", {vocab, d}, -1, Role::kLmHead});
  return out;
}

// Registers `value` as parameter `dotted` ("a.b.w": submodule a, its
// submodule b, parameter w) under `root`, creating the plain submodules on
// the way (parameter names may not contain '.').
torch::Tensor RegisterAt(torch::nn::Module& root, const std::string& dotted, torch::Tensor value) {
  std::vector<std::string> parts = absl::StrSplit(dotted, '.');
  torch::nn::Module* m = &root;
  std::shared_ptr<torch::nn::Module> holder;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    auto children = m->named_children();
    if (auto* found = children.find(parts[i])) {
      holder = *found;
    } else {
      holder = m->register_module(parts[i], std::make_shared<torch::nn::Module>());
    }
    m = holder.get();
  }
  return m->register_parameter(parts.back(), std::move(value));
}

// The llama3 RoPE frequency remap (Llama 3.1/3.2 rope_scaling): wavelengths
// longer than original/low_freq_factor are divided by `factor`, shorter than
// original/high_freq_factor kept, and those between interpolated smoothly.
torch::Tensor Llama3InvFreq(const torch::Tensor& inv_freq, const rlvr::ModelConfig& c) {
  const double old_len = c.rope_original_max_position;
  const double low_wavelen = old_len / c.rope_low_freq_factor;
  const double high_wavelen = old_len / c.rope_high_freq_factor;
  torch::Tensor out = inv_freq.clone();
  auto f = out.accessor<double, 1>();
  for (int64_t i = 0; i < out.size(0); ++i) {
    const double freq = f[i];
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < high_wavelen) continue;
    if (wavelen > low_wavelen) {
      f[i] = freq / c.rope_factor;
      continue;
    }
    const double smooth = (old_len / wavelen - c.rope_low_freq_factor) /
                          (c.rope_high_freq_factor - c.rope_low_freq_factor);
    f[i] = (1 - smooth) * freq / c.rope_factor + smooth * freq;
  }
  return out;
}

bool IsReduced(torch::ScalarType t) { return t == torch::kBFloat16 || t == torch::kHalf; }

// x @ w^T (+ bias).
torch::Tensor Linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& bias) {
  return Project(x, w, bias);
}

}  // namespace

std::vector<ParameterShape> ParameterLayout(const rlvr::ModelConfig& config, int vocab_size) {
  std::vector<ParameterShape> out;
  for (ParamSpec& p : Specs(config, vocab_size)) out.push_back({p.name, p.dims});
  return out;
}

TransformerImpl::TransformerImpl(const rlvr::ModelConfig& config, int vocab_size,
                                 std::optional<uint64_t> init_seed,
                                 const torch::TensorOptions& empty_options)
    : config_(config), vocab_size_(vocab_size), hf_(config.arch != "builtin") {
  TORCH_CHECK(vocab_size >= 1, "vocab_size must be >= 1");
  TORCH_CHECK(config.vocab_size == 0 || config.vocab_size == vocab_size,
              "vocab_size differs from config.vocab_size");
  const absl::Status valid = ValidateModelConfig(config);
  TORCH_CHECK(valid.ok(), std::string(valid.message()));
  TORCH_CHECK(config.n_layers >= 1 && config.d_ff >= 1, "n_layers and d_ff must be >= 1");
  head_dim_ = HeadDim(config);
  n_kv_heads_ = KvHeads(config);
  TORCH_CHECK(head_dim_ % 2 == 0, "head dimension must be even for RoPE");
  const double std = config.init_std;
  torch::NoGradGuard no_grad;
  // Seeded like torch::manual_seed seeds the default generator, so a seed
  // gives the weights it gave when the default generator was used.
  std::optional<at::Generator> gen;
  if (init_seed.has_value()) gen = at::make_generator<at::CPUGeneratorImpl>(*init_seed);
  layers_.resize(config.n_layers);
  // Registration in Specs order keeps named_parameters() == ParameterLayout
  // and, for the built-in model, the RNG draws in their original order.
  for (ParamSpec& p : Specs(config, vocab_size)) {
    torch::Tensor value;
    if (!gen.has_value()) {
      value = torch::empty(p.dims, empty_options);
    } else if (IsNorm(p.role)) {
      value = torch::ones(p.dims);
    } else if (IsBias(p.role)) {
      value = torch::zeros(p.dims);
    } else {
      value = torch::randn(p.dims, *gen) * std;
    }
    torch::Tensor t = RegisterAt(*this, p.name, std::move(value));
    Layer* l = p.layer >= 0 ? &layers_[p.layer] : nullptr;
    switch (p.role) {
      case Role::kEmbed:
        embed_ = t;
        break;
      case Role::kFinalNorm:
        final_norm_ = t;
        break;
      case Role::kLmHead:
        lm_head_ = t;
        break;
      case Role::kAttnNorm:
        l->attn_norm = t;
        break;
      case Role::kMlpNorm:
        l->mlp_norm = t;
        break;
      case Role::kQkv:
        l->qkv = t;
        break;
      case Role::kGateUp:
        l->gate_up = t;
        break;
      case Role::kQ:
        l->q = t;
        break;
      case Role::kK:
        l->k = t;
        break;
      case Role::kV:
        l->v = t;
        break;
      case Role::kQBias:
        l->q_bias = t;
        break;
      case Role::kKBias:
        l->k_bias = t;
        break;
      case Role::kVBias:
        l->v_bias = t;
        break;
      case Role::kOut:
        l->out = t;
        break;
      case Role::kOutBias:
        l->out_bias = t;
        break;
      case Role::kQNorm:
        l->q_norm = t;
        break;
      case Role::kKNorm:
        l->k_norm = t;
        break;
      case Role::kGate:
        l->gate = t;
        break;
      case Role::kUp:
        l->up = t;
        break;
      case Role::kGateBias:
        l->gate_bias = t;
        break;
      case Role::kUpBias:
        l->up_bias = t;
        break;
      case Role::kDown:
        l->down = t;
        break;
      case Role::kDownBias:
        l->down_bias = t;
        break;
    }
  }
  inv_freq_ = torch::pow(config.rope_theta,
                         -torch::arange(0, head_dim_, 2, torch::kFloat64) / double(head_dim_));
  if (config.rope_scaling == "llama3") inv_freq_ = Llama3InvFreq(inv_freq_, config);
  // The same float64 angles ForwardWithPositions would compute, tabulated
  // once for the first positions: decoding then looks them up instead of
  // spending ~8 small tensor ops per step on them. HF contexts (32K-128K)
  // are not tabulated in full: later positions are computed.
  const int64_t rows = std::min<int64_t>(config.max_seq_len, kMaxRopeTable);
  torch::Tensor angles = torch::arange(rows, torch::kFloat64).unsqueeze(-1) * inv_freq_;
  rope_table_ = torch::cat({angles.cos(), angles.sin()}, -1);  // [rows, head_dim]
}

torch::ScalarType TransformerImpl::compute_dtype() const {
  return compute_dtype_.value_or(embed_.scalar_type());
}

void TransformerImpl::set_compute_dtype(torch::ScalarType dtype) {
  const torch::ScalarType params = embed_.scalar_type();
  TORCH_CHECK(dtype == params || (params == torch::kFloat32 && IsReduced(dtype)), "compute dtype ",
              c10::toString(dtype), " needs float32 parameters (they are ", c10::toString(params),
              ")");
  compute_dtype_ = dtype == params ? c10::nullopt : c10::make_optional(dtype);
}

torch::Tensor TransformerImpl::InComputeDtype(const torch::Tensor& param) const {
  if (!compute_dtype_.has_value() || !param.defined() || param.scalar_type() == *compute_dtype_) {
    return param;
  }
  return param.to(*compute_dtype_);
}

std::pair<torch::Tensor, torch::Tensor> TransformerImpl::RopeAngles(const torch::Tensor& positions,
                                                                    bool in_table) const {
  auto dtype = compute_dtype();
  if (IsReduced(dtype)) dtype = torch::kFloat32;  // HF rotates in float32 under bf16.
  const auto device = embed_.device();
  const int64_t b = positions.size(0);
  const int64_t s = positions.size(1);
  const int64_t half = head_dim_ / 2;
  if (in_table) {
    torch::Tensor cs = rope_table_.index_select(0, positions.reshape({-1}).cpu())
                           .to(device, dtype)
                           .view({b, 1, s, 2 * half});
    return {cs.narrow(-1, 0, half), cs.narrow(-1, half, half)};
  }
  torch::Tensor angles =
      positions.cpu().to(torch::kFloat64).unsqueeze(-1) * inv_freq_;  // [B,S,D/2]
  return {angles.cos().to(device, dtype).unsqueeze(1), angles.sin().to(device, dtype).unsqueeze(1)};
}

int64_t TransformerImpl::num_parameters() const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  return n;
}

torch::Tensor TransformerImpl::RmsNorm(const torch::Tensor& x, const torch::Tensor& weight) const {
  const double eps = config_.rms_norm_eps;
  if (IsReduced(x.scalar_type())) {
    // As HF: variance and normalisation in float32, back to the input dtype,
    // then the weight.
    torch::Tensor xf = x.to(torch::kFloat32);
    return weight *
           (xf * torch::rsqrt(xf.pow(2).mean(-1, /*keepdim=*/true) + eps)).to(x.scalar_type());
  }
  return x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps) * weight;
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

TransformerImpl::Qkv TransformerImpl::ProjectQkv(const Layer& l, const torch::Tensor& xn) const {
  const int64_t h = config_.n_heads;
  const int64_t kv = n_kv_heads_;
  const int64_t dh = head_dim_;
  Qkv out;
  if (!hf_) {
    out.fused = Project(xn, InComputeDtype(l.qkv));
    out.q = out.fused.narrow(1, 0, h * dh);
    out.k = out.fused.narrow(1, h * dh, kv * dh);
    out.v = out.fused.narrow(1, (h + kv) * dh, kv * dh);
  } else {
    out.q = Linear(xn, InComputeDtype(l.q), InComputeDtype(l.q_bias));
    out.k = Linear(xn, InComputeDtype(l.k), InComputeDtype(l.k_bias));
    out.v = Linear(xn, InComputeDtype(l.v), InComputeDtype(l.v_bias));
  }
  return out;
}

torch::Tensor TransformerImpl::FinishLayer(const Layer& l, const torch::Tensor& attn,
                                           const torch::Tensor& x_in, bool fused_norm) const {
  auto param = [&](const torch::Tensor& p) { return InComputeDtype(p); };
  torch::Tensor x = Project(attn, param(l.out), x_in);
  if (l.out_bias.defined()) x = x + param(l.out_bias);
  torch::Tensor xn =
      fused_norm ? RmsNormRows(x, l.mlp_norm, config_.rms_norm_eps) : RmsNorm(x, param(l.mlp_norm));
  torch::Tensor gate, up;
  if (!hf_) {
    torch::Tensor gu = Project(xn, param(l.gate_up));  // [N, 2F]
    gate = gu.narrow(-1, 0, config_.d_ff);
    up = gu.narrow(-1, config_.d_ff, config_.d_ff);
  } else {
    gate = Linear(xn, param(l.gate), param(l.gate_bias));
    up = Linear(xn, param(l.up), param(l.up_bias));
  }
  x = Project(torch::silu(gate) * up, param(l.down), x);
  if (l.down_bias.defined()) x = x + param(l.down_bias);
  return x;
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
  return Project(h.view({-1, h.size(-1)}), InComputeDtype(OutputWeight()))
      .view({h.size(0), h.size(1), vocab_size_});
}

KvCache TransformerImpl::NewCache(int64_t batch, int64_t capacity) const {
  KvCache cache;
  const auto opts = embed_.options().dtype(compute_dtype()).requires_grad(false);
  for (size_t i = 0; i < layers_.size(); ++i) {
    cache.keys.push_back(torch::zeros({batch, n_kv_heads_, capacity, head_dim_}, opts));
    cache.values.push_back(torch::zeros({batch, n_kv_heads_, capacity, head_dim_}, opts));
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
  // The RoPE table covers [0, rope_table_ rows); other positions are computed.
  bool positions_in_table = true;
  if (positions.numel() == 0) {
    positions_in_table = true;
  } else if (positions.is_cpu() && positions.is_contiguous()) {
    const int64_t* p = positions.data_ptr<int64_t>();
    const auto [lo, hi] = std::minmax_element(p, p + positions.numel());
    TORCH_CHECK(*lo >= 0, "positions must be >= 0");
    positions_in_table = *hi < rope_table_.size(0);
  } else {
    TORCH_CHECK(positions.min().item<int64_t>() >= 0, "positions must be >= 0");
    positions_in_table = positions.max().item<int64_t>() < rope_table_.size(0);
  }
  const int64_t past = cache != nullptr ? cache->length : 0;
  if (cache != nullptr) {
    TORCH_CHECK(cache->keys.size() == layers_.size() && cache->key_bias.size(0) == b,
                "cache does not match model/batch");
    TORCH_CHECK(past + s <= cache->capacity, "KV cache capacity exceeded");
  }
  const int64_t total = past + s;
  const auto dtype = compute_dtype();
  // Decoding into a cache without autograd (Generate) takes the fused loops
  // of decode_kernels.h; everything else uses the tensor ops below.
  const bool fused = cache != nullptr && !torch::GradMode::is_enabled() &&
                     dtype == torch::kFloat32 && embed_.scalar_type() == torch::kFloat32 &&
                     embed_.is_cpu() && positions_in_table && positions.is_contiguous() &&
                     cache->keys.front().is_contiguous() && cache->values.front().is_contiguous();
  // Parameters in the compute dtype (themselves unless mixed precision).
  auto param = [&](const torch::Tensor& p) { return InComputeDtype(p); };
  auto norm = [&](const torch::Tensor& x, const torch::Tensor& w) {
    return fused ? RmsNormRows(x, w, config_.rms_norm_eps) : RmsNorm(x, param(w));
  };

  // RoPE angles per row and position, [B,1,S,Dh/2] each (the fused path reads
  // the table directly).
  torch::Tensor cos, sin;
  if (!fused) std::tie(cos, sin) = RopeAngles(positions, positions_in_table);
  auto rope = [&](const torch::Tensor& x) {
    if (!IsReduced(x.scalar_type())) return ApplyRope(x, cos, sin);
    return ApplyRope(x.to(torch::kFloat32), cos, sin).to(x.scalar_type());
  };

  // Additive attention mask [B or 1, 1, S, total]: causal among the new
  // tokens plus the caller's key bias.
  torch::Tensor mask;
  if (s > 1) {
    mask = torch::full({s, total}, kMaskValue, embed_.options().dtype(dtype).requires_grad(false))
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
  const int64_t h = config_.n_heads;
  const int64_t kv = n_kv_heads_;
  const int64_t rep = h / kv;  // Query heads per key/value head (GQA).
  const int64_t dh = head_dim_;
  // [B*S, D]; only the looked-up rows are cast under mixed precision.
  torch::Tensor x = embed_.index_select(0, tokens.reshape({-1}).to(embed_.device()));
  if (x.scalar_type() != dtype) x = x.to(dtype);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    torch::Tensor xn = norm(x, l.attn_norm);
    Qkv proj = ProjectQkv(l, xn);
    torch::Tensor& qf = proj.q;  // [B*S, H*Dh], [B*S, KV*Dh], [B*S, KV*Dh]
    torch::Tensor& kf = proj.k;
    torch::Tensor& vf = proj.v;
    torch::Tensor& qkv = proj.fused;  // Built-in: the fused projection.
    torch::Tensor q, k, v;            // [B,H,S,Dh], [B,KV,S|total,Dh]
    if (fused) {
      if (hf_) qkv = torch::cat({qf, kf, vf}, 1);
      // Queries come back pre-multiplied by the attention scale.
      q = RotateIntoCache(qkv, positions, rope_table_, h, kv, past, scale, l.q_norm, l.k_norm,
                          config_.rms_norm_eps, cache->keys[i], cache->values[i]);
      k = cache->keys[i].narrow(2, 0, total);
      v = cache->values[i].narrow(2, 0, total);
    } else {
      q = qf.view({b, s, h, dh});
      k = kf.view({b, s, kv, dh});
      v = vf.view({b, s, kv, dh}).permute({0, 2, 1, 3});
      if (l.q_norm.defined()) {
        q = RmsNorm(q, param(l.q_norm));
        k = RmsNorm(k, param(l.k_norm));
      }
      q = rope(q.permute({0, 2, 1, 3}));
      k = rope(k.permute({0, 2, 1, 3}));
      if (cache != nullptr) {
        cache->keys[i].narrow(2, past, s).copy_(k);
        cache->values[i].narrow(2, past, s).copy_(v);
        k = cache->keys[i].narrow(2, 0, total);
        v = cache->values[i].narrow(2, 0, total);
      }
    }
    // Grouped-query attention without copying keys: the `rep` query heads
    // sharing key/value head g (HF's repeat_kv: heads g*rep .. g*rep+rep-1)
    // are stacked along the query axis, [B, KV, rep*S, Dh].
    torch::Tensor qg = rep == 1 ? q : q.reshape({b, kv, rep * s, dh});
    torch::Tensor scores = torch::matmul(qg, k.transpose(-2, -1));  // [B,KV,rep*S,total]
    if (rep != 1) scores = scores.view({b, h, s, total});
    if (!fused) scores = scores * scale;
    if (mask.defined()) scores = scores + mask;
    torch::Tensor probs = IsReduced(dtype) ? torch::softmax(scores, -1, torch::kFloat32).to(dtype)
                                           : torch::softmax(scores, -1);
    if (rep != 1) probs = probs.view({b, kv, rep * s, total});
    torch::Tensor attn = torch::matmul(probs, v);  // [B,KV,rep*S,Dh] = [B,H,S,Dh]
    attn = attn.reshape({b, h, s, dh}).transpose(1, 2).reshape({b * s, h * dh});
    x = FinishLayer(l, attn, x, fused);
  }
  if (cache != nullptr) cache->length = total;
  return norm(x, final_norm_).view({b, s, x.size(-1)});
}

int64_t KvPool::block_bytes() const {
  int64_t bytes = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    bytes += (keys[i].numel() + values[i].numel()) * keys[i].element_size();
  }
  return num_blocks > 0 ? bytes / num_blocks : 0;
}

KvPool TransformerImpl::NewKvPool(int64_t num_blocks, int64_t block_tokens) const {
  TORCH_CHECK(num_blocks >= 1 && block_tokens >= 1, "KV pool needs >= 1 block of >= 1 position");
  KvPool pool;
  const auto opts = embed_.options().dtype(compute_dtype()).requires_grad(false);
  for (size_t i = 0; i < layers_.size(); ++i) {
    pool.keys.push_back(torch::zeros({num_blocks * block_tokens, n_kv_heads_, head_dim_}, opts));
    pool.values.push_back(torch::zeros({num_blocks * block_tokens, n_kv_heads_, head_dim_}, opts));
  }
  pool.num_blocks = num_blocks;
  pool.block_tokens = block_tokens;
  return pool;
}

namespace {

// The slot of position p of a paged sequence.
int64_t SlotOf(const PagedSeq& seq, int64_t block_tokens, int64_t p) {
  return int64_t{seq.blocks[p / block_tokens]} * block_tokens + p % block_tokens;
}

// Attention of one paged sequence's `count` queries q [count, H, Dh]
// (already scaled) over its positions [0, past + count) in the pool,
// causal among the new ones, with tensor ops (any device and dtype):
// [count, H * Dh].
torch::Tensor SeqAttention(const torch::Tensor& q, const torch::Tensor& pool_keys,
                           const torch::Tensor& pool_values, const torch::Tensor& slots,
                           int64_t past, int64_t kv) {
  const int64_t c = q.size(0);
  const int64_t h = q.size(1);
  const int64_t dh = q.size(2);
  const int64_t len = slots.size(0);
  const int64_t rep = h / kv;
  const auto dtype = q.scalar_type();
  torch::Tensor k = pool_keys.index_select(0, slots).permute({1, 0, 2});    // [KV, L, Dh]
  torch::Tensor v = pool_values.index_select(0, slots).permute({1, 0, 2});  // [KV, L, Dh]
  // The rep query heads of key/value head g are heads g*rep .. g*rep+rep-1.
  torch::Tensor qg = q.permute({1, 0, 2}).reshape({kv, rep * c, dh});
  torch::Tensor scores = torch::matmul(qg, k.transpose(1, 2)).view({h, c, len});
  if (c > 1) {
    scores = scores + torch::full({c, len}, kMaskValue, scores.options()).triu(past + 1);
  }
  torch::Tensor probs = IsReduced(dtype) ? torch::softmax(scores, -1, torch::kFloat32).to(dtype)
                                         : torch::softmax(scores, -1);
  torch::Tensor out = torch::matmul(probs.view({kv, rep * c, len}), v);  // [KV, rep*c, Dh]
  return out.view({h, c, dh}).permute({1, 0, 2}).reshape({c, h * dh});
}

// Attention of single-token queries q [N, H, Dh] (already scaled), query n
// over its first lengths[n] positions, with tensor ops: the keys and values
// are gathered into [N, KV, max length, Dh] (padding masked).
torch::Tensor BatchedDecodeAttention(const torch::Tensor& q, const torch::Tensor& pool_keys,
                                     const torch::Tensor& pool_values, const torch::Tensor& index,
                                     const torch::Tensor& bias, int64_t kv) {
  const int64_t n = q.size(0);
  const int64_t h = q.size(1);
  const int64_t dh = q.size(2);
  const int64_t len = index.size(1);
  const int64_t rep = h / kv;
  const auto dtype = q.scalar_type();
  torch::Tensor flat = index.reshape({-1});
  torch::Tensor k = pool_keys.index_select(0, flat).view({n, len, kv, dh}).permute({0, 2, 1, 3});
  torch::Tensor v = pool_values.index_select(0, flat).view({n, len, kv, dh}).permute({0, 2, 1, 3});
  torch::Tensor scores = torch::matmul(q.view({n, kv, rep, dh}), k.transpose(-2, -1));
  scores = scores + bias;  // [N, KV, rep, L] + [N, 1, 1, L]
  torch::Tensor probs = IsReduced(dtype) ? torch::softmax(scores, -1, torch::kFloat32).to(dtype)
                                         : torch::softmax(scores, -1);
  return torch::matmul(probs, v).reshape({n, h * dh});  // [N, KV, rep, Dh]
}

}  // namespace

torch::Tensor TransformerImpl::HiddenPaged(const std::vector<int64_t>& tokens_in,
                                           const std::vector<PagedSeq>& seqs, KvPool& pool,
                                           bool fused_allowed) {
  TORCH_CHECK(!seqs.empty(), "HiddenPaged needs a sequence");
  TORCH_CHECK(pool.keys.size() == layers_.size() && pool.keys.front().size(1) == n_kv_heads_ &&
                  pool.keys.front().size(2) == head_dim_,
              "KV pool does not match the model");
  const auto dtype = compute_dtype();
  TORCH_CHECK(
      pool.keys.front().scalar_type() == dtype && pool.keys.front().device() == embed_.device(),
      "KV pool dtype/device differ from the model's");
  const int64_t bt = pool.block_tokens;
  const int64_t n_tok = static_cast<int64_t>(tokens_in.size());
  // Positions and slots of the new tokens; which queries are single tokens.
  torch::Tensor tokens = torch::tensor(tokens_in, torch::kInt64);
  torch::Tensor positions = torch::empty({n_tok}, torch::kInt64);
  torch::Tensor slots = torch::empty({n_tok}, torch::kInt64);
  int64_t* pos = positions.data_ptr<int64_t>();
  int64_t* slot = slots.data_ptr<int64_t>();
  std::vector<int64_t> starts;
  std::vector<int64_t> last;  // Index of each sequence's last token.
  bool all_single = true;
  int64_t max_pos = 0;
  {
    int64_t at = 0;
    for (const PagedSeq& sq : seqs) {
      TORCH_CHECK(sq.count >= 1 && sq.past >= 0, "a paged sequence needs new tokens");
      TORCH_CHECK(sq.num_blocks * bt >= sq.past + sq.count, "block table too short");
      for (int64_t b = 0; b < sq.num_blocks; ++b) {
        TORCH_CHECK(sq.blocks[b] >= 0 && sq.blocks[b] < pool.num_blocks, "block outside the pool");
      }
      starts.push_back(at);
      for (int64_t i = 0; i < sq.count; ++i, ++at) {
        TORCH_CHECK(at < n_tok, "fewer tokens than the sequences' counts");
        pos[at] = sq.past + i;
        slot[at] = SlotOf(sq, bt, sq.past + i);
      }
      max_pos = std::max(max_pos, sq.past + sq.count - 1);
      last.push_back(at - 1);
      all_single = all_single && sq.count == 1;
    }
    TORCH_CHECK(at == n_tok, "more tokens than the sequences' counts");
  }
  CheckTokenRange(tokens);
  const bool in_table = max_pos < rope_table_.size(0);
  const bool fused = fused_allowed && embed_.is_cpu() && dtype == torch::kFloat32 &&
                     embed_.scalar_type() == torch::kFloat32;
  const bool fused_rotate = fused && in_table;
  const auto device = embed_.device();
  torch::Tensor slots_dev = slots.to(device);
  const double scale = 1.0 / std::sqrt(double(head_dim_));
  const int64_t h = config_.n_heads;
  const int64_t kv = n_kv_heads_;
  const int64_t dh = head_dim_;

  // Single-token queries (decoding) go through the fused loops on the CPU,
  // or one padded gather with tensor ops; longer ones (prompts) through a
  // gather per sequence with tensor ops.
  std::vector<int64_t> single;  // Sequence indices.
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (seqs[i].count == 1) single.push_back(static_cast<int64_t>(i));
  }
  std::vector<const int*> single_blocks;
  std::vector<int64_t> single_len;
  int64_t max_len = 0;
  for (int64_t i : single) {
    single_blocks.push_back(seqs[i].blocks);
    single_len.push_back(seqs[i].past + 1);
    max_len = std::max(max_len, seqs[i].past + 1);
  }
  torch::Tensor single_tokens, single_index, single_bias;
  if (!single.empty() && !all_single) {
    std::vector<int64_t> idx;
    for (int64_t i : single) idx.push_back(starts[i]);
    single_tokens = torch::tensor(idx, torch::kInt64).to(device);
  }
  if (!single.empty() && !fused) {
    const int64_t n = static_cast<int64_t>(single.size());
    torch::Tensor index = torch::zeros({n, max_len}, torch::kInt64);
    torch::Tensor bias = torch::zeros({n, 1, 1, max_len}, torch::kFloat32);
    int64_t* ip = index.data_ptr<int64_t>();
    float* bp = bias.data_ptr<float>();
    for (int64_t r = 0; r < n; ++r) {
      const PagedSeq& sq = seqs[single[r]];
      for (int64_t p = 0; p < max_len; ++p) {
        if (p <= sq.past) {
          ip[r * max_len + p] = SlotOf(sq, bt, p);
        } else {
          bp[r * max_len + p] = static_cast<float>(kMaskValue);
        }
      }
    }
    single_index = index.to(device);
    single_bias = bias.to(device, dtype);
  }
  std::vector<torch::Tensor> seq_slots(seqs.size());
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (seqs[i].count == 1) continue;
    const int64_t len = seqs[i].past + seqs[i].count;
    torch::Tensor sl = torch::empty({len}, torch::kInt64);
    for (int64_t p = 0; p < len; ++p) sl.data_ptr<int64_t>()[p] = SlotOf(seqs[i], bt, p);
    seq_slots[i] = sl.to(device);
  }
  torch::Tensor cos, sin;
  if (!fused_rotate) std::tie(cos, sin) = RopeAngles(positions.unsqueeze(0), in_table);
  auto rope = [&](const torch::Tensor& x) {  // x [1, heads, N, Dh]
    if (!IsReduced(x.scalar_type())) return ApplyRope(x, cos, sin);
    return ApplyRope(x.to(torch::kFloat32), cos, sin).to(x.scalar_type());
  };
  auto norm = [&](const torch::Tensor& x, const torch::Tensor& w) {
    return fused ? RmsNormRows(x, w, config_.rms_norm_eps) : RmsNorm(x, InComputeDtype(w));
  };

  torch::Tensor x = embed_.index_select(0, tokens.to(device));  // [N, D]
  if (x.scalar_type() != dtype) x = x.to(dtype);
  for (size_t i = 0; i < layers_.size(); ++i) {
    const Layer& l = layers_[i];
    torch::Tensor xn = norm(x, l.attn_norm);
    Qkv proj = ProjectQkv(l, xn);
    torch::Tensor q;  // [N, H, Dh], scaled.
    if (fused_rotate) {
      torch::Tensor qkv = hf_ ? torch::cat({proj.q, proj.k, proj.v}, 1) : proj.fused;
      q = RotateIntoPool(qkv, positions, slots, rope_table_, h, kv, scale, l.q_norm, l.k_norm,
                         config_.rms_norm_eps, pool.keys[i], pool.values[i]);
    } else {
      torch::Tensor qh = proj.q.reshape({n_tok, h, dh});
      torch::Tensor kh = proj.k.reshape({n_tok, kv, dh});
      if (l.q_norm.defined()) {
        qh = RmsNorm(qh, InComputeDtype(l.q_norm));
        kh = RmsNorm(kh, InComputeDtype(l.k_norm));
      }
      qh = rope(qh.unsqueeze(0).permute({0, 2, 1, 3}));  // [1, H, N, Dh]
      kh = rope(kh.unsqueeze(0).permute({0, 2, 1, 3}));
      q = (qh.squeeze(0).permute({1, 0, 2}) * scale).contiguous();
      pool.keys[i].index_copy_(0, slots_dev, kh.squeeze(0).permute({1, 0, 2}).contiguous());
      pool.values[i].index_copy_(0, slots_dev, proj.v.reshape({n_tok, kv, dh}).contiguous());
    }
    torch::Tensor attn;  // [N, H*Dh]
    torch::Tensor single_attn;
    if (!single.empty()) {
      torch::Tensor qs = all_single ? q : q.index_select(0, single_tokens);
      if (fused) {
        torch::Tensor scores = torch::empty({qs.size(0), h, max_len}, qs.options());
        PagedScores(qs, pool.keys[i], single_blocks, single_len, bt, scores);
        torch::Tensor probs = torch::softmax(scores, -1);
        single_attn = torch::empty({qs.size(0), h * dh}, qs.options());
        PagedWeightedSum(probs, pool.values[i], single_blocks, single_len, bt, single_attn);
      } else {
        single_attn =
            BatchedDecodeAttention(qs, pool.keys[i], pool.values[i], single_index, single_bias, kv);
      }
    }
    if (all_single) {
      attn = single_attn;
    } else {
      attn = torch::empty({n_tok, h * dh}, q.options());
      if (!single.empty()) attn.index_copy_(0, single_tokens, single_attn);
      for (size_t s = 0; s < seqs.size(); ++s) {
        if (seqs[s].count == 1) continue;
        attn.narrow(0, starts[s], seqs[s].count)
            .copy_(SeqAttention(q.narrow(0, starts[s], seqs[s].count), pool.keys[i], pool.values[i],
                                seq_slots[s], seqs[s].past, kv));
      }
    }
    x = FinishLayer(l, attn, x, fused);
  }
  torch::Tensor last_rows = x.index_select(0, torch::tensor(last, torch::kInt64).to(device));
  return norm(last_rows.contiguous(), final_norm_);
}

absl::StatusOr<Transformer> CreateTransformer(const rlvr::ModelConfig& config, int vocab_size,
                                              uint64_t init_seed) {
  if (vocab_size < 1) return absl::InvalidArgumentError("model: vocab_size must be >= 1");
  if (config.n_heads < 1 || (config.head_dim == 0 && config.d_model % config.n_heads != 0)) {
    return absl::InvalidArgumentError("model: d_model must be divisible by n_heads");
  }
  if (config.vocab_size != 0 && config.vocab_size != vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model: vocab_size ", vocab_size, " differs from model.vocab_size ", config.vocab_size));
  }
  if (absl::Status s = ValidateModelConfig(config); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("model: ", s.message()));
  }
  if (config.n_layers < 1 || config.d_ff < 1) {
    return absl::InvalidArgumentError("model: n_layers and d_ff must be >= 1");
  }
  try {
    return Transformer(config, vocab_size, init_seed);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("model: ", e.what()));
  }
}

}  // namespace rlvr::policy
