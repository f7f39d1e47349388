#include "common/policy/decode_kernels.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
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

namespace {

// The per-token work of RotateIntoCache / RotateIntoPool: the q, k, v heads
// of one token's projection `row`, rotated by the angles `cs` (cos | sin),
// q/k-normed when qn/kn are given; query head hh goes to q_out + hh *
// q_stride (scaled), key/value head hh to k_out/v_out + hh * kv_stride.
struct RotateShape {
  int64_t heads, kv_heads, dh;
  float scale, eps;
  const float* qn;
  const float* kn;
};

void RotateToken(const RotateShape& sh, const float* row, const double* cs, float* q_out,
                 int64_t q_stride, float* k_out, float* v_out, int64_t kv_stride,
                 std::vector<float>& normed) {
  const int64_t dh = sh.dh;
  const int64_t half = dh / 2;
  const double* cos = cs;
  const double* sin = cs + half;
  // The head `x` [dh], RMS-normalised and scaled by `w` when w is given.
  auto head = [&](const float* x, const float* w) -> const float* {
    if (w == nullptr) return x;
    float sum_sq = 0;
    for (int64_t j = 0; j < dh; ++j) sum_sq += x[j] * x[j];
    const float inv = 1.0f / std::sqrt(sum_sq / static_cast<float>(dh) + sh.eps);
    for (int64_t j = 0; j < dh; ++j) normed[j] = x[j] * inv * w[j];
    return normed.data();
  };
  for (int64_t hh = 0; hh < sh.heads; ++hh) {
    const float* qi = head(row + hh * dh, sh.qn);
    float* qo = q_out + hh * q_stride;
    for (int64_t i = 0; i < half; ++i) {
      const float c = static_cast<float>(cos[i]);
      const float sn = static_cast<float>(sin[i]);
      qo[i] = (qi[i] * c - qi[i + half] * sn) * sh.scale;
      qo[i + half] = (qi[i] * sn + qi[i + half] * c) * sh.scale;
    }
  }
  for (int64_t hh = 0; hh < sh.kv_heads; ++hh) {
    const float* ki = head(row + (sh.heads + hh) * dh, sh.kn);
    const float* vi = row + (sh.heads + sh.kv_heads + hh) * dh;
    float* ko = k_out + hh * kv_stride;
    float* vo = v_out + hh * kv_stride;
    for (int64_t i = 0; i < half; ++i) {
      const float c = static_cast<float>(cos[i]);
      const float sn = static_cast<float>(sin[i]);
      ko[i] = ki[i] * c - ki[i + half] * sn;
      ko[i + half] = ki[i] * sn + ki[i + half] * c;
    }
    for (int64_t i = 0; i < dh; ++i) vo[i] = vi[i];
  }
}

RotateShape CheckRotateArgs(const torch::Tensor& qkv, const torch::Tensor& table, int64_t heads,
                            int64_t kv_heads, int64_t tokens, double query_scale,
                            const torch::Tensor& q_norm, const torch::Tensor& k_norm,
                            double norm_eps) {
  CheckFloatCpu(qkv, "qkv");
  TORCH_CHECK(table.is_cpu() && table.is_contiguous() && table.scalar_type() == torch::kFloat64,
              "rotary table must be contiguous float64 on the CPU");
  const int64_t dh = table.size(1);
  TORCH_CHECK(kv_heads >= 1 && heads % kv_heads == 0, "kv_heads must divide heads");
  const int64_t width = (heads + 2 * kv_heads) * dh;
  TORCH_CHECK(qkv.dim() == 2 && qkv.size(0) == tokens && qkv.size(1) == width,
              "qkv must be [tokens, (H + 2*KV)*Dh]");
  RotateShape sh{
      heads,   kv_heads, dh, static_cast<float>(query_scale), static_cast<float>(norm_eps),
      nullptr, nullptr};
  if (q_norm.defined() || k_norm.defined()) {
    TORCH_CHECK(q_norm.defined() && k_norm.defined(), "q_norm and k_norm go together");
    CheckFloatCpu(q_norm, "q_norm");
    CheckFloatCpu(k_norm, "k_norm");
    TORCH_CHECK(q_norm.numel() == dh && k_norm.numel() == dh, "q/k norm weights must be [Dh]");
    sh.qn = q_norm.data_ptr<float>();
    sh.kn = k_norm.data_ptr<float>();
  }
  return sh;
}

}  // namespace

