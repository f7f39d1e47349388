// Continuous batching (policy::Engine) against static batching
// (policy::GenerateRows, what actor.engine = static runs) on the same work,
// in one run: G = 8 rows per prompt, prompts of 100 tokens, completion
// lengths drawn log-normally (mean 200, coefficient of variation 0.6, capped
// at 1024) like math reasoning, forced per row (each row's max_new_tokens is
// its length, no stop token), so both do exactly the same useful work and
// must produce the same tokens. Static batching generates `batch_groups`
// groups at a time (rows = batch_groups x G); the engine gets the same
// number of row slots. Printed for each: useful tokens/s, slot utilisation
// (useful row-steps / slot-steps), prefill time, peak KV memory; the ratio
// continuous / static; and prefill time saved by one prefill per group
// (the engine run again with share_prompt off).
//
//   bench/engine_bench [--groups 24] [--batch_groups 8] [--threads 2]
//                      [--d_model 512] [--layers 8] [--kv_cache_tokens 0] [--quick]
//
// Exit status 1 if the outputs differ beyond float rounding: log-probs over
// the rows' common prefixes beyond 1e-3, or more than 5% of the rows parting.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "common/config/flags.h"
#include "common/policy/engine.h"
#include "common/policy/model.h"
#include "common/policy/sampler.h"

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Run {
  double seconds = 0;
  int64_t tokens = 0;
  double utilisation = 0;
  double prefill_seconds = 0;
  int64_t prefill_tokens = 0;
  double peak_kv_bytes = 0;
  int64_t preemptions = 0;
  std::vector<std::vector<rlvr::policy::Sample>> samples;  // Per group.
};

Run RunStatic(rlvr::policy::Transformer& model,
              const std::vector<rlvr::policy::EngineGroup>& groups, int batch_groups) {
  Run run;
  int64_t useful = 0, computed = 0;
  const auto t0 = Clock::now();
  for (size_t start = 0; start < groups.size(); start += batch_groups) {
    const size_t end = std::min(groups.size(), start + batch_groups);
    std::vector<const std::vector<int>*> prompts;
    std::vector<uint64_t> seeds;
    std::vector<rlvr::policy::SamplingOptions> options;
    for (size_t g = start; g < end; ++g) {
      for (size_t r = 0; r < groups[g].seeds.size(); ++r) {
        prompts.push_back(&groups[g].prompt);
        seeds.push_back(groups[g].seeds[r]);
        rlvr::policy::SamplingOptions o = groups[g].options;
        o.max_new_tokens = groups[g].max_new_tokens[r];
        options.push_back(o);
      }
    }
    rlvr::policy::GenerateStats st;
    std::vector<rlvr::policy::Sample> out =
        rlvr::policy::GenerateRows(model, prompts, seeds, options, &st);
    useful += st.useful_row_steps;
    computed += st.row_steps;
    run.prefill_seconds += st.prefill_seconds;
    run.prefill_tokens += st.prefill_tokens;
    run.peak_kv_bytes = std::max(run.peak_kv_bytes, static_cast<double>(st.kv_cache_bytes));
    size_t at = 0;
    for (size_t g = start; g < end; ++g) {
      run.samples.emplace_back(out.begin() + at, out.begin() + at + groups[g].seeds.size());
      at += groups[g].seeds.size();
    }
  }
  run.seconds = Since(t0);
  for (const auto& g : run.samples) {
    for (const auto& s : g) run.tokens += static_cast<int64_t>(s.tokens.size());
  }
  run.utilisation = computed > 0 ? static_cast<double>(useful) / computed : 0;
  return run;
}

Run RunContinuous(rlvr::policy::Transformer& model,
                  const std::vector<rlvr::policy::EngineGroup>& groups,
                  const rlvr::policy::EngineOptions& options) {
  Run run;
  rlvr::policy::EngineStats st;
  const auto t0 = Clock::now();
  auto out = rlvr::policy::GenerateContinuous(*model, options, groups, &st);
  run.seconds = Since(t0);
  if (!out.ok()) {
    std::fprintf(stderr, "engine: %s\n", std::string(out.status().message()).c_str());
    std::exit(2);
  }
  for (auto& r : *out) run.samples.push_back(std::move(r.samples));
  for (const auto& g : run.samples) {
    for (const auto& s : g) run.tokens += static_cast<int64_t>(s.tokens.size());
  }
  run.utilisation = st.slot_steps > 0 ? static_cast<double>(st.row_steps) / st.slot_steps : 0;
  run.prefill_seconds = st.prefill_seconds;
  run.prefill_tokens = st.prefill_tokens;
  run.peak_kv_bytes = static_cast<double>(st.kv_blocks_peak) * st.kv_block_bytes;
  run.preemptions = st.preemptions;
  return run;
}

