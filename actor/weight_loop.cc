// The weight thread of ActorImpl (actor/actor_impl.h).
//
// Contract: one WeightService.WatchWeights call after another until Stop,
// asking for versions newer than the newest held. Each complete, checked blob
// is loaded here (never on a gRPC thread) into the model slot ModelSlots
// hands out, which no generation holds, and staged for the generation thread.
// A corrupt, partial or unloadable transfer is discarded, counted and
// retried after a backoff (cut short when the learner announces a version we
// lack); generation meanwhile goes on with the weights it holds.
#include <glog/logging.h>
#include <torch/torch.h>

#include <algorithm>
#include <exception>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "actor/actor_impl.h"
#include "actor/weight_assembler.h"
#include "actor/weight_stream.h"
#include "common/net/auth.h"
#include "common/policy/factory.h"
#include "common/policy/weights.h"

namespace rlvr::actor {

policy::Transformer ActorImpl::NewModel() const {
  if (placement_.is_default()) {
    return policy::Transformer(options_.model, vocab_size_, /*init_seed=*/std::nullopt);
  }
  // On the device, in the compute dtype; LoadWeights converts the learner's
  // float32 blobs into it.
  absl::StatusOr<policy::Transformer> model = policy::CreateEmptyPolicy(
      options_.model, vocab_size_, placement_, policy::PolicyUse::kInference);
  if (!model.ok()) throw std::runtime_error(std::string(model.status().message()));
  return *std::move(model);
}

void ActorImpl::WeightLoop() {
  int failures = 0;
  // One assembler for the actor's lifetime: the buffer of each version is
  // reused by the next, across reconnects too. Its first buffer is faulted in
  // now, while there are no weights to wait for anyway, so that the first
  // version is received as fast as the later ones.
  WeightAssembler assembler;
  assembler.Reserve(policy::WeightsBlobBytes(options_.model, vocab_size_));
  // Likewise the model the first version is loaded into.
  try {
    torch::NoGradGuard no_grad;
    policy::Transformer first = NewModel();
    absl::MutexLock lock(&mu_);
    const int slot = slots_.AdoptBuilt();
    if (slot >= 0) models_[slot] = first;
  } catch (const std::exception& e) {
    LOG(WARNING) << "could not build a model ahead of the first weights: " << e.what();
  }
  while (true) {
    auto ctx = std::make_shared<grpc::ClientContext>();
    rlvr::v1::WatchWeightsRequest request;
    {
      absl::MutexLock lock(&mu_);
      if (stop_) break;
      weight_ctx_ = ctx;
      request.set_have_version(slots_.newest_version());
    }
    request.set_watcher_id(options_.actor_id);
    AttachToken(ctx.get(), options_.auth_token);
    // Chunks are checked and assembled on gRPC's threads; each complete
    // blob is installed here (model code stays off those threads).
    WeightStream stream(weight_channel_.get(), ctx.get(), request, &assembler);
    bool failed = false;
    bool installed = false;
    WeightStream::Event event = stream.Next();
    for (; event.kind == WeightStream::Event::kBlob; event = stream.Next()) {
      absl::Status status = InstallBlob(event.blob, event.version);
      if (status.ok()) {
        metrics_.weight_sync_seconds.Observe(
            absl::ToDoubleSeconds(absl::Now() - event.first_chunk));
        installed = true;
      } else {
        LOG(WARNING) << "discarding weight transfer of version " << event.version << ": " << status;
        failed = true;
        ctx->TryCancel();
      }
      // The weights are copied into the model: the next version reuses the buffer.
      stream.Resume(std::move(event.blob));
    }
    if (!event.transfer_error.ok()) {
      LOG(WARNING) << "discarding weight transfer of version " << event.chunk_version << ": "
                   << event.transfer_error;
      failed = true;
    } else if (!failed && event.mid_transfer) {
      LOG(WARNING) << "weight stream ended mid-transfer of version " << assembler.version();
      failed = true;
    }
    if (failed) metrics_.weight_sync_failures.Increment();
    failures = (installed && !failed) ? 1 : failures + 1;
    const absl::Duration delay = Backoff(failures);
    {
      absl::MutexLock lock(&mu_);
      if (failed) ++stats_.weight_sync_failures;
      weight_ctx_.reset();
      if (stop_) break;
      // Retry after the backoff, or as soon as the learner announces a
      // version we do not have (it is evidently up).
      const uint64_t have = slots_.newest_version();
      const absl::Time until = absl::Now() + delay;
      while (!stop_ && latest_known_version_ <= have &&
             !backoff_cv_.WaitWithDeadline(&mu_, until)) {
      }
    }
    if (!failed && !installed && !event.status.ok()) {
      LOG_EVERY_N(INFO, 20) << "weight watch ended: " << event.status.error_code() << " "
                            << event.status.error_message();
    }
  }
}

absl::Status ActorImpl::InstallBlob(const std::string& blob, uint64_t announced_version) {
  ModelSlots::Load load;
  policy::Transformer target{nullptr};
  {
    absl::MutexLock lock(&mu_);
    load = slots_.BeginLoad();
    target = models_[load.slot];
  }
  uint64_t version = 0;
  bool built = true;
  absl::Status loaded;
  try {
    torch::NoGradGuard no_grad;
    if (target.is_empty()) target = NewModel();
    // On a bad blob LoadWeights leaves the model untouched; either way its
    // values are all overwritten by the next load.
    loaded = policy::LoadWeights(blob, target, &version);
    target->eval();
  } catch (const std::exception& e) {
    loaded = absl::InternalError(absl::StrCat("loading weights: ", e.what()));
    built = false;  // The model may be half-written: drop it.
    target = policy::Transformer{nullptr};
  }
  if (loaded.ok() && version != announced_version) {
    loaded = absl::DataLossError(
        absl::StrCat("blob holds version ", version, ", chunks announced ", announced_version));
  }
  {
    absl::MutexLock lock(&mu_);
    models_[load.slot] = target;
    if (!slots_.FinishLoad(load, built, loaded.ok(), version)) return loaded;
    ++stats_.weight_syncs;
    if (load.built) ++stats_.weight_loads_reused;
    latest_known_version_ = std::max(latest_known_version_, version);
    gen_cv_.SignalAll();
  }
  LOG(INFO) << "actor received weights of policy version " << version << " (" << blob.size()
            << " bytes" << (load.built ? ", loaded into an existing model)" : ")");
  UpdateHealth();
  return absl::OkStatus();
}

}  // namespace rlvr::actor
