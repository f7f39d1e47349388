// Policy benchmark: prints, in one run, the machine's fp32 matmul rate, decode
// throughput with and without the KV cache, and training forward+backward
// throughput as a fraction of the measured matmul rate, and what installing
// a version of the weights costs an actor: building a model and loading the
// blob into it, against loading it into a model that exists (which the actor
// does from the first version on, actor/actor.cc), and serializing one costs
// the learner: into fresh memory or into an earlier version's buffer.
//
// usage: rlvr_policy_bench [--threads N] [--quick] [--decode_only]
// --decode_only skips the training section (for profiling the decode loop).
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/base/memory_policy.h"
#include "common/policy/model.h"
#include "common/policy/sampler.h"
#include "common/policy/weights.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// fp32 GFLOP/s of torch::mm on n x n matrices, over at least `min_s` seconds.
double MatmulGflops(int64_t n, double min_s) {
  torch::Tensor a = torch::randn({n, n});
  torch::Tensor b = torch::randn({n, n});
  torch::Tensor c = torch::mm(a, b);  // warm-up
  int reps = 0;
  auto t0 = Clock::now();
  do {
    c = torch::mm(a, b);
    ++reps;
  } while (Seconds(t0) < min_s);
  return 2.0 * n * n * n * reps / Seconds(t0) / 1e9;
}

rlvr::policy::Transformer MakeModel(int d_model, int n_layers, int n_heads, int d_ff, int seq) {
  rlvr::ModelConfig c;
  c.d_model = d_model;
  c.n_layers = n_layers;
  c.n_heads = n_heads;
  c.d_ff = d_ff;
  c.max_seq_len = seq;
  auto m = rlvr::policy::CreateTransformer(c, 99, 1);
  if (!m.ok()) {
    std::fprintf(stderr, "model: %s\n", std::string(m.status().message()).c_str());
    std::exit(1);
  }
  (*m)->eval();
  return *m;
}

// Decode tokens/s for `batch` rows of an 8-token prompt, `new_tokens` each.
double DecodeTokensPerSecond(rlvr::policy::Transformer& model, int batch, int new_tokens,
                             bool cache) {
  std::vector<int> prompt = {1, 20, 21, 15, 22, 23, 33, 2};
  std::vector<const std::vector<int>*> prompts(batch, &prompt);
  std::vector<uint64_t> seeds(batch);
  for (int i = 0; i < batch; ++i) seeds[i] = i + 1;
  rlvr::policy::SamplingOptions options;
  options.max_new_tokens = new_tokens;  // no stop tokens: every row runs to the cap
  auto run = [&] {
    return cache ? rlvr::policy::Generate(model, prompts, seeds, options)
                 : rlvr::policy::GenerateWithoutCache(model, prompts, seeds, options);
  };
  {
    rlvr::policy::SamplingOptions warm = options;
    warm.max_new_tokens = 4;
    cache ? rlvr::policy::Generate(model, prompts, seeds, warm)
          : rlvr::policy::GenerateWithoutCache(model, prompts, seeds, warm);
  }
  auto t0 = Clock::now();
  auto out = run();
  const double s = Seconds(t0);
  int64_t tokens = 0;
  for (const auto& o : out) tokens += o.tokens.size();
  return tokens / s;
}

}  // namespace

