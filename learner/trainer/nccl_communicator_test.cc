// The NCCL communicator at run time. Needs a CUDA device (and a build with
// NCCL); skips otherwise. Labelled "gpu".
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <thread>

#include "learner/trainer/communicator.h"
#include "learner/trainer/trainer_testing.h"

namespace rlvr::learner {
namespace {

TEST(NcclCommunicator, ReducesAndBroadcasts) {
  if (!HaveNcclCommunicator()) GTEST_SKIP() << "built without NCCL";
  const int devices = NcclVisibleDevices();
  if (devices < 1) GTEST_SKIP() << "no CUDA device";
  // NCCL refuses two ranks on one device; with one GPU test a world of 1.
  const int world = devices >= 2 ? 2 : 1;
  const int port = testing::PickFreePort();
  std::vector<absl::Status> status(world);
  std::vector<torch::Tensor> sums(world);
  std::vector<std::string> bytes(world);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      CommunicatorOptions o;
      o.backend = "nccl";
      o.rank = rank;
      o.world_size = world;
      o.master_port = port;
      o.timeout = absl::Seconds(60);
      auto comm = MakeCommunicator(o);
      if (!comm.ok()) {
        status[rank] = comm.status();
        return;
      }
      sums[rank] = torch::arange(1000, torch::kFloat32) * (rank + 1);  // CPU: staged.
      absl::Status s = (*comm)->AllReduceSum(sums[rank]);
      bytes[rank] = rank == 0 ? std::string(5000, 'q') : "";
      if (s.ok()) s = (*comm)->BroadcastBytes(&bytes[rank], 0);
      if (s.ok()) s = (*comm)->Barrier();
      status[rank] = s;
    });
  }
  for (auto& t : threads) t.join();
  const float factor = world == 2 ? 3.0f : 1.0f;
  for (int rank = 0; rank < world; ++rank) {
    ASSERT_TRUE(status[rank].ok()) << status[rank];
    EXPECT_TRUE(torch::allclose(sums[rank], torch::arange(1000, torch::kFloat32) * factor));
    EXPECT_EQ(bytes[rank], std::string(5000, 'q'));
  }
}

}  // namespace
}  // namespace rlvr::learner