// How two runs' outputs compare: rows whose tokens are identical, rows that
// part (the first differing token: both are correct draws when the row's
// uniform falls within float rounding of a CDF boundary, as engine_test checks
// in float64), and the largest log-prob difference over each row's common
// prefix (before any parting). False when the runs are not comparable.
struct Comparison {
  int64_t rows = 0;
  int64_t identical = 0;
  double worst = 0;
};

bool Compare(const Run& a, const Run& b, Comparison* c) {
  *c = {};
  if (a.samples.size() != b.samples.size()) return false;
  for (size_t g = 0; g < a.samples.size(); ++g) {
    if (a.samples[g].size() != b.samples[g].size()) return false;
    for (size_t r = 0; r < a.samples[g].size(); ++r) {
      const auto& x = a.samples[g][r];
      const auto& y = b.samples[g][r];
      ++c->rows;
      if (x.tokens == y.tokens) ++c->identical;
      const size_t n = std::min(x.tokens.size(), y.tokens.size());
      for (size_t t = 0; t < n && t < x.logprobs.size() && t < y.logprobs.size(); ++t) {
        if (x.tokens[t] != y.tokens[t]) break;
        c->worst = std::max(c->worst, std::abs(double(x.logprobs[t]) - y.logprobs[t]));
      }
    }
  }
  return true;
}

void Print(const char* name, const Run& r, int64_t slots) {
  std::printf(
      "  %-22s %8.1f s  %8.1f useful tokens/s  utilisation %5.1f%%  prefill %6.2f s "
      "(%lld positions)  peak KV %7.1f MiB  preemptions %lld  (%lld slots)\n",
      name, r.seconds, r.tokens / r.seconds, 100 * r.utilisation, r.prefill_seconds,
      static_cast<long long>(r.prefill_tokens), r.peak_kv_bytes / (1 << 20),
      static_cast<long long>(r.preemptions), static_cast<long long>(slots));
}

