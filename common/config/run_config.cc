#include "common/config/run_config.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/base/status_macros.h"
#include "common/jinja/chat_template.h"

namespace rlvr {
namespace {
constexpr int64_t kBig = std::numeric_limits<int32_t>::max();
constexpr int64_t kSeedMax = std::numeric_limits<int64_t>::max();
constexpr double kHuge = 1e30;
}  // namespace

void DescribeRunConfig(RunConfig* c, ConfigSchema* s) {
  ModelConfig& m = c->model;
  s->Int("model.d_model", &m.d_model, 8, 8192, "Residual width.");
  s->Int("model.n_layers", &m.n_layers, 1, 128, "Transformer blocks.");
  s->Int("model.n_heads", &m.n_heads, 1, 128, "Attention heads (divides d_model).");
  s->Int("model.d_ff", &m.d_ff, 8, 65536, "SwiGLU hidden width.");
  s->Int("model.max_seq_len", &m.max_seq_len, 4, 65536, "Prompt+completion token limit.");
  s->Double("model.rope_theta", &m.rope_theta, 1.0, 1e9, "RoPE base.");
  s->Double("model.init_std", &m.init_std, 1e-6, 1.0, "Init std of weights.");
  s->String("model.hf_path", &m.hf_path, "Hugging Face model directory; empty = built-in.");
  s->Enum("model.arch", &m.arch, {"builtin", "llama", "qwen2", "qwen3"},
          "Architecture (from config.json when model.hf_path is set).");
  s->Int("model.n_kv_heads", &m.n_kv_heads, 0, 1024, "Key/value heads (GQA); 0 = n_heads.");
  s->Int("model.head_dim", &m.head_dim, 0, 4096, "Per-head width; 0 = d_model / n_heads.");
  s->Bool("model.qkv_bias", &m.qkv_bias, "Biases on q, k, v projections (HF archs).");
  s->Bool("model.o_bias", &m.o_bias, "Bias on the attention output projection (HF archs).");
  s->Bool("model.mlp_bias", &m.mlp_bias, "Biases on the MLP projections (HF archs).");
  s->Bool("model.qk_norm", &m.qk_norm, "Per-head q/k RMSNorm before RoPE (HF archs).");
  s->Bool("model.tie_embeddings", &m.tie_embeddings, "Output projection = input embedding.");
  s->Double("model.rms_norm_eps", &m.rms_norm_eps, 1e-12, 1.0, "RMSNorm epsilon.");
  s->Enum("model.rope_scaling", &m.rope_scaling, {"", "llama3"}, "RoPE scaling type.");
  s->Double("model.rope_factor", &m.rope_factor, 1e-6, 1e6, "llama3 RoPE scaling factor.");
  s->Double("model.rope_low_freq_factor", &m.rope_low_freq_factor, 1e-6, 1e6,
            "llama3 RoPE low_freq_factor.");
  s->Double("model.rope_high_freq_factor", &m.rope_high_freq_factor, 1e-6, 1e6,
            "llama3 RoPE high_freq_factor.");
  s->Int("model.rope_original_max_position", &m.rope_original_max_position, 1, 1 << 30,
         "llama3 RoPE original_max_position_embeddings.");
  s->Int("model.vocab_size", &m.vocab_size, 0, 1 << 24, "Vocabulary; 0 = the tokenizer's.");
  s->Enum("model.compute_dtype", &m.compute_dtype, {"auto", "float32", "bfloat16"},
          "Forward-pass dtype: auto = bfloat16 on CUDA, float32 on CPU (trained weights and "
          "AdamW state stay float32).");

  TaskConfig& t = c->task;
  s->Enum("task.kind", &t.kind, {"arithmetic", "jsonl", "chain"}, "Prompt source and verifier.");
  s->String("task.ops", &t.ops, "arithmetic: operator characters drawn from (+ - *).");
  s->Int("task.min_digits", &t.min_digits, 1, 9, "arithmetic: operand digits, min.");
  s->Int("task.max_digits", &t.max_digits, 1, 9, "arithmetic: operand digits, max.");
  s->Int("task.num_terms", &t.num_terms, 2, 6, "arithmetic: operands per expression.");
  s->Int("task.train_size", &t.train_size, 1, kBig, "Training prompts.");
  s->Int("task.heldout_size", &t.heldout_size, 1, kBig, "Held-out prompts.");
  s->Int64("task.seed", &t.seed, 0, kSeedMax, "Dataset generation seed.");
  s->String("task.train_path", &t.train_path, "jsonl: training prompts file.");
  s->String("task.heldout_path", &t.heldout_path, "jsonl: held-out prompts file.");
  s->String("task.prompt_format", &t.prompt_format,
            "raw | chatml | llama3 | model (the model's chat template) | a template string "
            "containing {question}.");
  s->String("task.system_prompt", &t.system_prompt, "System prompt of chat formats; \"\" = none.");
  s->String("task.chat_template_kwargs", &t.chat_template_kwargs,
            "model: extra chat template variables, \"name=value, ...\" "
            "(\"enable_thinking=false\"); \"\" = none.");
  s->Enum("task.verifier", &t.verifier, {"final_answer", "gsm8k", "boxed", "exact", "math"},
          "How completions are scored (docs/tasks.md).");
  s->Double("task.math_relative_tolerance", &t.math_relative_tolerance, 1e-15, 0.1,
            "math: relative tolerance of a decimal against an exact or irrational value.");
  s->Double("task.format_reward", &t.format_reward, 0.0, 0.999,
            "Reward of a wrong but well-formed answer.");
  s->String("task.question_field", &t.question_field, "jsonl: the question's field.");
  s->String("task.answer_field", &t.answer_field, "jsonl: the reference answer's field.");
  s->String("task.id_field", &t.id_field, "jsonl: the id's field; \"\" = file:line ids.");
  s->Double("task.heldout_fraction", &t.heldout_fraction, 0.0, 0.999,
            "jsonl without heldout_path: fraction of train_path held out (by task.seed).");

  PretrainConfig& p = c->pretrain;
  s->String("pretrain.checkpoint", &p.checkpoint, "Base policy weight file (written by pretrain).");
  s->Int("pretrain.steps", &p.steps, 0, kBig, "Optimizer steps.");
  s->Int("pretrain.batch_size", &p.batch_size, 1, 1 << 20, "Sequences per step.");
  s->Double("pretrain.lr", &p.lr, 0.0, 10.0, "Peak learning rate.");
  s->Int("pretrain.warmup_steps", &p.warmup_steps, 0, kBig, "Linear warm-up steps.");
  s->Double("pretrain.min_lr_ratio", &p.min_lr_ratio, 0.0, 1.0, "Cosine floor fraction.");
  s->Double("pretrain.weight_decay", &p.weight_decay, 0.0, 10.0, "AdamW weight decay.");
  s->Double("pretrain.grad_clip", &p.grad_clip, 0.0, kHuge, "Grad-norm clip; 0 = off.");
  s->Double("pretrain.data_fraction", &p.data_fraction, 0.0, 1.0,
            "Fraction of training prompts seen in pretraining.");
  s->Int64("pretrain.seed", &p.seed, 0, kSeedMax, "Init and shuffle seed.");
  s->Double("pretrain.stop_accuracy", &p.stop_accuracy, 0.0, 1.0,
            "Stop at this greedy accuracy on the validation prompts; 0 = run all steps.");
  s->Int("pretrain.validation_prompts", &p.validation_prompts, 1, kBig,
         "Training-split prompts held out of pretraining for the stop check.");
  s->Int("pretrain.validate_every", &p.validate_every, 1, kBig, "Steps between stop checks.");
  s->String("pretrain.device", &p.device,
            "Pretraining device: auto (cuda:0 if CUDA is available, else cpu) | cpu | cuda | "
            "cuda:N.");

  SamplingConfig& sm = c->sampling;
  s->Double("sampling.temperature", &sm.temperature, 1e-3, 100.0, "Softmax temperature.");
  s->Int("sampling.top_k", &sm.top_k, 0, kBig, "Top-k; 0 = off.");
  s->Double("sampling.top_p", &sm.top_p, 1e-6, 1.0, "Nucleus mass; 1 = off.");
  s->Int("sampling.max_new_tokens", &sm.max_new_tokens, 1, 65536, "Completion token cap.");

  ActorConfig& a = c->actor;
  s->Int("actor.max_batch_prompts", &a.max_batch_prompts, 1, 4096,
         "The actor's lease capacity: prompts held at once, generating or waiting for a slot "
         "(static: generated together).");
  s->Enum("actor.engine", &a.engine, {"continuous", "static"},
          "continuous: rows join and leave the running batch as they finish, one prompt pass "
          "per group, a fixed KV pool; static: one batch of leases at a time, every row "
          "stepped until the longest finishes.");
  s->Int("actor.max_batch_rows", &a.max_batch_rows, 1, 65536,
         "continuous: rows decoded together (slots).");
  s->Int64("actor.kv_cache_tokens", &a.kv_cache_tokens, 0, int64_t{1} << 34,
           "continuous: KV pool size in positions (prompt + completion tokens held at once); "
           "0 = actor.max_batch_rows x model.max_seq_len. Must hold one row of "
           "model.max_seq_len plus two blocks.");
  s->Int("actor.kv_block_tokens", &a.kv_block_tokens, 1, 4096,
         "continuous: positions per KV block.");
  s->Int("actor.threads", &a.threads, 1, 256, "Intra-op threads.");
  s->Double("actor.reconnect_initial_s", &a.reconnect_initial_s, 0.001, 3600.0,
            "First reconnect backoff, seconds.");
  s->Double("actor.reconnect_max_s", &a.reconnect_max_s, 0.001, 3600.0, "Backoff ceiling, s.");
  s->Double("actor.shutdown_deadline_s", &a.shutdown_deadline_s, 0.0, 3600.0,
            "SIGTERM drain deadline, seconds.");
  s->String("actor.device", &a.device,
            "Generation model's device: auto (cuda:0 if CUDA is available, else cpu) | cpu | "
            "cuda | cuda:N.");

  LearnerConfig& l = c->learner;
  s->Int("learner.group_size", &l.group_size, 2, 1024,
         "Completions per prompt (G): every lease asks actors for G.");
  s->Renamed("actor.group_size", "learner.group_size");
  s->Int("learner.max_policy_lag", &l.max_policy_lag, 0, 1000, "Staleness limit in versions.");
  s->Int("learner.buffer_groups", &l.buffer_groups, 1, 1 << 20, "Rollout buffer capacity.");
  s->Int("learner.groups_per_update", &l.groups_per_update, 1, 1 << 20,
         "Groups consumed per update.");
  s->Double("learner.lease_timeout_s", &l.lease_timeout_s, 0.01, 86400.0, "Lease deadline, s.");
  s->Int("learner.checkpoint_every", &l.checkpoint_every, 0, kBig, "Updates per checkpoint.");
  s->Int("learner.keep_checkpoints", &l.keep_checkpoints, 1, 1000, "Checkpoints kept.");
  s->Int("learner.threads", &l.threads, 1, 256, "Intra-op threads per rank.");
  s->Double("learner.collective_timeout_s", &l.collective_timeout_s, 0.1, 86400.0,
            "Collective timeout, seconds.");
  s->Int64("learner.max_message_bytes", &l.max_message_bytes, 1024, 1LL << 31,
           "Largest ActorMessage accepted, bytes.");
  s->Int("learner.max_sessions", &l.max_sessions, 1, 1 << 20,
         "Concurrent actor sessions (streams that said Hello).");
  s->Int("learner.max_awaiting_hello", &l.max_awaiting_hello, 1, 1 << 20,
         "Streams awaiting Hello, all peers together.");
  s->Int("learner.max_awaiting_hello_per_peer", &l.max_awaiting_hello_per_peer, 1, 1 << 20,
         "Streams awaiting Hello from one peer address.");
  s->Double("learner.max_groups_per_s", &l.max_groups_per_s, 0.0, 1e9,
            "Per-session rate limit (groups/s) on groups that answer no live lease; 0 = off.");
  s->Int64("learner.buffer_bytes", &l.buffer_bytes, 1024, 1LL << 40,
           "Bytes of accepted groups awaiting training.");
  s->Int64("learner.seed", &l.seed, 0, kSeedMax, "Learner seed.");
  s->Double("learner.hello_timeout_s", &l.hello_timeout_s, 0.01, 3600.0,
            "Time a session stream has to send Hello, s.");
  s->Int("learner.max_session_capacity", &l.max_session_capacity, 1, 1 << 20,
         "Largest Hello.capacity granted (clamped).");
  s->Int("learner.lease_expiries_to_close", &l.lease_expiries_to_close, 0, 1 << 20,
         "Consecutive expired leases that close a session; 0 = never.");
  s->Double("learner.keepalive_time_s", &l.keepalive_time_s, 0.0, 86400.0,
            "Server keepalive ping interval, s; 0 = off.");
  s->Double("learner.keepalive_timeout_s", &l.keepalive_timeout_s, 0.1, 3600.0,
            "Keepalive ping acknowledgement timeout, s.");
  s->String("learner.device", &l.device,
            "Trained model's device: auto (cuda:(rank % devices) if CUDA is available, else cpu) "
            "| cpu | cuda | cuda:N.");

  LossConfig& lo = c->loss;
  // Any string here: the estimators register themselves in learner/core
  // (which common/ does not depend on); the learner and every `rlvr` command
  // check the name against that registry when they load the config.
  s->String("loss.estimator", &lo.estimator,
            "Policy-gradient estimator (docs/algorithms.md; default dfpo).");
  s->Enum("loss.dfpo_transform", &lo.dfpo_transform, {"min_replace", "adv_orthogonal"},
          "DFPO in-group weight transform.");
  s->Double("loss.clip_eps", &lo.clip_eps, 0.0, 10.0, "Clip epsilon.");
  s->Double("loss.clip_eps_high", &lo.clip_eps_high, 0.0, 10.0, "dapo upper clip epsilon.");
  s->Double("loss.gspo_eps", &lo.gspo_eps, 0.0, 10.0, "gspo sequence-ratio clip epsilon.");
  s->Double("loss.dfpo_max_abs_log_ratio", &lo.dfpo_max_abs_log_ratio, 0.0, kHuge,
            "DFPO trust-region guard on |mean log ratio|; drops whole groups; 0 = off.");
  s->Bool("loss.std_normalize", &lo.std_normalize, "Divide advantages by std(R)+1e-6.");
  s->Enum("loss.normalizer", &lo.normalizer, {"tokens", "constant"}, "Loss normaliser Z.");
  s->Double("loss.kl_coef", &lo.kl_coef, 0.0, kHuge, "k3 KL coefficient; 0 = off.");
  s->Enum("loss.old_logprobs", &lo.old_logprobs, {"recompute", "behaviour"},
          "Log-probs the ratio is taken against.");
  s->Enum("loss.behaviour_weight", &lo.behaviour_weight, {"auto", "truncated", "none"},
          "Off-policy weight min(pi_prox/pi_behav, cap) per token; auto = truncated when "
          "learner.max_policy_lag > 0 with old_logprobs recompute, else none.");
  s->Double("loss.behaviour_weight_cap", &lo.behaviour_weight_cap, 1.0, kHuge,
            "Cap of the truncated behaviour weight.");

  BatchingConfig& b = c->batching;
  s->Enum("batching.reward_balance", &b.reward_balance, {"downsample", "pack", "none"},
          "Reward balancing mode.");
  s->Enum("batching.balance_unit", &b.balance_unit, {"count", "adv_mass", "tokens"},
          "What is balanced between positive and negative rollouts.");
  s->Bool("batching.recompute_advantage", &b.recompute_advantage,
          "Recompute advantages on the kept subset after downsampling.");
  s->Bool("batching.query_preserved", &b.query_preserved, "Whole groups per mini-batch.");
  s->Bool("batching.dynamic_sampling", &b.dynamic_sampling, "Drop all-equal-reward groups.");
  s->Int("batching.mini_batches", &b.mini_batches, 1, 1 << 20, "Optimizer steps per epoch.");
  s->Int("batching.epochs", &b.epochs, 1, 1000, "Epochs per update.");
  s->Int("batching.micro_batch_rollouts", &b.micro_batch_rollouts, 1, 1 << 20,
         "Rollouts per forward/backward.");

  OptimConfig& o = c->optim;
  s->Double("optim.lr", &o.lr, 0.0, 10.0, "AdamW learning rate.");
  s->Double("optim.beta1", &o.beta1, 0.0, 0.999999, "AdamW beta1.");
  s->Double("optim.beta2", &o.beta2, 0.0, 0.999999, "AdamW beta2.");
  s->Double("optim.eps", &o.eps, 1e-20, 1.0, "AdamW epsilon.");
  s->Double("optim.weight_decay", &o.weight_decay, 0.0, 10.0, "AdamW weight decay.");
  s->Double("optim.grad_clip", &o.grad_clip, 0.0, kHuge, "Grad-norm clip; 0 = off.");
  s->Int("optim.warmup_steps", &o.warmup_steps, 0, kBig, "Warm-up optimizer steps.");
  s->Enum("optim.schedule", &o.schedule, {"constant", "cosine"}, "LR schedule after warm-up.");
  s->Double("optim.min_lr_ratio", &o.min_lr_ratio, 0.0, 1.0, "Cosine floor fraction.");

  EvalConfig& e = c->eval;
  s->Int("eval.every", &e.every, 0, kBig, "Updates between evaluations; 0 = end only.");
  s->Int("eval.prompts", &e.prompts, 1, kBig, "Held-out prompts evaluated.");
  s->Int("eval.pass_k", &e.pass_k, 1, 1024, "k of pass@k.");
  s->Double("eval.pass_temperature", &e.pass_temperature, 1e-3, 100.0, "pass@k temperature.");
  s->Int("eval.base_prompts", &e.base_prompts, -1, kBig,
         "Held-out prompts of the base policy's evaluation before training; -1 = eval.prompts, "
         "0 = none.");
  s->Int("eval.base_pass_k", &e.base_pass_k, -1, 1024,
         "k of pass@k in the base evaluation; -1 = eval.pass_k, 0 = greedy only.");
  s->Int("eval.final_prompts", &e.final_prompts, -1, kBig,
         "Held-out prompts of the greedy evaluation at the last update; -1 = eval.prompts, "
         "0 = none.");

  RunSection& r = c->run;
  s->String("run.name", &r.name, "Run directory name under run.runs_dir.");
  s->String("run.runs_dir", &r.runs_dir, "Parent directory of runs.");
  s->Int("run.num_actors", &r.num_actors, 0, 1024, "Actor processes.");
  s->Int("run.learner_ranks", &r.learner_ranks, 1, 64, "Learner data-parallel ranks.");
  s->Int("run.total_updates", &r.total_updates, 0, kBig, "Learner updates to run.");
  s->Int64("run.seed", &r.seed, 0, kSeedMax, "Master seed.");
  s->Int("run.actor_threads", &r.actor_threads, 1, 256, "Threads per actor process.");
  s->String("run.learner_cpus", &r.learner_cpus,
            "CPUs the learner ranks are pinned to (\"0\", \"0-3,6\"); empty = not pinned.");
  s->String("run.actor_cpus", &r.actor_cpus,
            "CPUs the actors are pinned to (\"1\", \"4-7\"); empty = not pinned.");
}

absl::Status ValidateRunConfig(const RunConfig& c) {
  auto bad = [](absl::string_view key, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("config key '", key, "': ", why));
  };
  if (c.model.head_dim == 0 && c.model.d_model % c.model.n_heads != 0) {
    return bad("model.n_heads", absl::StrCat("must divide model.d_model (", c.model.d_model, ")"));
  }
  if (c.model.head_dim == 0 && (c.model.d_model / c.model.n_heads) % 2 != 0) {
    return bad("model.n_heads", "head dimension d_model/n_heads must be even for RoPE");
  }
  RETURN_IF_ERROR(ValidateModelConfig(c.model));
  RETURN_IF_ERROR(ParseDeviceSetting("learner.device", c.learner.device).status());
  RETURN_IF_ERROR(ParseDeviceSetting("actor.device", c.actor.device).status());
  RETURN_IF_ERROR(ParseDeviceSetting("pretrain.device", c.pretrain.device).status());
  if (c.task.min_digits > c.task.max_digits) {
    return bad("task.min_digits", "must be <= task.max_digits");
  }
  for (char op : c.task.ops) {
    if (op != '+' && op != '-' && op != '*') {
      return bad("task.ops", absl::StrCat("unsupported operator '", std::string(1, op),
                                          "'; expected characters from \"+-*\""));
    }
  }
  if (c.task.ops.empty()) return bad("task.ops", "must name at least one operator");
  if (!c.task.chat_template_kwargs.empty()) {
    if (c.task.prompt_format != "model") {
      return bad("task.chat_template_kwargs", "only task.prompt_format model uses it");
    }
    absl::StatusOr<nlohmann::ordered_json> kwargs =
        jinja::ParseTemplateKwargs(c.task.chat_template_kwargs);
    if (!kwargs.ok()) return bad("task.chat_template_kwargs", kwargs.status().message());
  }
  if (c.task.kind == "jsonl" && c.task.train_path.empty()) {
    return bad("task.train_path", "required when task.kind is jsonl");
  }
  if (c.actor.reconnect_initial_s > c.actor.reconnect_max_s) {
    return bad("actor.reconnect_initial_s", "must be <= actor.reconnect_max_s");
  }
  if (c.actor.kv_cache_tokens != 0 &&
      c.actor.kv_cache_tokens < int64_t{c.model.max_seq_len} + 2 * c.actor.kv_block_tokens) {
    return bad("actor.kv_cache_tokens",
               absl::StrCat("must hold one row of model.max_seq_len (", c.model.max_seq_len,
                            ") plus two blocks of actor.kv_block_tokens (", c.actor.kv_block_tokens,
                            "), or be 0 (auto)"));
  }
  if (c.learner.groups_per_update > c.learner.buffer_groups) {
    return bad("learner.groups_per_update", "must be <= learner.buffer_groups");
  }
  if (c.pretrain.stop_accuracy > 0 && c.task.kind == "arithmetic" &&
      c.pretrain.validation_prompts >= c.task.train_size) {
    return bad("pretrain.validation_prompts",
               absl::StrCat("must be < task.train_size (", c.task.train_size,
                            ") when pretrain.stop_accuracy is set"));
  }
  if (c.task.kind == "jsonl" && !c.task.heldout_path.empty() && c.task.heldout_fraction > 0) {
    return bad("task.heldout_fraction", "set together with task.heldout_path; use one of them");
  }
  if (c.task.kind != "jsonl" && c.eval.prompts > c.task.heldout_size) {
    return bad("eval.prompts", "must be <= task.heldout_size");
  }
  if (c.task.kind != "jsonl" && c.eval.base_prompts > c.task.heldout_size) {
    return bad("eval.base_prompts", "must be <= task.heldout_size");
  }
  if (c.task.kind != "jsonl" && c.eval.final_prompts > c.task.heldout_size) {
    return bad("eval.final_prompts", "must be <= task.heldout_size");
  }
  if (c.learner.max_awaiting_hello_per_peer > c.learner.max_awaiting_hello) {
    return bad("learner.max_awaiting_hello_per_peer", "must be <= learner.max_awaiting_hello");
  }
  return absl::OkStatus();
}

