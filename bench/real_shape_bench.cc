// Real-shape benchmark: a model with Qwen2.5-0.5B's dimensions (hidden 896,
// 24 layers, 14 heads, 2 KV heads, FFN 4864, vocab 151936, tied embeddings),
// random weights, on the CPU (default, float32) or a CUDA device (--device
// cuda, bfloat16 by default). Prints, in one run:
//  - [matmul] the device's matmul rate in the run's dtype (torch::mm: 2048^3
//    fp32 on the CPU, 8192^3 bf16 on CUDA after warm-up): the baseline of
//    the training and decoding ratios;
//  - [copy] the device's memory copy rate (bytes read + written per second;
//    on CUDA a device-to-device copy): the baseline of batch-1 decoding,
//    which reads every weight once per token;
//  - [train] one training step of the learner's path (chunked completion
//    log-probs, a token-mean loss, backward, global-norm clip, AdamW; on a
//    reduced dtype the learner's scheme: float32 parameters computing in it):
//    tokens/s, model FLOP/s and its ratio to the matmul rate, peak RSS;
//  - [decode] KV-cache sampling at T=1 (policy::Generate, the public API the
//    actor uses) at each --decode_batch size: tokens/s, FLOP/s and ratio; the
//    fraction of the bandwidth limit (copy rate / weight bytes per token);
//    and the model alone decoding the same tokens (device argmax, ids back
//    to the host each step), which tells the model's share of the time from
//    the sampler's (logits to the host, CPU sampling);
//  - [logprobs] (CPU only) peak RSS of completion log-probs + backward at
//    the real vocabulary, chunked (logprobs.h) against full [N, L, V] logits.
// Each measured section runs in a child process (this binary re-executed)
// so that its peak resident memory (wait4's ru_maxrss) is its own. CUDA
// timings synchronise the device (torch::cuda::synchronize) around the timed
// region. With --json FILE every figure is also appended to FILE as one JSON
// object per line (scripts/gpu_check/run-checks reads them).
//
// usage: real_shape_bench [--device cpu|cuda] [--dtype f32|bf16] [--threads N]
//                         [--layers N] [--batch B] [--seq L] [--steps S]
//                         [--prompt P] [--decode_batch B[,B...]]
//                         [--decode_tokens T] [--matmul_n N] [--copy_mb M]
//                         [--sections matmul,copy,train,decode,logprobs]
//                         [--json FILE] [--vocab V]
// (--vocab: 151936 by default; smaller only to rehearse the bench quickly.)
#include <ATen/record_function.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <torch/torch.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/base/memory_policy.h"
#include "common/config/run_config.h"
#include "common/policy/factory.h"
#include "common/policy/logprobs.h"
#include "common/policy/model.h"
#include "common/policy/placement.h"
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
  std::string device = "cpu";  // cpu | cuda (cuda:0).
  std::string dtype;           // f32 | bf16; empty = f32 on the CPU, bf16 on CUDA.
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int layers = 24;
  int batch = 2;
  int seq = 256;                   // Prompt + completion tokens per row.
  int steps = 2;                   // Timed training steps (after one warm-up step).
  std::string decode_batch = "1";  // Comma-separated batch sizes.
  int decode_tokens = 16;
  int prompt = 32;          // Prompt tokens (training rows and decoding).
  int matmul_n = 0;         // 0 = 2048 on the CPU, 8192 on CUDA.
  int copy_mb = 0;          // 0 = 256 on the CPU, 2048 on CUDA.
  int vocab = 151936;       // Qwen2.5's; smaller only for quick rehearsals of the bench itself.
  std::string sections;     // Empty = matmul,copy,train,decode (+ logprobs on the CPU).
  std::string json;         // JSONL file the figures are appended to; empty = none.
  std::string child;        // Internal: the section this process runs.
  double matmul_flops = 0;  // Internal: the parent's matmul rate (FLOP/s).
  double copy_bytes = 0;    // Internal: the parent's copy rate (bytes/s).

  bool cuda() const { return device != "cpu"; }
  bool bf16() const { return dtype == "bf16"; }
};

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
  c.vocab_size = a.vocab;
  c.d_ff = 4864;
  c.max_seq_len = std::max(a.seq, a.prompt + a.decode_tokens);
  c.rope_theta = 1000000.0;
  return c;
}