int Main(int argc, char** argv) {
  int groups_n = 24;
  int batch_groups = 8;
  int group_size = 8;
  int threads = 2;
  int d_model = 512;
  int layers = 8;
  int heads = 8;
  int vocab = 4096;
  int prompt_len = 100;
  double mean_len = 200;
  double cv = 0.6;
  int cap = 1024;
  int64_t kv_cache_tokens = 0;
  int block_tokens = 16;
  bool quick = false;
  bool skip_unshared = false;
  int64_t seed = 1;
  rlvr::FlagSet flags("engine_bench", "Continuous vs static batching on the same work.");
  flags.Int("groups", &groups_n, "Prompts (groups) generated.");
  flags.Int("batch_groups", &batch_groups,
            "Groups per static batch; the engine gets batch_groups x group_size slots.");
  flags.Int("group_size", &group_size, "Rows per prompt (G).");
  flags.Int("threads", &threads, "Intra-op threads.");
  flags.Int("d_model", &d_model, "Model width.");
  flags.Int("layers", &layers, "Model depth.");
  flags.Int("heads", &heads, "Attention heads.");
  flags.Int("vocab", &vocab, "Vocabulary size.");
  flags.Int("prompt_len", &prompt_len, "Prompt tokens.");
  flags.Double("mean_len", &mean_len, "Mean completion length (log-normal).");
  flags.Double("cv", &cv, "Coefficient of variation of completion lengths.");
  flags.Int("cap", &cap, "Completion length cap.");
  flags.Int64("kv_cache_tokens", &kv_cache_tokens,
              "Engine KV pool in positions; 0 = slots x (prompt_len + mean_len x 1.5).");
  flags.Int("block_tokens", &block_tokens, "Engine KV block size.");
  flags.Bool("skip_unshared", &skip_unshared, "Skip the run without prompt sharing.");
  flags.Bool("quick", &quick, "A small model and workload (the suite's smoke run).");
  flags.Int64("seed", &seed, "Workload seed.");
  if (auto s = flags.Parse(argc - 1, argv + 1); !s.ok() || flags.help_requested()) {
    std::printf("%s", flags.Usage().c_str());
    return s.ok() ? 0 : 2;
  }
  if (quick) {
    groups_n = 6;
    batch_groups = 2;
    d_model = 64;
    layers = 2;
    heads = 4;
    vocab = 256;
    prompt_len = 20;
    mean_len = 30;
    cap = 120;
  }
  torch::set_num_threads(threads);
  rlvr::ModelConfig c;
  c.d_model = d_model;
  c.n_layers = layers;
  c.n_heads = heads;
  c.d_ff = 3 * d_model;
  c.max_seq_len = prompt_len + cap;
  auto model = rlvr::policy::CreateTransformer(c, vocab, 1);
  if (!model.ok()) {
    std::fprintf(stderr, "model: %s\n", std::string(model.status().message()).c_str());
    return 2;
  }
  (*model)->eval();

  // The workload: log-normal lengths with the given mean and CV, capped.
  std::mt19937_64 rng(static_cast<uint64_t>(seed));
  const double sigma2 = std::log(1 + cv * cv);
  std::lognormal_distribution<double> length(std::log(mean_len) - sigma2 / 2, std::sqrt(sigma2));
  std::vector<rlvr::policy::EngineGroup> groups;
  int64_t min_len = cap, max_len = 0;
  for (int g = 0; g < groups_n; ++g) {
    rlvr::policy::EngineGroup eg;
    eg.id = static_cast<uint64_t>(g + 1);
    for (int t = 0; t < prompt_len; ++t)
      eg.prompt.push_back(1 + static_cast<int>(rng() % (vocab - 1)));
    eg.options.max_new_tokens = cap;
    for (int r = 0; r < group_size; ++r) {
      eg.seeds.push_back(rng());
      const int len = std::clamp(static_cast<int>(std::lround(length(rng))), 1, cap);
      eg.max_new_tokens.push_back(len);
      min_len = std::min<int64_t>(min_len, len);
      max_len = std::max<int64_t>(max_len, len);
    }
    groups.push_back(std::move(eg));
  }
  const int slots = batch_groups * group_size;
  rlvr::policy::EngineOptions eo;
  eo.max_rows = slots;
  eo.block_tokens = block_tokens;
  eo.kv_cache_tokens = kv_cache_tokens > 0
                           ? kv_cache_tokens
                           : static_cast<int64_t>(slots * (prompt_len + 1.5 * mean_len));
  eo.kv_cache_tokens = std::max<int64_t>(eo.kv_cache_tokens, prompt_len + cap + 2 * block_tokens);
  std::printf(
      "engine_bench: model d=%d L=%d heads=%d d_ff=%d vocab=%d (%.1fM parameters), %d threads; "
      "%d groups x G=%d, prompts %d tokens, completions log-normal mean %.0f cv %.2f cap %d "
      "(drawn: %lld..%lld); static batches of %d rows, engine %d slots, KV pool %lld positions\n",
      d_model, layers, heads, c.d_ff, vocab, (*model)->num_parameters() / 1e6, threads, groups_n,
      group_size, prompt_len, mean_len, cv, cap, static_cast<long long>(min_len),
      static_cast<long long>(max_len), slots, slots, static_cast<long long>(eo.kv_cache_tokens));

  {  // Warm-up (allocator, BLAS threads), not measured.
    std::vector<rlvr::policy::EngineGroup> warm(groups.begin(), groups.begin() + 1);
    warm[0].max_new_tokens.assign(warm[0].seeds.size(), 4);
    RunStatic(*model, warm, 1);
    RunContinuous(*model, warm, eo);
  }
  const Run st = RunStatic(*model, groups, batch_groups);
  const Run co = RunContinuous(*model, groups, eo);
  Run unshared;
  if (!skip_unshared) {
    rlvr::policy::EngineOptions no_share = eo;
    no_share.share_prompt = false;
    unshared = RunContinuous(*model, groups, no_share);
  }
  Comparison cmp;
  const bool comparable = Compare(st, co, &cmp);
  Print("static", st, slots);
  Print("continuous", co, slots);
  if (!skip_unshared) Print("continuous, no sharing", unshared, slots);
  std::printf(
      "  outputs: %lld of %lld rows token for token identical (a row parts where its draw falls "
      "within "
      "float rounding of a CDF boundary, which engine_test checks in float64); max |log-prob "
      "difference| before any parting %.3g\n",
      static_cast<long long>(cmp.identical), static_cast<long long>(cmp.rows), cmp.worst);
  std::printf("  continuous / static useful tokens/s = %.2fx (target >= 1.5x)\n",
              (co.tokens / co.seconds) / (st.tokens / st.seconds));
  if (!skip_unshared) {
    std::printf(
        "  one prefill per group: %.2f s of prefill instead of %.2f s (%.2f s saved, %lld of "
        "%lld prompt positions not recomputed)\n",
        co.prefill_seconds, unshared.prefill_seconds, unshared.prefill_seconds - co.prefill_seconds,
        static_cast<long long>(unshared.prefill_tokens - co.prefill_tokens),
        static_cast<long long>(unshared.prefill_tokens));
  }
  // Same outputs: comparable runs, log-probs equal up to float rounding, and
  // at most 5% of the rows parting at a near-tie.
  const bool same = comparable && cmp.worst < 1e-3 && 20 * (cmp.rows - cmp.identical) <= cmp.rows;
  if (!same) std::printf("  OUTPUTS DIFFER beyond float rounding\n");
  return same ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) { return Main(argc, argv); }
