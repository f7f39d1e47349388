// The NCCL communicator at run time. Needs a CUDA device (and a build with
// NCCL); skips otherwise. Labelled "gpu". With Debian's CPU LibTorch only the
// staged path (CPU tensors through device memory) can run; with a CUDA
// LibTorch (scripts/gpu-check) CUDA tensors are reduced in place too.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <thread>

#include "learner/trainer/communicator.h"
#include "learner/trainer/trainer_testing.h"

namespace rlvr::learner {
namespace {

// Skips the calling test unless NCCL is built in and a device is visible.
#define RLVR_REQUIRE_NCCL_DEVICE()                                     \
  do {                                                                 \
    if (!HaveNcclCommunicator()) GTEST_SKIP() << "built without NCCL"; \
    if (NcclVisibleDevices() < 1) GTEST_SKIP() << "no CUDA device";    \
  } while (0)

CommunicatorOptions NcclOptions(int rank, int world, int port, absl::Duration timeout) {
  CommunicatorOptions o;
  o.backend = "nccl";
  o.rank = rank;
  o.world_size = world;
  o.master_port = port;
  o.timeout = timeout;
  return o;
}

TEST(NcclCommunicator, ReducesAndBroadcasts) {
  RLVR_REQUIRE_NCCL_DEVICE();
  // NCCL refuses two ranks on one device; with one GPU test a world of 1.
  const int world = NcclVisibleDevices() >= 2 ? 2 : 1;
  const int port = testing::PickFreePort();
  std::vector<absl::Status> status(world);
  std::vector<torch::Tensor> sums(world);
  std::vector<std::string> bytes(world);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < world; ++rank) {
    threads.emplace_back([&, rank] {
      auto comm = MakeCommunicator(NcclOptions(rank, world, port, absl::Seconds(60)));
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

// Every dtype the trainer sends, staged from the CPU, including a tensor
// larger than the previous staging buffer (it must grow) and a max reduction.
TEST(NcclCommunicator, StagedDtypesAndGrowingBuffer) {
  RLVR_REQUIRE_NCCL_DEVICE();
  auto comm = MakeCommunicator(NcclOptions(0, 1, testing::PickFreePort(), absl::Seconds(60)));
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_EQ((*comm)->backend(), "nccl");
  for (auto dtype : {torch::kFloat32, torch::kFloat64, torch::kFloat16, torch::kInt64,
                     torch::kInt32, torch::kUInt8}) {
    torch::Tensor t = torch::arange(100, torch::TensorOptions().dtype(dtype));
    torch::Tensor before = t.clone();
    ASSERT_TRUE((*comm)->AllReduceSum(t).ok()) << c10::toString(dtype);
    EXPECT_TRUE(torch::equal(t, before)) << c10::toString(dtype);
  }
  torch::Tensor big = torch::randn({1 << 22});  // 16 MiB: larger than any buffer so far.
  torch::Tensor before = big.clone();
  ASSERT_TRUE((*comm)->AllReduce({big}, ReduceOp::kMax, absl::Seconds(60)).ok());
  EXPECT_TRUE(torch::equal(big, before));
  torch::Tensor b = torch::full({7}, 3.5);
  ASSERT_TRUE((*comm)->Broadcast(b, 0).ok());
  EXPECT_TRUE(torch::equal(b, torch::full({7}, 3.5)));
  torch::Tensor strided = torch::zeros({4, 4}).t();
  EXPECT_EQ((*comm)->AllReduceSum(strided).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*comm)->AllReduceSum(torch::zeros({2}, torch::kBool)).code(),
            absl::StatusCode::kInvalidArgument);
}

// CUDA tensors are reduced in place on the device (needs a CUDA LibTorch).
TEST(NcclCommunicator, CudaTensorsInPlace) {
  RLVR_REQUIRE_NCCL_DEVICE();
  if (!torch::cuda::is_available()) GTEST_SKIP() << "LibTorch without CUDA";
  auto comm = MakeCommunicator(NcclOptions(0, 1, testing::PickFreePort(), absl::Seconds(60)));
  ASSERT_TRUE(comm.ok()) << comm.status();
  torch::Tensor t = torch::arange(1 << 20, torch::kFloat32).to(torch::kCUDA) * 2;
  const void* ptr = t.data_ptr();
  ASSERT_TRUE((*comm)->AllReduceSum(t).ok());
  EXPECT_EQ(t.data_ptr(), ptr);
  EXPECT_TRUE(t.is_cuda());
  EXPECT_TRUE(torch::equal(t.cpu(), torch::arange(1 << 20, torch::kFloat32) * 2));
  torch::Tensor d =
      torch::ones({3, 5}, torch::TensorOptions().dtype(torch::kFloat64).device(torch::kCUDA));
  ASSERT_TRUE((*comm)->Broadcast(d, 0).ok());
  EXPECT_DOUBLE_EQ(d.sum().item<double>(), 15.0);
  EXPECT_TRUE((*comm)->Barrier().ok());
}

// A rank that never starts: the store-side rendezvous fails with
// DeadlineExceeded within the timeout instead of hanging in NCCL init.
TEST(NcclCommunicator, MissingRankFailsRendezvousWithinTimeout) {
  RLVR_REQUIRE_NCCL_DEVICE();
  const auto t0 = std::chrono::steady_clock::now();
  auto comm = MakeCommunicator(NcclOptions(0, 2, testing::PickFreePort(), absl::Seconds(2)));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(comm.ok());
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kDeadlineExceeded) << comm.status();
  EXPECT_LT(seconds, 30.0);
}

}  // namespace
}  // namespace rlvr::learner