torch::Tensor RotateIntoCache(const torch::Tensor& qkv, const torch::Tensor& positions,
                              const torch::Tensor& table, int64_t heads, int64_t kv_heads,
                              int64_t past, double query_scale, const torch::Tensor& q_norm,
                              const torch::Tensor& k_norm, double norm_eps,
                              torch::Tensor& cache_keys, torch::Tensor& cache_values) {
  CheckFloatCpu(cache_keys, "cache_keys");
  CheckFloatCpu(cache_values, "cache_values");
  TORCH_CHECK(positions.is_cpu() && positions.is_contiguous() &&
                  positions.scalar_type() == torch::kInt64 && positions.dim() == 2,
              "positions must be a contiguous int64 CPU [B, S] tensor");
  const int64_t b = positions.size(0);
  const int64_t s = positions.size(1);
  const RotateShape sh =
      CheckRotateArgs(qkv, table, heads, kv_heads, b * s, query_scale, q_norm, k_norm, norm_eps);
  const int64_t dh = sh.dh;
  const int64_t capacity = cache_keys.size(2);
  TORCH_CHECK(cache_keys.sizes() == cache_values.sizes() && cache_keys.dim() == 4 &&
                  cache_keys.size(0) == b && cache_keys.size(1) == kv_heads &&
                  cache_keys.size(3) == dh && past + s <= capacity,
              "cache must be [B, KV, capacity, Dh] with room for the new positions");
  const int64_t width = qkv.size(1);
  torch::Tensor q = torch::empty({b, heads, s, dh}, qkv.options());
  const float* in = qkv.data_ptr<float>();
  const int64_t* pos = positions.data_ptr<int64_t>();
  const double* tab = table.data_ptr<double>();
  float* qp = q.data_ptr<float>();
  float* kp = cache_keys.data_ptr<float>();
  float* vp = cache_values.data_ptr<float>();
  std::vector<float> normed(dh);
  for (int64_t r = 0; r < b; ++r) {
    for (int64_t t = 0; t < s; ++t) {
      const int64_t p = pos[r * s + t];
      TORCH_CHECK(p >= 0 && p < table.size(0), "position outside the rotary table");
      const int64_t slot = ((r * kv_heads) * capacity + past + t) * dh;
      RotateToken(sh, in + (r * s + t) * width, tab + p * dh, qp + (r * heads * s + t) * dh, s * dh,
                  kp + slot, vp + slot, capacity * dh, normed);
    }
  }
  return q;
}

torch::Tensor RotateIntoPool(const torch::Tensor& qkv, const torch::Tensor& positions,
                             const torch::Tensor& slots, const torch::Tensor& table, int64_t heads,
                             int64_t kv_heads, double query_scale, const torch::Tensor& q_norm,
                             const torch::Tensor& k_norm, double norm_eps, torch::Tensor& pool_keys,
                             torch::Tensor& pool_values) {
  CheckFloatCpu(pool_keys, "pool_keys");
  CheckFloatCpu(pool_values, "pool_values");
  const int64_t n = qkv.size(0);
  for (const torch::Tensor* t : {&positions, &slots}) {
    TORCH_CHECK(t->is_cpu() && t->is_contiguous() && t->scalar_type() == torch::kInt64 &&
                    t->dim() == 1 && t->size(0) == n,
                "positions and slots must be contiguous int64 CPU [N] tensors");
  }
  const RotateShape sh =
      CheckRotateArgs(qkv, table, heads, kv_heads, n, query_scale, q_norm, k_norm, norm_eps);
  const int64_t dh = sh.dh;
  TORCH_CHECK(pool_keys.sizes() == pool_values.sizes() && pool_keys.dim() == 3 &&
                  pool_keys.size(1) == kv_heads && pool_keys.size(2) == dh,
              "pool must be [slots, KV, Dh]");
  const int64_t width = qkv.size(1);
  torch::Tensor q = torch::empty({n, heads, dh}, qkv.options());
  const float* in = qkv.data_ptr<float>();
  const int64_t* pos = positions.data_ptr<int64_t>();
  const int64_t* slot = slots.data_ptr<int64_t>();
  const double* tab = table.data_ptr<double>();
  float* qp = q.data_ptr<float>();
  float* kp = pool_keys.data_ptr<float>();
  float* vp = pool_values.data_ptr<float>();
  std::vector<float> normed(dh);
  for (int64_t t = 0; t < n; ++t) {
    TORCH_CHECK(pos[t] >= 0 && pos[t] < table.size(0), "position outside the rotary table");
    TORCH_CHECK(slot[t] >= 0 && slot[t] < pool_keys.size(0), "slot outside the pool");
    const int64_t at = slot[t] * kv_heads * dh;
    RotateToken(sh, in + t * width, tab + pos[t] * dh, qp + t * heads * dh, dh, kp + at, vp + at,
                dh, normed);
  }
  return q;
}