std::vector<int> ParseList(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (!item.empty()) out.push_back(std::atoi(item.c_str()));
  }
  return out;
}

torch::Device TorchDevice(const Args& a) {
  return a.cuda() ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
}
torch::ScalarType TorchDtype(const Args& a) {
  return a.bf16() ? torch::kBFloat16 : torch::kFloat32;
}

// Waits for the device's queued work (CUDA kernels run asynchronously).
void Sync(const Args& a) {
  if (a.cuda()) torch::cuda::synchronize();
}

// The model, randomly initialised on the CPU (seed 1), then placed as the
// learner (kTraining: float32 parameters computing in the run's dtype) or
// the actor (kInference: parameters in the run's dtype) places it.
rlvr::policy::Transformer MakeModel(const Args& a, const rlvr::ModelConfig& c, int vocab,
                                    rlvr::policy::PolicyUse use) {
  auto m = rlvr::policy::CreateTransformer(c, vocab, 1);
  if (!m.ok()) {
    std::fprintf(stderr, "model: %s\n", std::string(m.status().message()).c_str());
    std::exit(1);
  }
  const rlvr::policy::Placement placement{
      a.cuda() ? 0 : -1,
      a.bf16() ? rlvr::policy::ComputeDtype::kBFloat16 : rlvr::policy::ComputeDtype::kFloat32};
  if (absl::Status s = rlvr::policy::PlaceModel(placement, use, *m); !s.ok()) {
    std::fprintf(stderr, "placing the model: %s\n", std::string(s.message()).c_str());
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

// Appends one JSON object (already formatted members) to --json.
void Record(const Args& a, const std::string& members) {
  if (a.json.empty()) return;
  std::ofstream out(a.json, std::ios::app);
  out << "{\"device\": \"" << a.device << "\", \"dtype\": \"" << a.dtype << "\", " << members
      << "}\n";
}

std::string Member(const char* name, double value) {
  std::ostringstream out;
  out.precision(6);
  out << "\"" << name << "\": " << value;
  return out.str();
}

// Counts, while alive, the ATen calls made directly by code on any thread
// (calls nested inside another ATen call are not counted; autograd's
// backward calls, made on its own thread, are). On CUDA nearly every such
// call launches at least one kernel, so this is the launch count a piece of
// work costs the host, whatever the device's speed.
class AtenCallCounter {
 public:
  AtenCallCounter() {
    calls_ = 0;
    handle_ = at::addGlobalCallback(
        at::RecordFunctionCallback(&Start, &End).scopes({at::RecordScope::FUNCTION}));
  }
  ~AtenCallCounter() { at::removeCallback(handle_); }
  AtenCallCounter(const AtenCallCounter&) = delete;
  AtenCallCounter& operator=(const AtenCallCounter&) = delete;
  // Calls since construction or the last Take().
  long Take() { return calls_.exchange(0); }

 private:
  static std::unique_ptr<at::ObserverContext> Start(const at::RecordFunction&) {
    if (depth_++ == 0) ++calls_;
    return nullptr;
  }
  static void End(const at::RecordFunction&, at::ObserverContext*) { --depth_; }

  static inline std::atomic<long> calls_{0};
  static inline thread_local int depth_ = 0;
  at::CallbackHandle handle_;
};

// The matmul rate (FLOP/s) of torch::mm on n x n operands in the run's dtype
// on the run's device: 3 warm-up products, then products for >= min_s (at
// least 10 on CUDA), the device synchronised around them.
double MatmulRate(const Args& a, int64_t n, double min_s) {
  const auto opts = torch::TensorOptions().device(TorchDevice(a)).dtype(TorchDtype(a));
  torch::Tensor x = torch::randn({n, n}, opts);
  torch::Tensor y = torch::randn({n, n}, opts);
  torch::Tensor z;
  for (int i = 0; i < 3; ++i) z = torch::mm(x, y);
  Sync(a);
  int reps = 0;
  auto t0 = Clock::now();
  do {
    z = torch::mm(x, y);
    ++reps;
    if (reps % 10 == 0 || !a.cuda()) Sync(a);
  } while (Seconds(t0) < min_s || (a.cuda() && reps < 10));
  Sync(a);
  return 2.0 * n * n * n * reps / Seconds(t0);
}

// The memory copy rate (bytes read + written per second) of `mb` MiB.
double CopyRate(const Args& a, int64_t mb) {
  const auto opts = torch::TensorOptions().device(TorchDevice(a)).dtype(torch::kUInt8);
  const int64_t bytes = mb << 20;
  torch::Tensor src = torch::ones({bytes}, opts);
  torch::Tensor dst = torch::empty({bytes}, opts);
  for (int i = 0; i < 2; ++i) dst.copy_(src);
  Sync(a);
  int reps = 0;
  auto t0 = Clock::now();
  do {
    dst.copy_(src);
    ++reps;
    if (reps % 10 == 0 || !a.cuda()) Sync(a);
  } while (Seconds(t0) < 1.0 || reps < 10);
  Sync(a);
  return 2.0 * static_cast<double>(bytes) * reps / Seconds(t0);
}

int RunTrain(const Args& a) {
  rlvr::ModelConfig c = RealShape(a);
  auto model = MakeModel(a, c, a.vocab, rlvr::policy::PolicyUse::kTraining);
  model->train();
  const double params = static_cast<double>(model->num_parameters());
  torch::optim::AdamW adam(model->parameters(), torch::optim::AdamWOptions(1e-6));
  // Rows: `prompt` prompt tokens, the rest completion (every completion
  // position is trained, as in the learner).
  const int completion = a.seq - a.prompt;
  std::vector<std::vector<int>> prompts(a.batch), completions(a.batch);
  torch::Tensor ids = torch::randint(0, a.vocab, {a.batch, a.seq}, torch::kInt64);
  auto id = ids.accessor<int64_t, 2>();
  for (int r = 0; r < a.batch; ++r) {
    for (int j = 0; j < a.seq; ++j) {
      (j < a.prompt ? prompts[r] : completions[r]).push_back(static_cast<int>(id[r][j]));
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
  Sync(a);
  auto t0 = Clock::now();
  step();  // Warm-up: also allocates the AdamW states.
  Sync(a);
  const double warm = Seconds(t0);
  t0 = Clock::now();
  for (int i = 0; i < a.steps; ++i) step();
  Sync(a);
  const double s = Seconds(t0) / a.steps;
  // One more step, untimed, counting the ATen calls of each phase.
  long fwd_bwd = 0, clip = 0, optim = 0;
  {
    AtenCallCounter counter;
    adam.zero_grad();
    auto lp = rlvr::policy::ComputeCompletionLogProbs(model, pp, cp, /*with_entropy=*/true);
    (-lp.logprobs.sum() / lp.mask.sum()).backward();
    Sync(a);
    fwd_bwd = counter.Take();
    torch::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    clip = counter.Take();
    adam.step();
    Sync(a);
    optim = counter.Take();
  }
  const double tokens = static_cast<double>(a.batch) * a.seq;
  const double trained = static_cast<double>(a.batch) * completion;
  const double d = c.d_model;
  const double vd = static_cast<double>(a.vocab) * d;
  // Matmul FLOPs of one step: the blocks' weights on every position (6 per
  // parameter and token: forward, backward to inputs and to weights), the
  // output projection on completion positions only (forward, backward's
  // recomputation, and the two backward products: 8 per parameter and
  // token), and attention scores and values (QK^T and AV over the full L x L
  // as computed, 2 matmuls x 2 flops x 3).
  const double flops = 6.0 * (MatmulParams(model) - vd) * tokens + 8.0 * vd * trained +
                       12.0 * c.n_layers * a.batch * double(a.seq) * a.seq * d;
  const double achieved = flops / s;
  std::printf(
      "\n[train] %.1fM params, batch %d x %d tokens (%d prompt + %d completion), "
      "chunked log-probs + backward + AdamW, %s on %s\n",
      params / 1e6, a.batch, a.seq, a.prompt, completion,
      a.bf16() ? "float32 parameters computing in bf16" : "float32", a.device.c_str());
  std::printf(
      "  warm-up step %.2f s; step %.3f s (mean of %d): %.1f tokens/s, %.1f GFLOP/s = "
      "%.1f%% of the measured matmul rate\n",
      warm, s, a.steps, tokens / s, achieved / 1e9, 100.0 * achieved / a.matmul_flops);
  std::printf(
      "  ATen calls per step (each ~a kernel launch on CUDA): forward + backward %ld, "
      "clip_grad_norm_ %ld, AdamW %ld (%zu parameters)\n",
      fwd_bwd, clip, optim, model->parameters().size());
  std::fflush(stdout);
  Record(a, "\"section\": \"train\", " + Member("batch", a.batch) + ", " + Member("seq", a.seq) +
                ", " + Member("prompt", a.prompt) + ", " + Member("steps", a.steps) + ", " +
                Member("warmup_s", warm) + ", " + Member("step_s", s) + ", " +
                Member("tokens_per_s", tokens / s) + ", " + Member("model_flops_per_s", achieved) +
                ", " + Member("matmul_fraction", achieved / a.matmul_flops) + ", " +
                Member("aten_calls_forward_backward", fwd_bwd) + ", " +
                Member("aten_calls_clip", clip) + ", " + Member("aten_calls_adamw", optim));
  return 0;
}

// Row r's prompt: `len` ids spread over a vocabulary of `vocab`.
std::vector<int> DecodePrompt(int r, int len, int vocab) {
  std::vector<int> p(len);
  for (int j = 0; j < len; ++j) {
    p[j] = static_cast<int>((int64_t(j) * 7919 + int64_t(r) * 104729) % vocab);
  }
  return p;
}

// The model alone decoding `tokens` tokens per row for the prompts (as
// Generate lays them out; here every prompt has the same length, so no
// padding): prefill, then greedy on the device with the chosen ids back to
// the host each step (the model takes host ids, as from the sampler).
// Returns the seconds of the whole decode, the prefill included.
double ModelOnlyDecode(const Args& a, rlvr::policy::Transformer& model,
                       const std::vector<std::vector<int>>& prompts, int tokens) {
  const int64_t b = static_cast<int64_t>(prompts.size());
  const int64_t p = static_cast<int64_t>(prompts[0].size());
  torch::Tensor ids = torch::empty({b, p}, torch::kInt64);
  auto id = ids.accessor<int64_t, 2>();
  for (int64_t r = 0; r < b; ++r) {
    for (int64_t j = 0; j < p; ++j) id[r][j] = prompts[r][j];
  }
  torch::Tensor positions = torch::arange(p, torch::kInt64).expand({b, p}).contiguous();
  Sync(a);
  auto t0 = Clock::now();
  rlvr::policy::KvCache cache = model->NewCache(b, p + tokens);
  torch::Tensor last =
      model->HiddenWithPositions(ids, positions, torch::Tensor(), &cache).select(1, p - 1);
  torch::Tensor logits = torch::mm(last, model->OutputWeight().to(last.scalar_type()).t());
  torch::Tensor next = logits.argmax(-1).unsqueeze(1).cpu();
  for (int step = 1; step < tokens; ++step) {
    torch::Tensor pos = torch::full({b, 1}, p + step - 1, torch::kInt64);
    logits = model->ForwardWithPositions(next, pos, torch::Tensor(), &cache).select(1, 0);
    next = logits.argmax(-1).unsqueeze(1).cpu();
  }
  Sync(a);
  return Seconds(t0);
}

int RunDecode(const Args& a) {
  torch::NoGradGuard no_grad;
  rlvr::ModelConfig c = RealShape(a);
  auto model = MakeModel(a, c, a.vocab, rlvr::policy::PolicyUse::kInference);
  model->eval();
  const double matmul_params = MatmulParams(model);
  // Bytes read per decoded token at batch 1: every parameter once (the tied
  // embedding as the output projection; the embedding lookup reads a row).
  const double weight_bytes = static_cast<double>(model->num_parameters()) *
                              static_cast<double>(torch::elementSize(TorchDtype(a)));
  const std::vector<int> batches = ParseList(a.decode_batch);
  for (int batch : batches) {
    std::vector<std::vector<int>> rows;
    for (int r = 0; r < batch; ++r) rows.push_back(DecodePrompt(r, a.prompt, a.vocab));
    std::vector<const std::vector<int>*> prompts;
    for (const auto& r : rows) prompts.push_back(&r);
    std::vector<uint64_t> seeds(batch);
    for (int i = 0; i < batch; ++i) seeds[i] = i + 1;
    rlvr::policy::SamplingOptions options;
    options.max_new_tokens = 2;
    rlvr::policy::Generate(model, prompts, seeds, options);  // Warm-up.
    // ATen calls per decode step at the first batch size (they hardly depend
    // on it): 2 steps against 6 (the difference is 4).
    double calls_per_step = -1;
    if (batch == batches.front()) {
      long calls[2];
      for (int i = 0; i < 2; ++i) {
        options.max_new_tokens = i == 0 ? 2 : 6;
        AtenCallCounter counter;
        rlvr::policy::Generate(model, prompts, seeds, options);
        calls[i] = counter.Take();
      }
      calls_per_step = (calls[1] - calls[0]) / 4.0;
    }
    options.max_new_tokens = a.decode_tokens;  // No stop tokens: every row runs to the cap.
    Sync(a);
    auto t0 = Clock::now();
    auto out = rlvr::policy::Generate(model, prompts, seeds, options);
    Sync(a);
    const double s = Seconds(t0);
    double tokens = 0;
    for (const auto& o : out) tokens += static_cast<double>(o.tokens.size());
    // 2 FLOPs per matmul parameter and token, the prompt included (prefill).
    const double flops = 2.0 * matmul_params * (tokens + batch * (a.prompt - 1));
    const double achieved = flops / s;
    // The bandwidth limit: every weight byte read once per step.
    const double limit_steps = a.copy_bytes / weight_bytes;
    const double steps_per_s = a.decode_tokens / s;
    const double model_s = ModelOnlyDecode(a, model, rows, a.decode_tokens);
    const double model_tokens_per_s = tokens / model_s;
    std::printf("\n[decode] KV cache, batch %d, prompt %d, %d new tokens each, T=1, %s on %s\n",
                batch, a.prompt, a.decode_tokens, a.bf16() ? "bf16" : "float32", a.device.c_str());
    std::printf(
        "  Generate: %.2f s: %.1f tokens/s (%.1f steps/s), %.1f GFLOP/s = %.2f%% of the matmul "
        "rate; %.2f%% of the bandwidth limit (%.0f steps/s = %.0f GB/s / %.0f MB of weights)\n",
        s, tokens / s, steps_per_s, achieved / 1e9, 100.0 * achieved / a.matmul_flops,
        100.0 * steps_per_s / limit_steps, limit_steps, a.copy_bytes / 1e9, weight_bytes / 1e6);
    std::printf(
        "  the model alone (prefill + greedy steps, device argmax, ids to the host each step): "
        "%.2f s = %.1f tokens/s; Generate spends %.0f%% of its time outside the model\n",
        model_s, model_tokens_per_s, 100.0 * std::max(0.0, 1.0 - model_s / s));
    if (calls_per_step >= 0) {
      std::printf("  ATen calls per decode step (each ~a kernel launch on CUDA): %.0f\n",
                  calls_per_step);
    }
    std::fflush(stdout);
    Record(a, "\"section\": \"decode\", " + Member("batch", batch) + ", " +
                  Member("prompt", a.prompt) + ", " + Member("new_tokens", a.decode_tokens) + ", " +
                  Member("seconds", s) + ", " + Member("tokens_per_s", tokens / s) + ", " +
                  Member("model_flops_per_s", achieved) + ", " +
                  Member("matmul_fraction", achieved / a.matmul_flops) + ", " +
                  Member("weight_bytes", weight_bytes) + ", " +
                  Member("bandwidth_limit_tokens_per_s", limit_steps * batch) + ", " +
                  Member("bandwidth_fraction", steps_per_s / limit_steps) + ", " +
                  Member("model_only_seconds", model_s) + ", " +
                  Member("model_only_tokens_per_s", model_tokens_per_s) +
                  (calls_per_step >= 0 ? ", " + Member("aten_calls_per_step", calls_per_step)
                                       : std::string()));
  }
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
  auto created = rlvr::policy::CreateTransformer(c, a.vocab, 1);
  if (!created.ok()) return 1;
  rlvr::policy::Transformer model = *created;
  const int n = 2 * a.batch;
  std::vector<std::vector<int>> prompts(n), completions(n);
  for (int r = 0; r < n; ++r) {
    for (int j = 0; j < a.seq; ++j) {
      (j < a.prompt ? prompts[r] : completions[r]).push_back((r * 131 + j * 7919) % a.vocab);
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
              chunked ? "chunked" : "full", n, a.seq - a.prompt, a.vocab, Seconds(t0));
  std::fflush(stdout);
  return 0;
}

// Re-executes this binary for one section; returns its peak RSS in MiB
// (-1 if it failed).
double RunChild(const Args& a, const std::string& section) {
  std::vector<std::string> args = {"real_shape_bench",
                                   "--child",
                                   section,
                                   "--matmul_rate",
                                   std::to_string(a.matmul_flops),
                                   "--copy_rate",
                                   std::to_string(a.copy_bytes),
                                   "--device",
                                   a.device,
                                   "--dtype",
                                   a.dtype,
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
                                   a.decode_batch,
                                   "--decode_tokens",
                                   std::to_string(a.decode_tokens),
                                   "--prompt",
                                   std::to_string(a.prompt),
                                   "--vocab",
                                   std::to_string(a.vocab)};
  if (!a.json.empty()) {
    args.push_back("--json");
    args.push_back(a.json);
  }
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
    Record(a, "\"section\": \"" + section + "\", \"failed\": true, " + Member("status", status));
    return -1;
  }
  return usage.ru_maxrss / 1024.0;
}

int Usage(const char* self) {
  std::fprintf(stderr,
               "usage: %s [--device cpu|cuda] [--dtype f32|bf16] [--threads N] [--layers N]\n"
               "          [--batch B] [--seq L] [--steps S] [--prompt P]\n"
               "          [--decode_batch B[,B...]] [--decode_tokens T] [--matmul_n N]\n"
               "          [--copy_mb M] [--sections matmul,copy,train,decode,logprobs]\n"
               "          [--json FILE] [--vocab V]\n",
               self);
  return 2;
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
    if ((v = next("--device")))
      a.device = v;
    else if ((v = next("--dtype")))
      a.dtype = v;
    else if ((v = next("--threads")))
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
      a.decode_batch = v;
    else if ((v = next("--decode_tokens")))
      a.decode_tokens = std::atoi(v);
    else if ((v = next("--prompt")))
      a.prompt = std::atoi(v);
    else if ((v = next("--matmul_n")))
      a.matmul_n = std::atoi(v);
    else if ((v = next("--copy_mb")))
      a.copy_mb = std::atoi(v);
    else if ((v = next("--vocab")))
      a.vocab = std::atoi(v);
    else if ((v = next("--sections")))
      a.sections = v;
    else if ((v = next("--json")))
      a.json = v;
    else if ((v = next("--child")))
      a.child = v;
    else if ((v = next("--matmul_rate")))
      a.matmul_flops = std::atof(v);
    else if ((v = next("--copy_rate")))
      a.copy_bytes = std::atof(v);
    else
      return Usage(argv[0]);
  }
  if (a.device == "cuda:0") a.device = "cuda";
  if (a.dtype.empty()) a.dtype = a.cuda() ? "bf16" : "f32";
  const std::vector<int> decode_batches = ParseList(a.decode_batch);
  if (a.seq <= a.prompt || a.prompt < 1 || a.batch < 1 || a.steps < 1 || a.layers < 1 ||
      a.decode_tokens < 2 || a.vocab < 2 || decode_batches.empty() ||
      *std::min_element(decode_batches.begin(), decode_batches.end()) < 1 ||
      (a.device != "cpu" && a.device != "cuda") || (a.dtype != "f32" && a.dtype != "bf16")) {
    std::fprintf(stderr,
                 "need seq > prompt >= 1, batch, steps, layers, decode batches >= 1, "
                 "decode_tokens >= 2, device cpu|cuda, dtype f32|bf16\n");
    return Usage(argv[0]);
  }
  if (a.cuda() && !torch::cuda::is_available()) {
    std::fprintf(stderr, "real_shape_bench: --device cuda, but LibTorch sees no CUDA device\n");
    return 3;
  }
  torch::set_num_threads(a.threads);
  torch::manual_seed(0);
  if (a.child == "train") return RunTrain(a);
  if (a.child == "decode") return RunDecode(a);
  if (a.child == "logprobs_chunked") return RunLogprobs(a, true);
  if (a.child == "logprobs_full") return RunLogprobs(a, false);

  if (a.sections.empty())
    a.sections = a.cuda() ? "matmul,copy,train,decode" : "matmul,copy,train,decode,logprobs";
  auto has = [&](const char* s) { return a.sections.find(s) != std::string::npos; };
  std::printf(
      "real_shape_bench: Qwen2.5-0.5B shape (qwen2, hidden 896, %d layers, 14 heads, 2 KV heads, "
      "FFN 4864, vocab %d), random weights, %s, %s, %d threads; load average %s\n",
      a.layers, a.vocab, a.device.c_str(), a.dtype.c_str(), a.threads, LoadAverage().c_str());
  // The baselines: measured whenever a section that divides by them runs.
  if (has("matmul") || has("train") || has("decode")) {
    const int64_t n = a.matmul_n > 0 ? a.matmul_n : (a.cuda() ? 8192 : 2048);
    a.matmul_flops = MatmulRate(a, n, a.cuda() ? 0.5 : 3.0);
    std::printf("\n[matmul] torch::mm %s %lldx%lld on %s: %.1f GFLOP/s\n", a.dtype.c_str(),
                static_cast<long long>(n), static_cast<long long>(n), a.device.c_str(),
                a.matmul_flops / 1e9);
    Record(a, "\"section\": \"matmul\", " + Member("n", double(n)) + ", " +
                  Member("flops_per_s", a.matmul_flops));
  }
  if (has("copy") || has("decode")) {
    const int64_t mb = a.copy_mb > 0 ? a.copy_mb : (a.cuda() ? 2048 : 256);
    a.copy_bytes = CopyRate(a, mb);
    std::printf("\n[copy] %lld MiB %s copy: %.1f GB/s (bytes read + written)\n",
                static_cast<long long>(mb), a.cuda() ? "device-to-device" : "host memory",
                a.copy_bytes / 1e9);
    Record(a, "\"section\": \"copy\", " + Member("mib", double(mb)) + ", " +
                  Member("bytes_per_s", a.copy_bytes));
  }
  if (has("train")) {
    const double mib = RunChild(a, "train");
    std::printf("  peak RSS %.0f MiB\n", mib);
  }
  if (has("decode")) {
    const double mib = RunChild(a, "decode");
    std::printf("  peak RSS %.0f MiB\n", mib);
  }
  if (has("logprobs") && !a.cuda()) {
    std::printf(
        "\n[logprobs] completion log-probs + entropy + backward at vocab %d (d_model 64, "
        "1 layer: the logits dominate)\n",
        a.vocab);
    const double chunked = RunChild(a, "logprobs_chunked");
    std::printf(", peak RSS %.0f MiB\n", chunked);
    const double full = RunChild(a, "logprobs_full");
    std::printf(", peak RSS %.0f MiB\n", full);
    if (chunked > 0 && full > 0) std::printf("  full / chunked peak RSS: %.1fx\n", full / chunked);
  }
  std::printf("\nload average at the end: %s\n", LoadAverage().c_str());
  return 0;
}