int BaseEvalPrompts(const EvalConfig& eval) {
  return eval.base_prompts >= 0 ? eval.base_prompts : eval.prompts;
}
int BaseEvalPassK(const EvalConfig& eval) {
  return eval.base_pass_k >= 0 ? eval.base_pass_k : eval.pass_k;
}
int FinalEvalPrompts(const EvalConfig& eval) {
  return eval.final_prompts >= 0 ? eval.final_prompts : eval.prompts;
}

absl::Status ValidateModelConfig(const ModelConfig& m) {
  auto bad = [](absl::string_view key, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("config key '", key, "': ", why));
  };
  if (m.n_heads < 1) return bad("model.n_heads", "must be >= 1");
  if (m.head_dim == 0 && m.d_model % m.n_heads != 0) {
    return bad("model.n_heads", absl::StrCat("must divide model.d_model (", m.d_model, ")"));
  }
  const int head_dim = m.head_dim != 0 ? m.head_dim : m.d_model / m.n_heads;
  if (head_dim % 2 != 0) return bad("model.head_dim", "the head dimension must be even for RoPE");
  if (m.n_kv_heads < 0 || (m.n_kv_heads > 0 && m.n_heads % m.n_kv_heads != 0)) {
    return bad("model.n_kv_heads", absl::StrCat("must divide model.n_heads (", m.n_heads, ")"));
  }
  if (m.arch == "builtin") {
    // The built-in model has one fixed layout (fused qkv, tied, no biases).
    if (m.n_kv_heads != 0 && m.n_kv_heads != m.n_heads) {
      return bad("model.n_kv_heads", "grouped-query attention needs an HF architecture");
    }
    if (m.head_dim != 0 && m.head_dim * m.n_heads != m.d_model) {
      return bad("model.head_dim", "the built-in model uses d_model / n_heads");
    }
    if (m.qkv_bias || m.o_bias || m.mlp_bias) {
      return bad(m.qkv_bias ? "model.qkv_bias"
                 : m.o_bias ? "model.o_bias"
                            : "model.mlp_bias",
                 "the built-in model has no biases");
    }
    if (m.qk_norm) return bad("model.qk_norm", "needs an HF architecture");
    if (!m.tie_embeddings) return bad("model.tie_embeddings", "the built-in model is tied");
    if (!m.rope_scaling.empty()) return bad("model.rope_scaling", "needs an HF architecture");
  } else if (m.arch != "llama" && m.arch != "qwen2" && m.arch != "qwen3") {
    return bad("model.arch", "must be builtin, llama, qwen2 or qwen3");
  }
  if (m.rope_scaling == "llama3") {
    if (m.rope_factor <= 0) return bad("model.rope_factor", "must be > 0");
    if (m.rope_high_freq_factor <= m.rope_low_freq_factor) {
      return bad("model.rope_high_freq_factor", "must be > model.rope_low_freq_factor");
    }
  } else if (!m.rope_scaling.empty()) {
    return bad("model.rope_scaling", "must be empty or llama3");
  }
  if (m.vocab_size < 0) return bad("model.vocab_size", "must be >= 0");
  return absl::OkStatus();
}

