#include "common/policy/decode_kernels.h"

#include <cmath>
#include <vector>

namespace rlvr::policy {
namespace {

void CheckFloatCpu(const torch::Tensor& t, const char* name) {
  TORCH_CHECK(t.is_cpu() && t.scalar_type() == torch::kFloat32 && t.is_contiguous(), name,
              " must be a contiguous float32 CPU tensor");
  TORCH_CHECK(!t.requires_grad() || !torch::GradMode::is_enabled(), name,
              ": fused decode kernels do not record autograd");
}

}  // namespace

torch::Tensor RmsNormRows(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  CheckFloatCpu(x, "x");
  CheckFloatCpu(weight, "weight");
  TORCH_CHECK(x.dim() == 2 && weight.dim() == 1 && weight.size(0) == x.size(1),
              "RmsNormRows: x [N, D], weight [D]");
  const int64_t n = x.size(0);
  const int64_t d = x.size(1);
  torch::Tensor y = torch::empty_like(x);
  const float* xp = x.data_ptr<float>();
  const float* wp = weight.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  for (int64_t r = 0; r < n; ++r, xp += d, yp += d) {
    float sum_sq = 0;
    for (int64_t j = 0; j < d; ++j) sum_sq += xp[j] * xp[j];
    const float inv = 1.0f / std::sqrt(sum_sq / static_cast<float>(d) + static_cast<float>(eps));
    for (int64_t j = 0; j < d; ++j) yp[j] = xp[j] * inv * wp[j];
  }
  return y;
}

torch::Tensor RotateIntoCache(const torch::Tensor& qkv, const torch::Tensor& positions,
                              const torch::Tensor& table, int64_t heads, int64_t past,
                              double query_scale, torch::Tensor& cache_keys,
                              torch::Tensor& cache_values) {
  return RotateIntoCache(qkv, positions, table, heads, heads, past, query_scale, torch::Tensor(),
                         torch::Tensor(), 0.0, cache_keys, cache_values);
}

torch::Tensor RotateIntoCache(const torch::Tensor& qkv, const torch::Tensor& positions,
                              const torch::Tensor& table, int64_t heads, int64_t kv_heads,
                              int64_t past, double query_scale, const torch::Tensor& q_norm,
                              const torch::Tensor& k_norm, double norm_eps,
                              torch::Tensor& cache_keys, torch::Tensor& cache_values) {
  CheckFloatCpu(qkv, "qkv");
  CheckFloatCpu(cache_keys, "cache_keys");
  CheckFloatCpu(cache_values, "cache_values");
  TORCH_CHECK(positions.is_cpu() && positions.is_contiguous() &&
                  positions.scalar_type() == torch::kInt64 && positions.dim() == 2,
              "positions must be a contiguous int64 CPU [B, S] tensor");
  TORCH_CHECK(table.is_cpu() && table.is_contiguous() && table.scalar_type() == torch::kFloat64,
              "rotary table must be contiguous float64 on the CPU");
  const int64_t b = positions.size(0);
  const int64_t s = positions.size(1);
  const int64_t dh = table.size(1);
  const int64_t half = dh / 2;
  const int64_t capacity = cache_keys.size(2);
  TORCH_CHECK(kv_heads >= 1 && heads % kv_heads == 0, "kv_heads must divide heads");
  const int64_t width = (heads + 2 * kv_heads) * dh;
  TORCH_CHECK(qkv.dim() == 2 && qkv.size(0) == b * s && qkv.size(1) == width,
              "qkv must be [B*S, (H + 2*KV)*Dh]");
  TORCH_CHECK(cache_keys.sizes() == cache_values.sizes() && cache_keys.dim() == 4 &&
                  cache_keys.size(0) == b && cache_keys.size(1) == kv_heads &&
                  cache_keys.size(3) == dh && past + s <= capacity,
              "cache must be [B, KV, capacity, Dh] with room for the new positions");
  const float* qn = nullptr;
  const float* kn = nullptr;
  if (q_norm.defined() || k_norm.defined()) {
    TORCH_CHECK(q_norm.defined() && k_norm.defined(), "q_norm and k_norm go together");
    CheckFloatCpu(q_norm, "q_norm");
    CheckFloatCpu(k_norm, "k_norm");
    TORCH_CHECK(q_norm.numel() == dh && k_norm.numel() == dh, "q/k norm weights must be [Dh]");
    qn = q_norm.data_ptr<float>();
    kn = k_norm.data_ptr<float>();
  }
  torch::Tensor q = torch::empty({b, heads, s, dh}, qkv.options());
  const float* in = qkv.data_ptr<float>();
  const int64_t* pos = positions.data_ptr<int64_t>();
  const double* tab = table.data_ptr<double>();
  float* qp = q.data_ptr<float>();
  float* kp = cache_keys.data_ptr<float>();
  float* vp = cache_values.data_ptr<float>();
  const float scale = static_cast<float>(query_scale);
  const float eps = static_cast<float>(norm_eps);
  std::vector<float> normed(dh);
  // The head `x` [dh], RMS-normalised and scaled by `w` when w is given.
  auto head = [&](const float* x, const float* w) -> const float* {
    if (w == nullptr) return x;
    float sum_sq = 0;
    for (int64_t j = 0; j < dh; ++j) sum_sq += x[j] * x[j];
    const float inv = 1.0f / std::sqrt(sum_sq / static_cast<float>(dh) + eps);
    for (int64_t j = 0; j < dh; ++j) normed[j] = x[j] * inv * w[j];
    return normed.data();
  };
  for (int64_t r = 0; r < b; ++r) {
    for (int64_t t = 0; t < s; ++t) {
      const int64_t p = pos[r * s + t];
      TORCH_CHECK(p >= 0 && p < table.size(0), "position outside the rotary table");
      const double* cos = tab + p * dh;
      const double* sin = cos + half;
      const float* row = in + (r * s + t) * width;
      for (int64_t hh = 0; hh < heads; ++hh) {
        const float* qi = head(row + hh * dh, qn);
        float* qo = qp + ((r * heads + hh) * s + t) * dh;
        for (int64_t i = 0; i < half; ++i) {
          const float c = static_cast<float>(cos[i]);
          const float sn = static_cast<float>(sin[i]);
          qo[i] = (qi[i] * c - qi[i + half] * sn) * scale;
          qo[i + half] = (qi[i] * sn + qi[i + half] * c) * scale;
        }
      }
      for (int64_t hh = 0; hh < kv_heads; ++hh) {
        const float* ki = head(row + (heads + hh) * dh, kn);
        const float* vi = row + (heads + kv_heads + hh) * dh;
        const int64_t slot = ((r * kv_heads + hh) * capacity + past + t) * dh;
        float* ko = kp + slot;
        float* vo = vp + slot;
        for (int64_t i = 0; i < half; ++i) {
          const float c = static_cast<float>(cos[i]);
          const float sn = static_cast<float>(sin[i]);
          ko[i] = ki[i] * c - ki[i + half] * sn;
          ko[i + half] = ki[i] * sn + ki[i + half] * c;
        }
        for (int64_t i = 0; i < dh; ++i) vo[i] = vi[i];
      }
    }
  }
  return q;
}

}  // namespace rlvr::policy
