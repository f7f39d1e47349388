#include "learner/core/estimator_registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "learner/core/estimator.h"

namespace rlvr::learner {
namespace {

struct Registry {
  absl::Mutex mu;
  // Nodes of a std::map never move: FindEstimator hands out pointers to them.
  std::map<std::string, EstimatorDefinition> definitions ABSL_GUARDED_BY(mu);
};

// Constructed on first use, so that registrations from any translation unit's
// static initialisers find it; never destroyed.
Registry& GetRegistry() {
  static Registry* registry = new Registry;
  return *registry;
}

[[noreturn]] void RegistrationError(const std::string& what) {
  std::fprintf(stderr, "rlvr: bad estimator registration: %s\n", what.c_str());
  std::abort();
}

absl::Status KeyError(absl::string_view key, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("config key '", key, "': ", what));
}

}  // namespace

bool RegisterEstimator(EstimatorDefinition definition) {
  if (definition.name.empty()) RegistrationError("empty name");
  if (definition.make == nullptr) RegistrationError(definition.name + ": null factory");
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  const std::string name = definition.name;
  if (!r.definitions.emplace(name, std::move(definition)).second) {
    RegistrationError(name + ": registered twice");
  }
  return true;
}

const EstimatorDefinition* FindEstimator(absl::string_view name) {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  auto it = r.definitions.find(std::string(name));
  return it == r.definitions.end() ? nullptr : &it->second;
}

std::vector<std::string> RegisteredEstimatorNames() {
  Registry& r = GetRegistry();
  absl::MutexLock lock(&r.mu);
  std::vector<std::string> names;
  for (const auto& [name, definition] : r.definitions) names.push_back(name);
  return names;  // Sorted: map order.
}

absl::Status CheckEstimatorName(const std::string& name) {
  if (FindEstimator(name) != nullptr) return absl::OkStatus();
  return KeyError("loss.estimator",
                  absl::StrCat("expected one of {", absl::StrJoin(RegisteredEstimatorNames(), ", "),
                               "}, got '", name, "'"));
}

absl::StatusOr<ParsedEstimator> ParsedEstimator::Parse(const LossConfig& loss) {
  absl::Status known = CheckEstimatorName(loss.estimator);
  if (!known.ok()) return known;
  const EstimatorDefinition* definition = FindEstimator(loss.estimator);
  StepNormalizerRule normalizer = definition->traits.normalizer;
  if (loss.normalizer != "tokens" && loss.normalizer != "constant") {
    return KeyError("loss.normalizer", absl::StrCat("expected one of {tokens, constant}, got '",
                                                    loss.normalizer, "'"));
  }
  if (normalizer == StepNormalizerRule::kConfigured) {
    normalizer =
        loss.normalizer == "constant" ? StepNormalizerRule::kConstant : StepNormalizerRule::kTokens;
  }
  if (loss.old_logprobs != "recompute" && loss.old_logprobs != "behaviour") {
    return KeyError(
        "loss.old_logprobs",
        absl::StrCat("expected one of {recompute, behaviour}, got '", loss.old_logprobs, "'"));
  }
  if (loss.behaviour_weight != "auto" && loss.behaviour_weight != "truncated" &&
      loss.behaviour_weight != "none") {
    return KeyError(
        "loss.behaviour_weight",
        absl::StrCat("expected one of {auto, truncated, none}, got '", loss.behaviour_weight, "'"));
  }
  if (!(loss.behaviour_weight_cap >= 1.0)) {
    return KeyError("loss.behaviour_weight_cap",
                    absl::StrCat("expected a cap >= 1, got ", loss.behaviour_weight_cap));
  }
  if (loss.behaviour_weight == "truncated" && loss.old_logprobs == "behaviour") {
    return KeyError("loss.behaviour_weight",
                    "truncated weighs by pi_prox / pi_behav, which needs loss.old_logprobs = "
                    "recompute (with behaviour the proximal policy is the behaviour policy)");
  }
  absl::StatusOr<std::unique_ptr<Estimator>> made = MakeEstimator(loss);
  if (!made.ok()) return made.status();
  return ParsedEstimator(definition, loss, normalizer,
                         std::shared_ptr<const Estimator>(std::move(*made)));
}

double ParsedEstimator::StepNormalizer(int64_t groups, int64_t rollouts, int64_t tokens,
                                       int max_new_tokens) const {
  double z = 1.0;
  switch (normalizer_) {
    case StepNormalizerRule::kGroups:
      z = static_cast<double>(groups);
      break;
    case StepNormalizerRule::kConstant:
      z = static_cast<double>(max_new_tokens) * static_cast<double>(rollouts);
      break;
    case StepNormalizerRule::kTokens:
    case StepNormalizerRule::kConfigured:  // Resolved by Parse; tokens is its default.
      z = static_cast<double>(tokens);
      break;
  }
  return std::max(z, 1.0);
}

}  // namespace rlvr::learner
