// Real-shape benchmark: a model with Qwen2.5-0.5B's dimensions (hidden 896,
// 24 layers, 14 heads, 2 KV heads, FFN 4864, vocab 151936, tied embeddings),
// random weights, on this CPU. Prints, in one run:
//  - [matmul] the machine's fp32 sgemm rate (torch::mm, 2048^3): the baseline
//    every other figure is a ratio to;
//  - [train] one training step of the learner's path (chunked completion
//    log-probs, a token-sum loss, backward, global-norm clip, AdamW):
//    tokens/s, model GFLOP/s and its ratio to the sgemm rate, peak RSS;
//  - [decode] KV-cache sampling (policy::Generate): tokens/s, GFLOP/s and
//    ratio, peak RSS;
//  - [logprobs] peak RSS of completion log-probs + backward at the real
//    vocabulary, chunked (logprobs.h) against full [N, L, V] logits.
// Each measured section runs in a child process (this binary re-executed)
// so that its peak resident memory (wait4's ru_maxrss) is its own.
//
// usage: real_shape_bench [--threads N] [--layers N] [--batch B] [--seq L]
//                         [--steps S] [--decode_batch B] [--decode_tokens T]
//                         [--sections train,decode,logprobs]
#include <sys/resource.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/base/memory_policy.h"
#include "common/config/run_config.h"
#include "common/policy/logprobs.h"
#include "common/policy/model.h"
#include "common/policy/sampler.h"

namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

struct Args {
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int layers = 24;
  int batch = 2;
  int seq = 256;  // Prompt + completion tokens per row.
  int steps = 2;  // Timed training steps (after one warm-up step).
  int decode_batch = 1;
  int decode_tokens = 16;
  int prompt = 32;  // Prompt tokens (training rows and decoding).
  std::string sections = "train,decode,logprobs";
  std::string child;  // Internal: the section this process runs.
  double gflops = 0;  // Internal: the parent's sgemm rate.
};

constexpr int kVocab = 151936;

// Qwen2.5-0.5B's architecture and dimensions (its config.json): qwen2,
// grouped-query attention with 2 KV heads of 64, q/k/v biases, tied
// embeddings.
rlvr::ModelConfig RealShape(const Args& a) {
  rlvr::ModelConfig c;
  c.arch = "qwen2";
  c.d_model = 896;
  c.n_layers = a.layers;
  c.n_heads = 14;
  c.n_kv_heads = 2;
  c.head_dim = 64;
  c.qkv_bias = true;
  c.tie_embeddings = true;
  c.rms_norm_eps = 1e-6;
  c.vocab_size = kVocab;
  c.d_ff = 4864;
  c.max_seq_len = std::max(a.seq, a.prompt + a.decode_tokens);
  c.rope_theta = 1000000.0;
  return c;
}

rlvr::policy::Transformer MakeModel(const rlvr::ModelConfig& c, int vocab) {
  auto m = rlvr::policy::CreateTransformer(c, vocab, 1);
  if (!m.ok()) {
    std::fprintf(stderr, "model: %s\n", std::string(m.status().message()).c_str());
    std::exit(1);
  }
  return *m;
}

// Parameters that take part in per-token matmuls (all but the norms; the
// tied embedding counted once, as the output projection).
double MatmulParams(rlvr::policy::Transformer& model) {
  double n = 0;
  for (const auto& p : model->parameters()) {
    if (p.dim() == 2) n += static_cast<double>(p.numel());
  }
  return n;
}

double MatmulGflops(int64_t n, double min_s) {
  torch::Tensor a = torch::randn({n, n});
  torch::Tensor b = torch::randn({n, n});
  torch::Tensor c = torch::mm(a, b);
  int reps = 0;
  auto t0 = Clock::now();
  do {
    c = torch::mm(a, b);
    ++reps;
  } while (Seconds(t0) < min_s);
  return 2.0 * n * n * n * reps / Seconds(t0) / 1e9;
}