namespace {

// Eight floats: GCC lowers it to two SSE registers, or one AVX register in
// the avx2 clones below. The order of every sum is fixed (lane-wise, then a
// fixed tree), so both clones compute the same bits (-std=c++20 keeps
// multiply and add separate: no FMA contraction).
typedef float Float8 __attribute__((vector_size(32)));

inline __attribute__((always_inline)) float Dot(const float* a, const float* b, int64_t n) {
  Float8 acc0 = {0, 0, 0, 0, 0, 0, 0, 0};
  Float8 acc1 = acc0;
  Float8 x0, y0, x1, y1;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    std::memcpy(&x0, a + i, sizeof(Float8));
    std::memcpy(&y0, b + i, sizeof(Float8));
    std::memcpy(&x1, a + i + 8, sizeof(Float8));
    std::memcpy(&y1, b + i + 8, sizeof(Float8));
    acc0 += x0 * y0;
    acc1 += x1 * y1;
  }
  if (i + 8 <= n) {
    std::memcpy(&x0, a + i, sizeof(Float8));
    std::memcpy(&y0, b + i, sizeof(Float8));
    acc0 += x0 * y0;
    i += 8;
  }
  acc0 += acc1;
  float s =
      ((acc0[0] + acc0[1]) + (acc0[2] + acc0[3])) + ((acc0[4] + acc0[5]) + (acc0[6] + acc0[7]));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// out[0, n) += p * v[0, n).
inline __attribute__((always_inline)) void Axpy(float* out, float p, const float* v, int64_t n) {
  const Float8 pp = {p, p, p, p, p, p, p, p};
  Float8 o, x;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::memcpy(&o, out + i, sizeof(Float8));
    std::memcpy(&x, v + i, sizeof(Float8));
    o += pp * x;
    std::memcpy(out + i, &o, sizeof(Float8));
  }
  for (; i < n; ++i) out[i] += p * v[i];
}

struct PagedShape {
  int64_t heads, kv_heads, dh, max_len, block_tokens, slots;
};

// Scores of query n, key/value head g: its rep query heads against the
// keys of its positions, then -inf to max_len.
inline __attribute__((always_inline)) void ScoresBody(const PagedShape& sh, const float* q,
                                                      const float* keys, const int* blocks,
                                                      int64_t len, int64_t n, int64_t g,
                                                      float* scores) {
  const int64_t rep = sh.heads / sh.kv_heads;
  const float* qh = q + (n * sh.heads + g * rep) * sh.dh;
  float* sc = scores + (n * sh.heads + g * rep) * sh.max_len;
  for (int64_t t = 0; t < len; ++t) {
    const int64_t slot =
        int64_t{blocks[t / sh.block_tokens]} * sh.block_tokens + t % sh.block_tokens;
    const float* k = keys + (slot * sh.kv_heads + g) * sh.dh;
    for (int64_t j = 0; j < rep; ++j) sc[j * sh.max_len + t] = Dot(qh + j * sh.dh, k, sh.dh);
  }
  for (int64_t j = 0; j < rep; ++j) {
    std::fill(sc + j * sh.max_len + len, sc + (j + 1) * sh.max_len,
              -std::numeric_limits<float>::infinity());
  }
}

inline __attribute__((always_inline)) void SumBody(const PagedShape& sh, const float* probs,
                                                   const float* values, const int* blocks,
                                                   int64_t len, int64_t n, int64_t g, float* out) {
  const int64_t rep = sh.heads / sh.kv_heads;
  const float* pr = probs + (n * sh.heads + g * rep) * sh.max_len;
  float* o = out + (n * sh.heads + g * rep) * sh.dh;
  std::fill(o, o + rep * sh.dh, 0.0f);
  for (int64_t t = 0; t < len; ++t) {
    const int64_t slot =
        int64_t{blocks[t / sh.block_tokens]} * sh.block_tokens + t % sh.block_tokens;
    const float* v = values + (slot * sh.kv_heads + g) * sh.dh;
    for (int64_t j = 0; j < rep; ++j) Axpy(o + j * sh.dh, pr[j * sh.max_len + t], v, sh.dh);
  }
}

void ScoresGeneric(const PagedShape& sh, const float* q, const float* keys, const int* blocks,
                   int64_t len, int64_t n, int64_t g, float* scores) {
  ScoresBody(sh, q, keys, blocks, len, n, g, scores);
}
void SumGeneric(const PagedShape& sh, const float* probs, const float* values, const int* blocks,
                int64_t len, int64_t n, int64_t g, float* out) {
  SumBody(sh, probs, values, blocks, len, n, g, out);
}
#if defined(__x86_64__)
__attribute__((target("avx2"))) void ScoresAvx2(const PagedShape& sh, const float* q,
                                                const float* keys, const int* blocks, int64_t len,
                                                int64_t n, int64_t g, float* scores) {
  ScoresBody(sh, q, keys, blocks, len, n, g, scores);
}
__attribute__((target("avx2"))) void SumAvx2(const PagedShape& sh, const float* probs,
                                             const float* values, const int* blocks, int64_t len,
                                             int64_t n, int64_t g, float* out) {
  SumBody(sh, probs, values, blocks, len, n, g, out);
}
bool HasAvx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}
#else
bool HasAvx2() { return false; }
#endif

