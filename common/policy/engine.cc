#include "common/policy/engine.h"

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/policy/engine_scheduler.h"
#include "common/policy/model.h"

namespace rlvr::policy {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int64_t KvHeads(const ModelConfig& c) { return c.n_kv_heads > 0 ? c.n_kv_heads : c.n_heads; }
int64_t HeadDim(const ModelConfig& c) {
  return c.head_dim > 0 ? c.head_dim : c.d_model / std::max(1, c.n_heads);
}

torch::TensorOptions PoolOptions(const Placement& placement) {
  return torch::TensorOptions()
      .dtype(placement.dtype == ComputeDtype::kBFloat16 ? torch::kBFloat16 : torch::kFloat32)
      .device(placement.is_cuda() ? torch::Device(torch::kCUDA, placement.cuda_device)
                                  : torch::Device(torch::kCPU));
}

class EngineImpl final : public Engine {
 public:
  EngineImpl(const EngineOptions& options, int vocab_size, KvPool pool)
      : options_(options),
        vocab_size_(vocab_size),
        pool_(std::move(pool)),
        sched_(SchedulerOptions{options.max_rows, static_cast<int>(pool_.num_blocks),
                                options.block_tokens, options.share_prompt}) {}

  absl::Status Add(EngineGroup group) override;
  bool RowFits(int prompt_len, int max_new_tokens) const override {
    return RowFitsKvCache(prompt_len, max_new_tokens, pool_.num_blocks * pool_.block_tokens,
                          static_cast<int>(pool_.block_tokens));
  }
  bool Cancel(uint64_t id) override;
  void CancelAll() override;
  std::vector<EngineResult> Step(TransformerImpl& model) override;
  bool idle() const override { return groups_.empty(); }
  int groups() const override { return static_cast<int>(groups_.size()); }
  int running_rows() const override { return sched_.running_rows(); }
  int waiting_rows() const override { return sched_.waiting_rows(); }
  EngineStats stats() const override;
  const EngineOptions& options() const override { return options_; }

 private:
  struct Group {
    EngineGroup request;
    std::vector<Sample> samples;
    std::vector<int> max_new;
    std::vector<float> logits;  // The prompt's last-position logits while rows may start.
    bool started = false;
    Clock::time_point start;
  };

  // Logits [seqs, V] (float32, CPU) of the last token of each sequence.
  torch::Tensor Logits(TransformerImpl& model, const std::vector<int64_t>& tokens,
                       const std::vector<PagedSeq>& seqs);
  // Row `r` draws its next token from `logits` (V floats); tells the scheduler.
  void Draw(RowRef r, const float* logits, std::vector<uint64_t>* finished_groups);
  void CopyBlocks(const std::vector<BlockCopy>& copies);

  const EngineOptions options_;
  const int vocab_size_;
  KvPool pool_;
  EngineScheduler sched_;
  std::map<uint64_t, Group> groups_;             // By scheduler key.
  std::unordered_map<uint64_t, uint64_t> keys_;  // Caller id -> scheduler key.
  std::vector<double> scratch_;
  EngineStats stats_;
};

absl::Status EngineImpl::Add(EngineGroup group) {
  if (group.prompt.empty()) return absl::InvalidArgumentError("engine: empty prompt");
  if (group.seeds.empty()) return absl::InvalidArgumentError("engine: a group needs rows (seeds)");
  for (int t : group.prompt) {
    if (t < 0 || t >= vocab_size_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "engine: prompt token ", t, " outside the vocabulary [0, ", vocab_size_, ")"));
    }
  }
  const int cap = group.options.max_new_tokens;
  if (cap < 1) return absl::InvalidArgumentError("engine: max_new_tokens must be >= 1");
  std::vector<int> max_new = group.max_new_tokens;
  if (max_new.empty()) max_new.assign(group.seeds.size(), cap);
  if (max_new.size() != group.seeds.size()) {
    return absl::InvalidArgumentError("engine: max_new_tokens needs one entry per row");
  }
  for (int m : max_new) {
    if (m < 1 || m > cap) {
      return absl::InvalidArgumentError(
          absl::StrCat("engine: a row's max_new_tokens ", m, " outside [1, ", cap, "]"));
    }
  }
  const int p = static_cast<int>(group.prompt.size());
  const int longest = *std::max_element(max_new.begin(), max_new.end());
  if (!RowFits(p, longest)) {
    return absl::InvalidArgumentError(
        absl::StrCat("engine: a row of prompt ", p, " + max_new_tokens ", longest, " needs ",
                     sched_.BlocksToRunAlone(p, longest), " KV blocks of ", options_.block_tokens,
                     " positions; the pool (kv_cache_tokens) has ", pool_.num_blocks));
  }
  if (keys_.count(group.id) != 0) {
    return absl::InvalidArgumentError(absl::StrCat("engine: group id ", group.id, " already held"));
  }
  const uint64_t key = sched_.AddGroup(p, max_new);
  Group& g = groups_[key];
  g.samples.resize(group.seeds.size());
  g.max_new = std::move(max_new);
  keys_[group.id] = key;
  g.request = std::move(group);
  return absl::OkStatus();
}