int RunTrain(const Args& a) {
  rlvr::ModelConfig c = RealShape(a);
  auto model = MakeModel(c, kVocab);
  model->train();
  const double params = static_cast<double>(model->num_parameters());
  torch::optim::AdamW adam(model->parameters(), torch::optim::AdamWOptions(1e-6));
  // Rows: `prompt` prompt tokens, the rest completion (every completion
  // position is trained, as in the learner).
  const int completion = a.seq - a.prompt;
  std::vector<std::vector<int>> prompts(a.batch), completions(a.batch);
  torch::Tensor ids = torch::randint(0, kVocab, {a.batch, a.seq}, torch::kInt64);
  for (int r = 0; r < a.batch; ++r) {
    for (int j = 0; j < a.seq; ++j) {
      (j < a.prompt ? prompts[r] : completions[r])
          .push_back(static_cast<int>(ids[r][j].item<int64_t>()));
    }
  }
  std::vector<const std::vector<int>*> pp, cp;
  for (int r = 0; r < a.batch; ++r) pp.push_back(&prompts[r]), cp.push_back(&completions[r]);
  auto step = [&] {
    adam.zero_grad();
    auto lp = rlvr::policy::ComputeCompletionLogProbs(model, pp, cp, /*with_entropy=*/true);
    torch::Tensor loss = -lp.logprobs.sum() / lp.mask.sum();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    adam.step();
  };
  auto t0 = Clock::now();
  step();  // Warm-up: also allocates the AdamW states.
  const double warm = Seconds(t0);
  t0 = Clock::now();
  for (int i = 0; i < a.steps; ++i) step();
  const double s = Seconds(t0) / a.steps;
  const double tokens = static_cast<double>(a.batch) * a.seq;
  const double trained = static_cast<double>(a.batch) * completion;
  const double d = c.d_model;
  const double vd = static_cast<double>(kVocab) * d;
  // Matmul FLOPs of one step: the blocks' weights on every position (6 per
  // parameter and token: forward, backward to inputs and to weights), the
  // output projection on completion positions only (forward, backward's
  // recomputation, and the two backward products: 8 per parameter and
  // token), and attention scores and values (QK^T and AV over the full L x L
  // as computed, 2 matmuls x 2 flops x 3).
  const double flops = 6.0 * (MatmulParams(model) - vd) * tokens + 8.0 * vd * trained +
                       12.0 * c.n_layers * a.batch * double(a.seq) * a.seq * d;
  const double achieved = flops / s / 1e9;
  std::printf(
      "\n[train] %.1fM params, batch %d x %d tokens (%d prompt + %d completion), "
      "chunked log-probs + backward + AdamW\n",
      params / 1e6, a.batch, a.seq, a.prompt, completion);
  std::printf(
      "  warm-up step %.1f s; step %.2f s (mean of %d): %.1f tokens/s, %.1f GFLOP/s = "
      "%.1f%% of measured sgemm\n",
      warm, s, a.steps, tokens / s, achieved, 100.0 * achieved / a.gflops);
  std::fflush(stdout);
  return 0;
}

int RunDecode(const Args& a) {
  torch::NoGradGuard no_grad;
  rlvr::ModelConfig c = RealShape(a);
  auto model = MakeModel(c, kVocab);
  model->eval();
  std::vector<int> prompt(a.prompt);
  for (int j = 0; j < a.prompt; ++j) prompt[j] = (j * 7919) % kVocab;
  std::vector<const std::vector<int>*> prompts(a.decode_batch, &prompt);
  std::vector<uint64_t> seeds(a.decode_batch);
  for (int i = 0; i < a.decode_batch; ++i) seeds[i] = i + 1;
  rlvr::policy::SamplingOptions options;
  options.max_new_tokens = 2;
  rlvr::policy::Generate(model, prompts, seeds, options);  // Warm-up.
  options.max_new_tokens = a.decode_tokens;  // No stop tokens: every row runs to the cap.
  auto t0 = Clock::now();
  auto out = rlvr::policy::Generate(model, prompts, seeds, options);
  const double s = Seconds(t0);
  double tokens = 0;
  for (const auto& o : out) tokens += static_cast<double>(o.tokens.size());
  // 2 FLOPs per matmul parameter and token, the prompt included (prefill).
  const double flops = 2.0 * MatmulParams(model) * (tokens + a.decode_batch * (a.prompt - 1));
  const double achieved = flops / s / 1e9;
  std::printf("\n[decode] KV cache, batch %d, prompt %d, %d new tokens each, T=1\n", a.decode_batch,
              a.prompt, a.decode_tokens);
  std::printf("  %.2f s: %.2f tokens/s, %.1f GFLOP/s = %.1f%% of measured sgemm\n", s, tokens / s,
              achieved, 100.0 * achieved / a.gflops);
  std::fflush(stdout);
  return 0;
}