PagedShape CheckPaged(const torch::Tensor& per_query, const torch::Tensor& pool,
                      const std::vector<const int*>& blocks, const std::vector<int64_t>& lengths,
                      int64_t block_tokens, int64_t heads, int64_t max_len) {
  CheckFloatCpu(pool, "pool");
  TORCH_CHECK(pool.dim() == 3, "pool must be [slots, KV, Dh]");
  const int64_t n = per_query.size(0);
  TORCH_CHECK(static_cast<int64_t>(blocks.size()) == n && static_cast<int64_t>(lengths.size()) == n,
              "one block table and length per query");
  TORCH_CHECK(block_tokens >= 1 && pool.size(0) % block_tokens == 0, "bad block size");
  PagedShape sh{heads, pool.size(1), pool.size(2), max_len, block_tokens, pool.size(0)};
  TORCH_CHECK(sh.kv_heads >= 1 && heads % sh.kv_heads == 0, "kv_heads must divide heads");
  for (int64_t i = 0; i < n; ++i) {
    TORCH_CHECK(lengths[i] >= 1 && lengths[i] <= max_len, "query length out of range");
    const int64_t last = (lengths[i] - 1) / block_tokens;
    for (int64_t b = 0; b <= last; ++b) {
      TORCH_CHECK(blocks[i][b] >= 0 && int64_t{blocks[i][b]} * block_tokens < pool.size(0),
                  "block outside the pool");
    }
  }
  return sh;
}

}  // namespace

void PagedScores(const torch::Tensor& q, const torch::Tensor& pool_keys,
                 const std::vector<const int*>& blocks, const std::vector<int64_t>& lengths,
                 int64_t block_tokens, torch::Tensor& scores) {
  CheckFloatCpu(q, "q");
  CheckFloatCpu(scores, "scores");
  TORCH_CHECK(q.dim() == 3 && scores.dim() == 3 && scores.size(0) == q.size(0) &&
                  scores.size(1) == q.size(1) && q.size(2) == pool_keys.size(2),
              "q [N, H, Dh] and scores [N, H, L]");
  const PagedShape sh =
      CheckPaged(q, pool_keys, blocks, lengths, block_tokens, q.size(1), scores.size(2));
  const float* qp = q.data_ptr<float>();
  const float* kp = pool_keys.data_ptr<float>();
  float* sp = scores.data_ptr<float>();
  const bool avx2 = HasAvx2();
  at::parallel_for(0, q.size(0) * sh.kv_heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / sh.kv_heads;
      const int64_t g = i % sh.kv_heads;
#if defined(__x86_64__)
      if (avx2) {
        ScoresAvx2(sh, qp, kp, blocks[n], lengths[n], n, g, sp);
        continue;
      }
#endif
      ScoresGeneric(sh, qp, kp, blocks[n], lengths[n], n, g, sp);
    }
  });
  (void)avx2;
}

void PagedWeightedSum(const torch::Tensor& probs, const torch::Tensor& pool_values,
                      const std::vector<const int*>& blocks, const std::vector<int64_t>& lengths,
                      int64_t block_tokens, torch::Tensor& out) {
  CheckFloatCpu(probs, "probs");
  CheckFloatCpu(out, "out");
  TORCH_CHECK(probs.dim() == 3 && out.dim() == 2 && out.size(0) == probs.size(0) &&
                  out.size(1) == probs.size(1) * pool_values.size(2),
              "probs [N, H, L] and out [N, H*Dh]");
  const PagedShape sh =
      CheckPaged(probs, pool_values, blocks, lengths, block_tokens, probs.size(1), probs.size(2));
  const float* pp = probs.data_ptr<float>();
  const float* vp = pool_values.data_ptr<float>();
  float* op = out.data_ptr<float>();
  const bool avx2 = HasAvx2();
  at::parallel_for(0, probs.size(0) * sh.kv_heads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t n = i / sh.kv_heads;
      const int64_t g = i % sh.kv_heads;
#if defined(__x86_64__)
      if (avx2) {
        SumAvx2(sh, pp, vp, blocks[n], lengths[n], n, g, op);
        continue;
      }
#endif
      SumGeneric(sh, pp, vp, blocks[n], lengths[n], n, g, op);
    }
  });
  (void)avx2;
}

}  // namespace rlvr::policy