bool EngineImpl::Cancel(uint64_t id) {
  auto it = keys_.find(id);
  if (it == keys_.end()) return false;
  sched_.RemoveGroup(it->second);
  groups_.erase(it->second);
  keys_.erase(it);
  return true;
}

void EngineImpl::CancelAll() {
  for (const auto& [key, g] : groups_) sched_.RemoveGroup(key);
  groups_.clear();
  keys_.clear();
}

torch::Tensor EngineImpl::Logits(TransformerImpl& model, const std::vector<int64_t>& tokens,
                                 const std::vector<PagedSeq>& seqs) {
  torch::Tensor hidden = model.HiddenPaged(tokens, seqs, pool_, options_.fused_cpu_kernels);
  // (Under mixed precision the float32 output weight is cast to the states' dtype.)
  torch::Tensor logits = torch::mm(hidden, model.OutputWeight().to(hidden.scalar_type()).t());
  return logits.to(torch::kCPU, torch::kFloat32).contiguous();
}

void EngineImpl::Draw(RowRef r, const float* logits, std::vector<uint64_t>* finished_groups) {
  Group& g = groups_.at(r.group);
  Sample& s = g.samples[r.row];
  const bool done = SampleNext(logits, vocab_size_, g.request.seeds[r.row], g.request.options,
                               g.max_new[r.row], &s, &scratch_);
  ++stats_.tokens;
  sched_.Drew(r, done);
  if (sched_.GroupDone(r.group)) finished_groups->push_back(r.group);
}

void EngineImpl::CopyBlocks(const std::vector<BlockCopy>& copies) {
  const int64_t bt = pool_.block_tokens;
  for (const BlockCopy& c : copies) {
    for (size_t i = 0; i < pool_.keys.size(); ++i) {
      pool_.keys[i]
          .narrow(0, c.dst * bt, c.tokens)
          .copy_(pool_.keys[i].narrow(0, c.src * bt, c.tokens));
      pool_.values[i]
          .narrow(0, c.dst * bt, c.tokens)
          .copy_(pool_.values[i].narrow(0, c.src * bt, c.tokens));
    }
  }
}

