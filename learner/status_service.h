// rlvr.v1.StatusService on learner rank 0 (callback API, unary). The answer
// comes from a provider function that must be cheap and never block on
// training (RunLearner keeps a snapshot under its own mutex).
#ifndef RLVR_LEARNER_STATUS_SERVICE_H_
#define RLVR_LEARNER_STATUS_SERVICE_H_

#include <functional>

#include "rlvr/v1/status.grpc.pb.h"

namespace rlvr::learner {

class StatusServiceImpl final : public rlvr::v1::StatusService::CallbackService {
 public:
  // `provider` is called on gRPC threads; it must be thread-safe.
  explicit StatusServiceImpl(std::function<rlvr::v1::LearnerStatus()> provider)
      : provider_(std::move(provider)) {}

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context,
                                      const rlvr::v1::GetStatusRequest* request,
                                      rlvr::v1::LearnerStatus* response) override {
    *response = provider_();
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  std::function<rlvr::v1::LearnerStatus()> provider_;
};

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_STATUS_SERVICE_H_
