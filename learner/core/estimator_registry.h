// The estimator registry and the parsed estimator (docs/algorithms.md,
// "Adding an estimator").
//
// Every estimator lives in its own file under learner/core/estimators/ and
// registers itself there, at static initialisation, with its name, its traits
// (the questions the batcher asks: advantage normalisation, dynamic sampling,
// the loss normaliser Z) and a factory for its loss (estimator.h). Nothing
// outside that folder names a specific estimator: the batcher, the step and
// the trainer ask a ParsedEstimator, built once from the LossConfig when a run
// starts.
//
// Linking: a binary sees the estimators it links. learner/core/estimators
// builds them into `rlvr_estimators`, which links its archive whole
// (registrations are otherwise dropped by the linker); link that target, not
// the archive. In a binary without it every name is unknown ("expected one of
// {}").
//
// Torch-free (the loss is forward-declared). Thread safety: registration
// happens during static initialisation; lookups are thread-safe; a
// ParsedEstimator is immutable and thread-compatible (its loss is const).
#ifndef RLVR_LEARNER_CORE_ESTIMATOR_REGISTRY_H_
#define RLVR_LEARNER_CORE_ESTIMATOR_REGISTRY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/config/run_config.h"

namespace rlvr::learner {

class Estimator;  // learner/core/estimator.h

// How the loss normaliser Z of an optimizer step is chosen (docs/algorithms.md
// "The normaliser Z"). Z is at least 1 whatever the rule.
enum class StepNormalizerRule {
  kTokens,      // Completion tokens of the step's kept rollouts.
  kConstant,    // max_new_tokens x the step's kept rollouts.
  kGroups,      // Groups in the step (the estimator applies each group's 1/G_g).
  kConfigured,  // loss.normalizer: "tokens" -> kTokens, "constant" -> kConstant.
};

// What the batcher needs to know about an estimator besides its loss.
struct EstimatorTraits {
  // true: advantages are always (R - mean) / (std + 1e-6) (the method's
  // definition); false: only with loss.std_normalize.
  bool std_normalized_advantages = false;
  // true: zero-variance groups are always dropped (the method includes
  // dynamic sampling), whatever batching.dynamic_sampling says.
  bool dynamic_sampling = false;
  StepNormalizerRule normalizer = StepNormalizerRule::kConfigured;
};

// Builds the estimator's loss from the loss config (its own knobs, e.g. clip
// epsilons); InvalidArgument for values it cannot use. Called after the
// generic checks of ParsedEstimator::Parse (epsilons and kl_coef >= 0). A
// function or a lambda (a family of estimators registers one per member:
// RegisterPpoClipEstimator in estimators/ppo_clip.h).
using EstimatorFactory =
    std::function<absl::StatusOr<std::unique_ptr<Estimator>>(const LossConfig& loss)>;

struct EstimatorDefinition {
  std::string name;  // The loss.estimator value; non-empty, unique.
  EstimatorTraits traits;
  EstimatorFactory make;  // Non-null.
};

// Adds `definition` to the registry. Meant for a namespace-scope initialiser
// in the estimator's own file:
//   [[maybe_unused]] const bool kRegistered = RegisterEstimator({...});
// Aborts the process (at start-up) on an empty or duplicate name or a null
// factory: those are programming errors. Returns true.
bool RegisterEstimator(EstimatorDefinition definition);

// The definition registered under `name`, or null. The pointer stays valid
// for the life of the process.
const EstimatorDefinition* FindEstimator(absl::string_view name);

// Every registered name, sorted.
std::vector<std::string> RegisteredEstimatorNames();

// OK when loss.estimator names a registered estimator; otherwise
// InvalidArgument naming the key and listing the registered names, in the
// config loader's words ("config key 'loss.estimator': expected one of {...},
// got 'x'").
absl::Status CheckEstimatorName(const std::string& name);

// The loss config, checked and resolved once: every question the batcher and
// the step ask about the estimator, and the estimator's loss itself. Cheap to
// copy (the loss is shared and immutable).
class ParsedEstimator {
 public:
  // Checks `loss` (registered estimator name, loss.normalizer,
  // loss.old_logprobs, epsilons and kl_coef >= 0, then the estimator's own
  // factory) and builds the loss. InvalidArgument naming the key otherwise.
  static absl::StatusOr<ParsedEstimator> Parse(const LossConfig& loss);

  const std::string& name() const { return definition_->name; }
  const EstimatorTraits& traits() const { return definition_->traits; }
  // The config this was parsed from (old_logprobs, kl_coef, ...).
  const LossConfig& config() const { return config_; }

  // Whether advantages are divided by std(R) + 1e-6: the estimator's
  // definition, or loss.std_normalize.
  bool std_normalized_advantages() const {
    return traits().std_normalized_advantages || config_.std_normalize;
  }
  // Whether the estimator itself drops zero-variance groups (in addition to
  // batching.dynamic_sampling).
  bool implies_dynamic_sampling() const { return traits().dynamic_sampling; }
  // kTokens, kConstant or kGroups (kConfigured is resolved by Parse).
  StepNormalizerRule normalizer_rule() const { return normalizer_; }
  // Z for a step with these counts (>= 1).
  double StepNormalizer(int64_t groups, int64_t rollouts, int64_t tokens, int max_new_tokens) const;

  // The loss. Valid while any copy of this object lives.
  const Estimator& loss() const { return *loss_; }

 private:
  ParsedEstimator(const EstimatorDefinition* definition, LossConfig config,
                  StepNormalizerRule normalizer, std::shared_ptr<const Estimator> loss)
      : definition_(definition),
        config_(std::move(config)),
        normalizer_(normalizer),
        loss_(std::move(loss)) {}

  const EstimatorDefinition* definition_;
  LossConfig config_;
  StepNormalizerRule normalizer_;
  std::shared_ptr<const Estimator> loss_;
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_CORE_ESTIMATOR_REGISTRY_H_