std::vector<EngineResult> EngineImpl::Step(TransformerImpl& model) {
  std::vector<EngineResult> results;
  if (groups_.empty()) return results;
  TORCH_CHECK(model.vocab_size() == vocab_size_, "engine: the model's vocabulary changed");
  torch::NoGradGuard no_grad;
  ++stats_.steps;
  std::vector<uint64_t> finished;
  const int v = vocab_size_;

  // 1-2. Admission and the prompt pass.
  const auto t0 = Clock::now();
  const EngineScheduler::Admission adm = sched_.Admit();
  for (const RowRef& r : adm.fresh) {
    Group& g = groups_.at(r.group);
    if (!g.started) {
      g.started = true;
      g.start = t0;
    }
  }
  for (const RowRef& r : adm.own_prefills) {
    Group& g = groups_.at(r.group);
    if (!g.started) {
      g.started = true;
      g.start = t0;
    }
  }
  if (!adm.prompt_prefills.empty() || !adm.own_prefills.empty()) {
    std::vector<int64_t> tokens;
    std::vector<PagedSeq> seqs;
    for (uint64_t key : adm.prompt_prefills) {
      const Group& g = groups_.at(key);
      const std::vector<int>& blocks = sched_.PromptBlocks(key);
      tokens.insert(tokens.end(), g.request.prompt.begin(), g.request.prompt.end());
      const int64_t p = static_cast<int64_t>(g.request.prompt.size());
      seqs.push_back(PagedSeq{0, p, blocks.data(), static_cast<int64_t>(blocks.size())});
    }
    for (const RowRef& r : adm.own_prefills) {
      const Group& g = groups_.at(r.group);
      const Sample& s = g.samples[r.row];
      const std::vector<int>& blocks = sched_.RowBlocks(r);
      tokens.insert(tokens.end(), g.request.prompt.begin(), g.request.prompt.end());
      tokens.insert(tokens.end(), s.tokens.begin(), s.tokens.end());
      const int64_t n = static_cast<int64_t>(g.request.prompt.size() + s.tokens.size());
      seqs.push_back(PagedSeq{0, n, blocks.data(), static_cast<int64_t>(blocks.size())});
    }
    stats_.prefill_tokens += static_cast<int64_t>(tokens.size());
    ++stats_.prompt_passes;
    torch::Tensor logits = Logits(model, tokens, seqs);
    const float* l = logits.data_ptr<float>();
    size_t seq = 0;
    for (uint64_t key : adm.prompt_prefills) {
      Group& g = groups_.at(key);
      // A prompt computed again (its pin was dropped) keeps the first logits.
      if (g.logits.empty()) g.logits.assign(l + seq * v, l + (seq + 1) * v);
      ++seq;
    }
    for (const RowRef& r : adm.own_prefills) Draw(r, l + (seq++) * v, &finished);
  }
  CopyBlocks(adm.copies);
  for (const RowRef& r : adm.fresh) {
    Group& g = groups_.at(r.group);
    stats_.prefill_tokens_reused += static_cast<int64_t>(g.request.prompt.size());
    Draw(r, g.logits.data(), &finished);
  }
  // A prompt's first computation is not a reuse: count the rows after it.
  for (uint64_t key : adm.prompt_prefills) {
    stats_.prefill_tokens_reused -= static_cast<int64_t>(groups_.at(key).request.prompt.size());
  }
  for (auto& [key, g] : groups_) {
    if (!g.logits.empty() && !sched_.GroupHasUnstartedRows(key)) {
      g.logits.clear();
      g.logits.shrink_to_fit();
    }
  }
  const auto t1 = Clock::now();
  if (!adm.prompt_prefills.empty() || !adm.own_prefills.empty() || !adm.fresh.empty()) {
    stats_.prefill_seconds += Seconds(t0, t1);
  }

  // 3. The decode pass.
  const std::vector<EngineScheduler::DecodeRow> plan = sched_.PlanDecode();
  // Every step with a group held admits or decodes a row (the scheduler's
  // no-deadlock rule); anything else is a bug, not a wait.
  TORCH_CHECK(!plan.empty() || !adm.fresh.empty() || !adm.own_prefills.empty(),
              "engine: a step with ", groups_.size(), " groups held made no progress");
  if (!plan.empty()) {
    std::vector<int64_t> tokens;
    std::vector<PagedSeq> seqs;
    tokens.reserve(plan.size());
    seqs.reserve(plan.size());
    for (const EngineScheduler::DecodeRow& d : plan) {
      const Group& g = groups_.at(d.row.group);
      tokens.push_back(g.samples[d.row.row].tokens.back());
      const std::vector<int>& blocks = sched_.RowBlocks(d.row);
      seqs.push_back(PagedSeq{d.position, 1, blocks.data(), static_cast<int64_t>(blocks.size())});
    }
    torch::Tensor logits = Logits(model, tokens, seqs);
    const float* l = logits.data_ptr<float>();
    for (size_t i = 0; i < plan.size(); ++i) Draw(plan[i].row, l + i * v, &finished);
    ++stats_.decode_passes;
    stats_.row_steps += static_cast<int64_t>(plan.size());
    stats_.slot_steps += options_.max_rows;
    stats_.decode_seconds += Seconds(t1, Clock::now());
  }

  const auto t2 = Clock::now();
  for (uint64_t key : finished) {
    auto it = groups_.find(key);
    if (it == groups_.end()) continue;  // Listed twice.
    EngineResult out;
    out.id = it->second.request.id;
    out.samples = std::move(it->second.samples);
    out.seconds = Seconds(it->second.start, t2);
    keys_.erase(out.id);
    sched_.RemoveGroup(key);
    groups_.erase(it);
    results.push_back(std::move(out));
  }
  return results;
}

EngineStats EngineImpl::stats() const {
  EngineStats s = stats_;
  s.preemptions = sched_.preemptions();
  s.running_rows = sched_.running_rows();
  s.waiting_rows = sched_.waiting_rows();
  s.kv_blocks = pool_.num_blocks;
  s.kv_blocks_used = sched_.used_blocks();
  s.kv_blocks_peak = sched_.peak_used_blocks();
  s.kv_block_bytes = pool_.block_bytes();
  s.kv_block_tokens = pool_.block_tokens;
  return s;
}