// Completion log-probs + backward at the real vocabulary on a narrow model
// (the logits dominate): chunked, or the straightforward full logits.
int RunLogprobs(const Args& a, bool chunked) {
  rlvr::ModelConfig c;
  c.d_model = 64;
  c.n_layers = 1;
  c.n_heads = 4;
  c.d_ff = 128;
  c.max_seq_len = a.seq;
  auto model = MakeModel(c, kVocab);
  const int n = 2 * a.batch;
  std::vector<std::vector<int>> prompts(n), completions(n);
  for (int r = 0; r < n; ++r) {
    for (int j = 0; j < a.seq; ++j) {
      (j < a.prompt ? prompts[r] : completions[r]).push_back((r * 131 + j * 7919) % kVocab);
    }
  }
  std::vector<const std::vector<int>*> pp, cp;
  for (int r = 0; r < n; ++r) pp.push_back(&prompts[r]), cp.push_back(&completions[r]);
  auto t0 = Clock::now();
  if (chunked) {
    auto lp = rlvr::policy::ComputeCompletionLogProbs(model, pp, cp, true);
    lp.logprobs.sum().backward();
  } else {
    // What logprobs.cc did before: logits for every position, then
    // log_softmax over the completion positions.
    torch::Tensor tokens = torch::empty({n, a.seq}, torch::kInt64);
    for (int r = 0; r < n; ++r) {
      for (int j = 0; j < a.seq; ++j)
        tokens[r][j] = (j < a.prompt ? prompts[r][j] : completions[r][j - a.prompt]);
    }
    torch::Tensor logits = model->forward(tokens);
    torch::Tensor logp = torch::log_softmax(logits.narrow(1, a.prompt - 1, a.seq - a.prompt), -1);
    torch::Tensor picked =
        logp.gather(-1, tokens.narrow(1, a.prompt, a.seq - a.prompt).unsqueeze(-1));
    torch::Tensor entropy = -(logp.detach().exp() * logp.detach()).sum(-1);
    picked.sum().backward();
    (void)entropy;
  }
  std::printf("  %-8s %d rows x %d completion tokens, vocab %d: fwd+bwd %.2f s",
              chunked ? "chunked" : "full", n, a.seq - a.prompt, kVocab, Seconds(t0));
  std::fflush(stdout);
  return 0;
}

// Re-executes this binary for one section; returns its peak RSS in MiB
// (-1 if it failed).
double RunChild(const char* self, const Args& a, const std::string& section) {
  std::vector<std::string> args = {self,
                                   "--child",
                                   section,
                                   "--gflops",
                                   std::to_string(a.gflops),
                                   "--threads",
                                   std::to_string(a.threads),
                                   "--layers",
                                   std::to_string(a.layers),
                                   "--batch",
                                   std::to_string(a.batch),
                                   "--seq",
                                   std::to_string(a.seq),
                                   "--steps",
                                   std::to_string(a.steps),
                                   "--decode_batch",
                                   std::to_string(a.decode_batch),
                                   "--decode_tokens",
                                   std::to_string(a.decode_tokens),
                                   "--prompt",
                                   std::to_string(a.prompt)};
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  if (pid < 0 || wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    std::printf("  (%s failed, status %d)\n", section.c_str(), status);
    return -1;
  }
  return usage.ru_maxrss / 1024.0;
}

}  // namespace