int main(int argc, char** argv) {
  rlvr::KeepFreedMemoryForReuse();  // As `rlvr` does for every role.
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bool quick = false;
  bool decode_only = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--decode_only") == 0) {
      decode_only = true;
    } else {
      std::fprintf(stderr, "usage: %s [--threads N] [--quick] [--decode_only]\n", argv[0]);
      return 2;
    }
  }
  torch::set_num_threads(threads);
  torch::manual_seed(0);
  std::printf("policy_bench: %d intra-op threads%s\n", threads, quick ? " (quick)" : "");

  const double gflops = MatmulGflops(quick ? 512 : 1024, quick ? 0.5 : 2.0);
  std::printf("\n[matmul] torch::mm fp32 %dx%d: %.1f GFLOP/s\n", quick ? 512 : 1024,
              quick ? 512 : 1024, gflops);

  // Decode, for two shapes: the default actor model (run_config.h), where a
  // batch-1 step is a few dozen tiny ops and per-op overhead dominates, and
  // the d_model 512 / 4-layer model of the training benchmark below. Room for
  // 8 prompt + `new_tokens` tokens.
  const int new_tokens = quick ? 32 : 128;
  struct Shape {
    const char* name;
    int d_model, n_layers, n_heads, d_ff;
  };
  const rlvr::ModelConfig defaults;
  for (const Shape& shape : {Shape{"default actor model", defaults.d_model, defaults.n_layers,
                                   defaults.n_heads, defaults.d_ff},
                             Shape{"training-bench model", 512, 4, 8, 1536}}) {
    auto model = MakeModel(shape.d_model, shape.n_layers, shape.n_heads, shape.d_ff, 256);
    std::printf(
        "\n[decode] %s: d_model=%d layers=%d heads=%d d_ff=%d (%lld params), prompt 8, "
        "%d new tokens, sampling T=1\n",
        shape.name, shape.d_model, shape.n_layers, shape.n_heads, shape.d_ff,
        static_cast<long long>(model->num_parameters()), new_tokens);
    std::printf("  %-6s %-16s %-16s %-8s\n", "batch", "kv-cache tok/s", "recompute tok/s", "ratio");
    for (int batch : {1, 32}) {
      const double with = DecodeTokensPerSecond(model, batch, new_tokens, true);
      const double without = DecodeTokensPerSecond(model, batch, new_tokens, false);
      std::printf("  %-6d %-16.0f %-16.0f %-8.2fx %s\n", batch, with, without, with / without,
                  with / without >= 5.0 ? "(target >= 5x: met)" : "(target >= 5x: MISSED)");
    }
  }

  // Installing weights: a d_model 1024, 2-layer, d_ff 4096 model (~135 MB of
  // fp32 weights; --quick: 512 / 1024, ~21 MB). Best of 3 each.
  if (!decode_only) {
    torch::NoGradGuard no_grad;
    rlvr::ModelConfig config;
    config.d_model = quick ? 512 : 1024;
    config.n_layers = 2;
    config.n_heads = 8;
    config.d_ff = quick ? 1024 : 4096;
    config.max_seq_len = 256;
    rlvr::policy::Transformer source(config, 99, /*init_seed=*/1);
    const std::string blob = rlvr::policy::SerializeWeights(source, 1);
    rlvr::policy::Transformer existing(config, 99, /*init_seed=*/2);
    double build_s = 1e9, load_new_s = 1e9, load_existing_s = 1e9;
    bool ok = true;
    for (int r = 0; r < 3; ++r) {
      auto t0 = Clock::now();
      rlvr::policy::Transformer fresh(config, 99, /*init_seed=*/3);
      build_s = std::min(build_s, Seconds(t0));
      t0 = Clock::now();
      ok = ok && rlvr::policy::LoadWeights(blob, fresh, nullptr).ok();
      load_new_s = std::min(load_new_s, Seconds(t0));
      t0 = Clock::now();
      ok = ok && rlvr::policy::LoadWeights(blob, existing, nullptr).ok();
      load_existing_s = std::min(load_existing_s, Seconds(t0));
    }
    std::printf("\n[install] weights blob of %.1f MB (d_model=%d layers=2 d_ff=%d)%s\n",
                blob.size() / 1e6, config.d_model, config.d_ff, ok ? "" : " LOAD FAILED");
    std::printf(
        "  new model: build %.1f ms + load %.1f ms | into an existing model: %.1f ms | "
        "%.1fx\n",
        1e3 * build_s, 1e3 * load_new_s, 1e3 * load_existing_s,
        (build_s + load_new_s) / load_existing_s);
    if (!ok) return 1;
    // And what publishing one costs the learner: serializing into fresh
    // memory against into the buffer of an earlier version (learner.cc).
    double fresh_s = 1e9, reused_s = 1e9;
    std::string reused;
    rlvr::policy::SerializeWeightsInto(source, 1, &reused);
    for (int r = 0; r < 3; ++r) {
      auto t0 = Clock::now();
      std::string fresh = rlvr::policy::SerializeWeights(source, 2);
      fresh_s = std::min(fresh_s, Seconds(t0));
      t0 = Clock::now();
      rlvr::policy::SerializeWeightsInto(source, 2, &reused);
      reused_s = std::min(reused_s, Seconds(t0));
      if (fresh != reused) return 1;
    }
    std::printf(
        "  serialize (learner): into fresh memory %.1f ms | into an earlier version's "
        "buffer %.1f ms | %.1fx\n",
        1e3 * fresh_s, 1e3 * reused_s, fresh_s / reused_s);
  }

  // Training forward+backward: d_model 512, 4 layers, batch 32 x 128 tokens.
  if (!decode_only) {
    const int64_t b = quick ? 8 : 32, l = 128;
    const int d = 512, layers = 4, heads = 8, ff = 1536;
    auto model = MakeModel(d, layers, heads, ff, l);
    model->train();
    torch::Tensor tokens = torch::randint(3, 99, {b, l}, torch::kInt64);
    auto step = [&] {
      model->zero_grad();
      torch::Tensor logits = model->forward(tokens);
      torch::Tensor loss = torch::nn::functional::cross_entropy(
          logits.narrow(1, 0, l - 1).reshape({-1, 99}), tokens.narrow(1, 1, l - 1).reshape({-1}));
      loss.backward();
    };
    step();  // warm-up
    const int reps = quick ? 1 : 3;
    auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) step();
    const double s = Seconds(t0) / reps;
    const double params = static_cast<double>(model->num_parameters());
    const double tok = static_cast<double>(b * l);
    // 6 * params * tokens, plus attention scores and values (QK^T and AV,
    // full L x L as computed): 2 matmuls x 2 flops x 3 (fwd + 2 bwd).
    const double flops = 6.0 * params * tok + 12.0 * layers * b * l * l * d;
    const double achieved = flops / s / 1e9;
    std::printf(
        "\n[train] model d_model=%d layers=%d heads=%d d_ff=%d (%.2fM params), batch %lld x "
        "%lld tokens\n",
        d, layers, heads, ff, params / 1e6, static_cast<long long>(b), static_cast<long long>(l));
    std::printf(
        "  fwd+bwd %.3f s/step, %.0f tokens/s, %.1f GFLOP/s = %.1f%% of measured matmul %s\n", s,
        tok / s, achieved, 100.0 * achieved / gflops,
        achieved / gflops >= 0.3 ? "(target >= 30%: met)" : "(target >= 30%: MISSED)");
  }
  return 0;
}
