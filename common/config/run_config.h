// The run configuration: every section of an rlvr job, with defaults.
//
// These are plain structs, free of torch and gRPC, so that every library can
// take the section it needs. `services/` loads a RunConfig from YAML (strictly:
// see ConfigSchema) plus `--set key=value` overrides, and passes sections to
// the libraries' Options. Defaults marked [D] are derived choices documented in
// docs/algorithms.md.
#ifndef RLVR_COMMON_CONFIG_RUN_CONFIG_H_
#define RLVR_COMMON_CONFIG_RUN_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/config/config_schema.h"

namespace rlvr {

// The decoder-only transformer's shape. vocab_size comes from the tokenizer.
struct ModelConfig {
  int d_model = 128;            // Residual width.
  int n_layers = 2;             // Transformer blocks.
  int n_heads = 4;              // Attention heads; d_model % n_heads == 0.
  int d_ff = 384;               // SwiGLU hidden width.
  int max_seq_len = 48;         // Prompt + completion tokens, upper bound.
  double rope_theta = 10000.0;  // RoPE base.
  double init_std = 0.02;       // Normal init std of linear and embedding weights.
  // Hugging Face architectures (docs/policy.md "Hugging Face models"). With
  // hf_path set, the shape fields above and below are read from
  // <hf_path>/config.json (common/policy/hf_config.h) and the weights from its
  // safetensors files; with hf_path empty and arch != builtin, a randomly
  // initialised model of that architecture and these dimensions is built.
  std::string hf_path = "";            // A Hugging Face model directory; empty = not one.
  std::string arch = "builtin";        // builtin | llama | qwen2 | qwen3
  int n_kv_heads = 0;                  // Key/value heads (GQA); 0 = n_heads.
  int head_dim = 0;                    // Per-head width; 0 = d_model / n_heads.
  bool qkv_bias = false;               // Biases on the q, k and v projections.
  bool o_bias = false;                 // Bias on the attention output projection.
  bool mlp_bias = false;               // Biases on gate, up and down projections.
  bool qk_norm = false;                // Per-head RMSNorm of queries and keys before RoPE (Qwen3).
  bool tie_embeddings = true;          // Output projection = input embedding.
  double rms_norm_eps = 1e-6;          // RMSNorm epsilon.
  std::string rope_scaling = "";       // "" (none) | llama3
  double rope_factor = 8.0;            // llama3: frequency divisor for long wavelengths.
  double rope_low_freq_factor = 1.0;   // llama3: low-frequency boundary factor.
  double rope_high_freq_factor = 4.0;  // llama3: high-frequency boundary factor.
  int rope_original_max_position = 8192;  // llama3: original context length.
  int vocab_size = 0;                     // 0 = the tokenizer's; HF: config.json's vocab_size.
  // The dtype forward passes compute in (common/policy/placement.h): auto
  // (bfloat16 on CUDA, float32 on CPU) | float32 | bfloat16. Trained
  // parameters and optimizer state stay float32 either way.
  std::string compute_dtype = "auto";
};

// Which task supplies prompts and verifies answers.
struct TaskConfig {
  std::string kind = "arithmetic";  // arithmetic | jsonl
  // arithmetic: operators drawn per term from this set of characters.
  std::string ops = "+";
  int min_digits = 1;      // Digits of each operand, lower bound.
  int max_digits = 2;      // Digits of each operand, upper bound.
  int num_terms = 2;       // Operands per expression (2 = "a+b", 3 = "a+b*c").
  int train_size = 4000;   // Distinct training prompts.
  int heldout_size = 400;  // Held-out prompts, disjoint from training ones.
  int64_t seed = 1234;     // Dataset generation seed.
  // jsonl: files of one JSON object per line (docs/tasks.md).
  std::string train_path;
  std::string heldout_path;
  // Prompt format and verifier (docs/tasks.md), for every kind.
  std::string prompt_format = "raw";  // raw | chatml | llama3 | model | a template with {question}
  std::string system_prompt;          // Chat formats / templates with {system}; "" = none.
  // model: extra chat template variables, "name=value, ..." (e.g.
  // "enable_thinking=false"); "" = none.
  std::string chat_template_kwargs;
  std::string verifier = "final_answer";  // final_answer | gsm8k | boxed | exact | math
  double format_reward = 0.0;             // Reward of a wrong but well-formed answer, [0, 1).
  // math: relative tolerance of a decimal against an exact or irrational value.
  double math_relative_tolerance = 1e-6;
  // jsonl: field names, and a held-out split cut from train_path.
  std::string question_field = "question";
  std::string answer_field = "answer";
  std::string id_field;           // "" = ids are "<file name>:<line>".
  double heldout_fraction = 0.0;  // Without heldout_path: fraction held out, by seed.
};

// Supervised warm start (`rlvr pretrain`).
struct PretrainConfig {
  std::string checkpoint = "runs/base/base.rlvrw";  // Output weight blob.
  int steps = 300;                                  // Optimizer steps.
  int batch_size = 64;                              // Sequences per step.
  double lr = 3e-3;                                 // Peak learning rate.
  int warmup_steps = 30;                            // Linear warm-up steps, then cosine decay.
  double min_lr_ratio = 0.1;                        // Final LR as a fraction of the peak.
  double weight_decay = 0.01;
  double grad_clip = 1.0;  // Global grad-norm clip; 0 disables.
  // Fraction of training prompts used for pretraining (the rest only in RL),
  // which keeps the base model's accuracy below the ceiling.
  double data_fraction = 1.0;
  int64_t seed = 7;
  // Stop as soon as the greedy accuracy on the validation prompts reaches
  // this (checked every validate_every steps); 0 = run all `steps`. The
  // point at which a small model "gets" the task varies a lot with the seed
  // and the machine's float rounding, so a fixed step count gives bases from
  // 15% to 85%; stopping at an accuracy gives the same starting point for RL.
  double stop_accuracy = 0.0;
  // With stop_accuracy > 0: the last validation_prompts prompts of the
  // training split are held out of pretraining and used for the check (the
  // task's held-out split is never looked at). RL still trains on them.
  int validation_prompts = 200;
  int validate_every = 25;  // Steps between checks.
  // Where `rlvr pretrain` trains: auto | cpu | cuda | cuda:N
  // (common/policy/placement.h; auto = cuda:0 when CUDA is available).
  std::string device = "auto";
};

// How actors sample (copied into every lease).
struct SamplingConfig {
  double temperature = 1.0;
  int top_k = 0;           // 0 = off.
  double top_p = 1.0;      // 1 = off.
  int max_new_tokens = 8;  // Completion length cap, stop token included.
};

struct ActorConfig {
  // Leases held at once, generating or waiting for a slot (capacity in
  // Hello); static batching generates them together.
  int max_batch_prompts = 16;
  // How generation batches rows: continuous (the engine: slots refilled as
  // rows finish, one prompt pass per group, a fixed KV pool) | static (one
  // policy::Generate per batch of leases, every row stepped until the
  // longest finishes).
  std::string engine = "continuous";
  int max_batch_rows = 64;  // continuous: rows decoded together (slots).
  // continuous: KV pool size in positions (prompt + completion tokens held
  // at once); 0 = max_batch_rows x model.max_seq_len (every slot can hold a
  // full-length row).
  int64_t kv_cache_tokens = 0;
  int kv_block_tokens = 16;           // continuous: positions per KV block.
  int threads = 1;                    // Intra-op threads for the actor's model.
  double reconnect_initial_s = 0.2;   // First reconnect backoff, seconds.
  double reconnect_max_s = 5.0;       // Backoff ceiling, seconds.
  double shutdown_deadline_s = 10.0;  // SIGTERM: finish or abandon within this.
  // Where the generation model lives: auto | cpu | cuda | cuda:N
  // (common/policy/placement.h; auto = cuda:0 when CUDA is available).
  std::string device = "auto";
};

struct LearnerConfig {
  int group_size = 8;             // G completions per prompt (the learner's leases ask for G).
  int max_policy_lag = 1;         // Groups older than version - lag are dropped. 0 = on-policy.
  int buffer_groups = 64;         // Rollout buffer capacity in groups (credits).
  int groups_per_update = 32;     // Complete groups consumed by one update (one new version).
  double lease_timeout_s = 60.0;  // Lease deadline; expired leases are re-queued.
  int checkpoint_every = 10;      // Updates between checkpoints; 0 = only at exit.
  int keep_checkpoints = 3;       // Checkpoints kept (K).
  int threads = 1;                // Intra-op threads per rank.
  double collective_timeout_s = 120.0;   // A rank that hangs longer fails the others.
  int64_t max_message_bytes = 16 << 20;  // Largest ActorMessage accepted.
  int max_sessions = 256;                // Concurrent sessions (streams that said Hello).
  // Groups per second one session may submit that answer none of its live
  // leases (token bucket, burst of one second's worth); over-limit ones are
  // rejected RATE_LIMITED. Groups for live leases are never metered: the
  // leases pace them. 0 = off.
  double max_groups_per_s = 200.0;
  // Bytes of accepted groups waiting for training; a group that would exceed
  // it is rejected UNAVAILABLE (its lease re-queued).
  int64_t buffer_bytes = 512LL << 20;
  int64_t seed = 1;  // Lease order, sampling seeds, batcher shuffles.
  // The front door (docs/reliability.md, "Integrating your own actor").
  // A stream must send Hello within this time, else it is closed
  // DEADLINE_EXCEEDED. Streams waiting for Hello do not count against
  // max_sessions: they have a pool of their own, bounded per peer address
  // (docs/reliability.md, "The front door").
  double hello_timeout_s = 10.0;
  // Streams awaiting Hello, all peers together. When full, a stream from a
  // peer holding fewer of them displaces the oldest stream of the peer
  // holding the most; otherwise it is refused RESOURCE_EXHAUSTED.
  int max_awaiting_hello = 64;
  // Streams awaiting Hello from one peer address (IP, without the port);
  // more are refused RESOURCE_EXHAUSTED.
  int max_awaiting_hello_per_peer = 8;
  // Hello.capacity is clamped to this (advertised in Welcome.max_capacity).
  int max_session_capacity = 1024;
  // A session whose leases expire without an answer gets no new leases
  // until it sends a group; after this many consecutive expired leases it
  // is closed (UNAVAILABLE). 0 = never closed for expiries.
  int lease_expiries_to_close = 8;
  // Server keepalive: a connection silent this long is pinged and closed if
  // the ping is not acknowledged within keepalive_timeout_s. 0 = no pings.
  double keepalive_time_s = 30.0;
  double keepalive_timeout_s = 10.0;
  // Where the trained model lives: auto | cpu | cuda | cuda:N
  // (common/policy/placement.h; auto and cuda = cuda:(rank % devices) when
  // CUDA is available).
  std::string device = "auto";
};

// The estimator (ALGORITHMS.md).
struct LossConfig {
  // A registered estimator's name (learner/core/estimators; checked by the
  // learner's ParsedEstimator, not by LoadRunConfig).
  std::string estimator = "dfpo";
  std::string dfpo_transform = "min_replace";  // min_replace | adv_orthogonal
  double clip_eps = 0.2;                // Symmetric clip (dfpo, grpo, dr_grpo; gspo uses gspo_eps).
  double clip_eps_high = 0.28;          // dapo's upper clip.
  double gspo_eps = 4e-4;               // gspo's sequence-ratio clip.
  double dfpo_max_abs_log_ratio = 0.0;  // [D] Trust-region guard; 0 = off. Drops whole groups.
  bool std_normalize = false;           // [D] Divide advantages by std(R)+1e-6.
  std::string normalizer = "tokens";    // [D] tokens | constant (max_new_tokens x rollouts).
  double kl_coef = 0.0;                 // k3 KL to the reference (pretrained) policy; 0 = off.
  std::string old_logprobs = "recompute";  // recompute | behaviour
  // [D] Off-policy correction (docs/algorithms.md "Behaviour weights"): with
  // `truncated`, each completion token's loss term is weighted by
  // min(pi_prox / pi_behav, behaviour_weight_cap), without gradient, where
  // pi_prox is the recomputed policy of the update's start and pi_behav the
  // actor's (needs old_logprobs = recompute). auto | truncated | none.
  // LoadRunConfig resolves `auto`: truncated when learner.max_policy_lag > 0
  // and old_logprobs = recompute, none otherwise; a LossConfig built in code
  // (no lag known) treats auto as none.
  std::string behaviour_weight = "auto";
  double behaviour_weight_cap = 2.0;  // >= 1.
};

struct BatchingConfig {
  std::string reward_balance = "downsample";  // [D] downsample | pack | none
  std::string balance_unit = "count";         // [D] count | adv_mass | tokens
  bool recompute_advantage = true;  // [D] Recompute A on the kept subset after downsample.
  bool query_preserved = true;      // Whole groups per mini-batch (false: shuffle rollouts).
  bool dynamic_sampling = true;     // Drop all-equal-reward groups (counted).
  int mini_batches = 1;             // Optimizer steps per epoch of an update.
  int epochs = 1;                   // Passes over the update's groups.
  int micro_batch_rollouts = 64;    // Rollouts per forward/backward (memory only).
};

struct OptimConfig {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.99;
  double eps = 1e-8;
  double weight_decay = 0.0;
  double grad_clip = 1.0;             // Global grad-norm clip; 0 disables.
  int warmup_steps = 0;               // Linear warm-up, in optimizer steps.
  std::string schedule = "constant";  // constant | cosine
  double min_lr_ratio = 0.1;          // cosine: final LR fraction.
};

struct EvalConfig {
  int every = 10;                 // Updates between held-out evaluations; 0 = none in between.
  int prompts = 200;              // Held-out prompts evaluated (<= task.heldout_size).
  int pass_k = 4;                 // k of pass@k.
  double pass_temperature = 1.0;  // Sampling temperature for pass@k.
  // The base policy's evaluation before training (`rlvr run`, base_eval.json):
  // held-out prompts, -1 = `prompts`, 0 = no base evaluation; and its k of
  // pass@k, -1 = `pass_k`, 0 = greedy only.
  int base_prompts = -1;
  int base_pass_k = -1;
  // The greedy evaluation at the last update: held-out prompts, -1 =
  // `prompts`, 0 = none.
  int final_prompts = -1;
};

// eval.base_prompts / eval.final_prompts / eval.base_pass_k with -1 resolved.
int BaseEvalPrompts(const EvalConfig& eval);
int BaseEvalPassK(const EvalConfig& eval);
int FinalEvalPrompts(const EvalConfig& eval);

// The embedded default job (`rlvr run`).
struct RunSection {
  std::string name = "default";   // Run directory runs/<name>/.
  std::string runs_dir = "runs";  // Parent of run directories.
  int num_actors = 2;             // Actor child processes.
  int learner_ranks = 1;          // Learner processes (data-parallel world size).
  int total_updates = 60;         // Learner updates to run.
  int64_t seed = 1;               // Master seed.
  int actor_threads = 1;          // Threads per actor process.
  // CPUs the learner ranks / the actors are pinned to, in the kernel's list
  // notation ("0", "1-3", "0,2"); empty: not pinned (the runner's own set).
  std::string learner_cpus;
  std::string actor_cpus;
};

struct RunConfig {
  ModelConfig model;
  TaskConfig task;
  PretrainConfig pretrain;
  SamplingConfig sampling;
  ActorConfig actor;
  LearnerConfig learner;
  LossConfig loss;
  BatchingConfig batching;
  OptimConfig optim;
  EvalConfig eval;
  RunSection run;
};

// Registers every field of `config` in `schema` (pointers into `config`).
void DescribeRunConfig(RunConfig* config, ConfigSchema* schema);

// Checks relations between fields (d_model % n_heads, digits ordering, ...).
absl::Status ValidateRunConfig(const RunConfig& config);

// The model section's own checks (head dimension, GQA divisibility, what
// the built-in layout allows, llama3 RoPE parameters); part of
// ValidateRunConfig, and used on configs read from config.json.
absl::Status ValidateModelConfig(const ModelConfig& model);

// A parsed learner.device / actor.device value: auto, cpu, cuda or cuda:N.
struct DeviceSetting {
  enum class Kind { kAuto, kCpu, kCuda };
  Kind kind = Kind::kAuto;
  int index = -1;  // N of cuda:N; -1 for plain cuda (and auto, cpu).
};
// InvalidArgument naming `key` for anything else (part of ValidateRunConfig;
// whether the device exists is checked where the model is placed).
absl::StatusOr<DeviceSetting> ParseDeviceSetting(absl::string_view key, absl::string_view value);

// Loads defaults, then `path` (if non-empty), then each "key=value" override,
// then validates, then resolves the automatic settings
// (ResolveBehaviourWeight). Errors name the file and key path. loss.estimator is not
// checked here (the estimators register themselves in learner/core, which
// common/ does not see): the learner checks it when it parses the loss, and
// the `rlvr` commands right after loading (services/load_config.h).
absl::StatusOr<RunConfig> LoadRunConfig(const std::string& path,
                                        const std::vector<std::string>& overrides);

// loss.behaviour_weight `auto` -> `truncated` when learner.max_policy_lag > 0
// and loss.old_logprobs is recompute (the learner trains on groups sampled by
// an older policy), else `none`; any other value is left as it is.
void ResolveBehaviourWeight(RunConfig* config);

// The resolved config as YAML (loadable by LoadRunConfig).
std::string RunConfigToYaml(const RunConfig& config);

}  // namespace rlvr

#endif  // RLVR_COMMON_CONFIG_RUN_CONFIG_H_