absl::StatusOr<DeviceSetting> ParseDeviceSetting(absl::string_view key, absl::string_view value) {
  const absl::string_view original = value;
  DeviceSetting out;
  if (value == "auto") return out;
  if (value == "cpu") {
    out.kind = DeviceSetting::Kind::kCpu;
    return out;
  }
  out.kind = DeviceSetting::Kind::kCuda;
  if (value == "cuda") return out;
  int index = -1;
  if (absl::ConsumePrefix(&value, "cuda:") && !value.empty() && value.size() <= 4 &&
      std::all_of(value.begin(), value.end(), absl::ascii_isdigit) &&
      absl::SimpleAtoi(value, &index)) {
    out.index = index;
    return out;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "config key '", key, "': expected auto, cpu, cuda or cuda:N (N >= 0), got '", original, "'"));
}

absl::StatusOr<RunConfig> LoadRunConfig(const std::string& path,
                                        const std::vector<std::string>& overrides) {
  RunConfig config;
  ConfigSchema schema;
  DescribeRunConfig(&config, &schema);
  if (!path.empty()) {
    std::ifstream in(path);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot open config file '", path, "'"));
    std::stringstream ss;
    ss << in.rdbuf();
    RETURN_IF_ERROR(schema.ApplyYaml(ss.str(), path));
  }
  for (const auto& o : overrides) RETURN_IF_ERROR(schema.ApplyOverride(o));
  RETURN_IF_ERROR(ValidateRunConfig(config));
  ResolveBehaviourWeight(&config);
  return config;
}

void ResolveBehaviourWeight(RunConfig* c) {
  if (c->loss.behaviour_weight != "auto") return;
  const bool stale_data = c->learner.max_policy_lag > 0 && c->loss.old_logprobs == "recompute";
  c->loss.behaviour_weight = stale_data ? "truncated" : "none";
}

std::string RunConfigToYaml(const RunConfig& config) {
  RunConfig copy = config;
  ConfigSchema schema;
  DescribeRunConfig(&copy, &schema);
  return schema.ToYaml();
}

}  // namespace rlvr
