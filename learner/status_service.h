// rlvr.v1.StatusService on learner rank 0 (callback API, unary). The answer
// comes from a provider function that must be cheap and never block on
// training (RunLearner keeps a snapshot under its own mutex).
#ifndef RLVR_LEARNER_STATUS_SERVICE_H_
#define RLVR_LEARNER_STATUS_SERVICE_H_

#include <functional>

#include "common/net/auth.h"
#include "rlvr/v1/status.grpc.pb.h"

namespace rlvr::learner {

class StatusServiceImpl final : public rlvr::v1::StatusService::CallbackService {
 public:
  // `provider` is called on gRPC threads; it must be thread-safe. `auth`
  // (nullable, not owned) checks each call's bearer token.
  explicit StatusServiceImpl(std::function<rlvr::v1::LearnerStatus()> provider,
                             const TokenChecker* auth = nullptr)
      : provider_(std::move(provider)), auth_(auth) {}

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context,
                                      const rlvr::v1::GetStatusRequest* request,
                                      rlvr::v1::LearnerStatus* response) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::Status st = auth_ != nullptr ? auth_->Check(*context) : grpc::Status::OK;
    if (st.ok()) *response = provider_();
    reactor->Finish(st);
    return reactor;
  }

 private:
  std::function<rlvr::v1::LearnerStatus()> provider_;
  const TokenChecker* const auth_;
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_STATUS_SERVICE_H_