int main(int argc, char** argv) {
  rlvr::KeepFreedMemoryForReuse();
  Args a;
  for (int i = 1; i < argc; ++i) {
    auto next = [&](const char* name) -> const char* {
      if (std::strcmp(argv[i], name) != 0 || i + 1 >= argc) return nullptr;
      return argv[++i];
    };
    const char* v;
    if ((v = next("--threads")))
      a.threads = std::atoi(v);
    else if ((v = next("--layers")))
      a.layers = std::atoi(v);
    else if ((v = next("--batch")))
      a.batch = std::atoi(v);
    else if ((v = next("--seq")))
      a.seq = std::atoi(v);
    else if ((v = next("--steps")))
      a.steps = std::atoi(v);
    else if ((v = next("--decode_batch")))
      a.decode_batch = std::atoi(v);
    else if ((v = next("--decode_tokens")))
      a.decode_tokens = std::atoi(v);
    else if ((v = next("--prompt")))
      a.prompt = std::atoi(v);
    else if ((v = next("--sections")))
      a.sections = v;
    else if ((v = next("--child")))
      a.child = v;
    else if ((v = next("--gflops")))
      a.gflops = std::atof(v);
    else {
      std::fprintf(stderr,
                   "usage: %s [--threads N] [--layers N] [--batch B] [--seq L] [--steps S]\n"
                   "          [--prompt P] [--decode_batch B] [--decode_tokens T]\n"
                   "          [--sections train,decode,logprobs]\n",
                   argv[0]);
      return 2;
    }
  }
  if (a.seq <= a.prompt || a.prompt < 1 || a.batch < 1 || a.steps < 1 || a.layers < 1) {
    std::fprintf(stderr, "need seq > prompt >= 1, batch, steps, layers >= 1\n");
    return 2;
  }
  torch::set_num_threads(a.threads);
  torch::manual_seed(0);
  if (a.child == "train") return RunTrain(a);
  if (a.child == "decode") return RunDecode(a);
  if (a.child == "logprobs_chunked") return RunLogprobs(a, true);
  if (a.child == "logprobs_full") return RunLogprobs(a, false);

  std::printf(
      "real_shape_bench: Qwen2.5-0.5B shape (qwen2, hidden 896, %d layers, 14 heads, 2 KV heads, "
      "FFN 4864, vocab %d), random weights, %d threads; load average %s\n",
      a.layers, kVocab, a.threads, LoadAverage().c_str());
  a.gflops = MatmulGflops(2048, 3.0);
  std::printf("\n[matmul] torch::mm fp32 2048x2048: %.1f GFLOP/s\n", a.gflops);
  auto has = [&](const char* s) { return a.sections.find(s) != std::string::npos; };
  if (has("train")) {
    const double mib = RunChild(argv[0], a, "train");
    std::printf("  peak RSS %.0f MiB\n", mib);
  }
  if (has("decode")) {
    const double mib = RunChild(argv[0], a, "decode");
    std::printf("  peak RSS %.0f MiB\n", mib);
  }
  if (has("logprobs")) {
    std::printf(
        "\n[logprobs] completion log-probs + entropy + backward at vocab %d (d_model 64, "
        "1 layer: the logits dominate)\n",
        kVocab);
    const double chunked = RunChild(argv[0], a, "logprobs_chunked");
    std::printf(", peak RSS %.0f MiB\n", chunked);
    const double full = RunChild(argv[0], a, "logprobs_full");
    std::printf(", peak RSS %.0f MiB\n", full);
    if (chunked > 0 && full > 0) std::printf("  full / chunked peak RSS: %.1fx\n", full / chunked);
  }
  std::printf("\nload average at the end: %s\n", LoadAverage().c_str());
  return 0;
}