absl::Status CheckOptions(const EngineOptions& o) {
  if (o.max_rows < 1) return absl::InvalidArgumentError("engine: max_rows must be >= 1");
  if (o.block_tokens < 1) return absl::InvalidArgumentError("engine: block_tokens must be >= 1");
  if (o.kv_cache_tokens < 1) {
    return absl::InvalidArgumentError("engine: kv_cache_tokens must be >= 1");
  }
  const int64_t blocks = (o.kv_cache_tokens + o.block_tokens - 1) / o.block_tokens;
  if (blocks > (int64_t{1} << 30)) {
    return absl::InvalidArgumentError("engine: kv_cache_tokens is out of range");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& options,
                                                       const ModelConfig& model, int vocab_size,
                                                       const Placement& placement) {
  if (absl::Status s = CheckOptions(options); !s.ok()) return s;
  if (vocab_size < 1) return absl::InvalidArgumentError("engine: vocab_size must be >= 1");
  const int64_t blocks =
      (options.kv_cache_tokens + options.block_tokens - 1) / options.block_tokens;
  const int64_t slots = blocks * options.block_tokens;
  const torch::TensorOptions opts = PoolOptions(placement).requires_grad(false);
  const int64_t kv = KvHeads(model);
  const int64_t dh = HeadDim(model);
  const double bytes = 2.0 * model.n_layers * static_cast<double>(slots) * kv * dh *
                       (placement.dtype == ComputeDtype::kBFloat16 ? 2 : 4);
  KvPool pool;
  try {
    for (int i = 0; i < model.n_layers; ++i) {
      pool.keys.push_back(torch::zeros({slots, kv, dh}, opts));
      pool.values.push_back(torch::zeros({slots, kv, dh}, opts));
    }
  } catch (const std::exception& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat("engine: the KV pool of ", slots, " positions (", bytes / (1 << 20),
                     " MiB on ", placement.ToString(), ") could not be allocated: ", e.what()));
  }
  pool.num_blocks = blocks;
  pool.block_tokens = options.block_tokens;
  return std::unique_ptr<Engine>(new EngineImpl(options, vocab_size, std::move(pool)));
}

bool RowFitsKvCache(int prompt_len, int max_new_tokens, int64_t kv_cache_tokens, int block_tokens) {
  if (prompt_len < 1 || max_new_tokens < 1 || block_tokens < 1 || kv_cache_tokens < 1) return false;
  const int64_t blocks = (kv_cache_tokens + block_tokens - 1) / block_tokens;
  const int64_t need = (int64_t{prompt_len} + max_new_tokens + block_tokens - 1) / block_tokens + 1;
  return need <= blocks;
}

absl::StatusOr<std::vector<EngineResult>> GenerateContinuous(TransformerImpl& model,
                                                             const EngineOptions& options,
                                                             std::vector<EngineGroup> groups,
                                                             EngineStats* stats) {
  Placement placement;
  const torch::Tensor& w = model.OutputWeight();
  if (w.is_cuda()) placement.cuda_device = w.device().index();
  placement.dtype =
      model.compute_dtype() == torch::kBFloat16 ? ComputeDtype::kBFloat16 : ComputeDtype::kFloat32;
  if (model.compute_dtype() != torch::kFloat32 && model.compute_dtype() != torch::kBFloat16) {
    return absl::InvalidArgumentError("GenerateContinuous: float32 or bfloat16 models only");
  }
  absl::StatusOr<std::unique_ptr<Engine>> engine =
      Engine::Create(options, model.config(), model.vocab_size(), placement);
  if (!engine.ok()) return engine.status();
  std::vector<uint64_t> order;
  for (EngineGroup& g : groups) {
    order.push_back(g.id);
    if (absl::Status s = (*engine)->Add(std::move(g)); !s.ok()) return s;
  }
  std::unordered_map<uint64_t, EngineResult> done;
  while (!(*engine)->idle()) {
    for (EngineResult& r : (*engine)->Step(model)) done[r.id] = std::move(r);
  }
  std::vector<EngineResult> out;
  for (uint64_t id : order) out.push_back(std::move(done[id]));
  if (stats != nullptr) *stats = (*engine)->stats();
  return out;
}

}  // namespace rlvr::policy
