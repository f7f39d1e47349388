#include "learner/trainer/communicator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <functional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "learner/trainer/trainer_testing.h"

namespace rlvr::learner {
namespace {

CommunicatorOptions GlooOptions(int rank, int world, int port, absl::Duration timeout) {
  CommunicatorOptions o;
  o.backend = "gloo";
  o.rank = rank;
  o.world_size = world;
  o.master_addr = "127.0.0.1";
  o.master_port = port;
  o.timeout = timeout;
  o.gloo_threads = 1;
  return o;
}

// Runs fn(rank) on `world` threads and joins them. Ranks > 0 start a moment
// later so that rank 0's store is listening: a TCPStore client that finds no
// server backs off for about a second, which would eat the short rendezvous
// timeouts these tests use.
void RunRanks(int world, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&fn, r] {
      if (r > 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
      fn(r);
    });
  }
  for (auto& t : threads) t.join();
}

TEST(LocalCommunicator, CollectivesAreNoOps) {
  CommunicatorOptions o;
  auto comm = MakeCommunicator(o);
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_EQ((*comm)->backend(), "local");
  EXPECT_EQ((*comm)->world_size(), 1);
  torch::Tensor t = torch::tensor({1.0f, 2.0f});
  ASSERT_TRUE((*comm)->AllReduceSum(t).ok());
  EXPECT_FLOAT_EQ(t[1].item<float>(), 2.0f);
  std::string bytes = "abc";
  ASSERT_TRUE((*comm)->BroadcastBytes(&bytes, 0).ok());
  EXPECT_EQ(bytes, "abc");
  EXPECT_TRUE((*comm)->Barrier().ok());
  EXPECT_FALSE((*comm)->Broadcast(t, 1).ok());
}

TEST(MakeCommunicator, RejectsBadOptions) {
  CommunicatorOptions o;
  o.world_size = 2;
  o.rank = 2;
  EXPECT_EQ(MakeCommunicator(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.rank = 1;
  o.backend = "gloo";
  o.master_port = 0;
  EXPECT_EQ(MakeCommunicator(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.backend = "mpi";
  o.master_port = 1234;
  EXPECT_EQ(MakeCommunicator(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.backend = "local";
  EXPECT_EQ(MakeCommunicator(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.world_size = 2;
  o.backend = "auto";
  EXPECT_EQ(ResolveCommunicatorBackend(o),
            HaveNcclCommunicator() && torch::cuda::is_available() ? "nccl" : "gloo");
  if (!HaveNcclCommunicator()) {
    o.backend = "nccl";
    EXPECT_EQ(MakeCommunicator(o).status().code(), absl::StatusCode::kUnimplemented);
  }
}

TEST(GlooCommunicator, TwoRanksReduceBroadcastAndBarrier) {
  const int port = testing::PickFreePort();
  ASSERT_GT(port, 0);
  std::vector<absl::Status> errors(2);
  std::vector<std::string> received(2);
  std::vector<torch::Tensor> sums(2), maxes(2), casts(2);
  RunRanks(2, [&](int rank) {
    auto comm = MakeCommunicator(GlooOptions(rank, 2, port, absl::Seconds(30)));
    if (!comm.ok()) {
      errors[rank] = comm.status();
      return;
    }
    auto& c = **comm;
    sums[rank] = torch::arange(5, torch::kFloat32) * (rank + 1);
    torch::Tensor other = torch::full({3}, static_cast<double>(rank), torch::kFloat64);
    absl::Status s = c.AllReduceSum({sums[rank], other});
    if (s.ok() && other[0].item<double>() != 1.0) s = absl::InternalError("second tensor");
    maxes[rank] = torch::tensor({rank == 0 ? 5.0f : -1.0f, rank == 0 ? 0.0f : 7.0f});
    if (s.ok()) s = c.AllReduce({maxes[rank]}, ReduceOp::kMax, absl::Seconds(30));
    casts[rank] = torch::full({4}, static_cast<int64_t>(rank == 1 ? 42 : 0), torch::kInt64);
    if (s.ok()) s = c.Broadcast(casts[rank], 1);
    std::string big(100000, 'x');
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7 + 3);
    received[rank] = rank == 0 ? big : "junk";
    if (s.ok()) s = c.BroadcastBytes(&received[rank], 0);
    std::string empty = rank == 0 ? "" : "not empty";
    if (s.ok()) s = c.BroadcastBytes(&empty, 0);
    if (s.ok() && !empty.empty()) s = absl::InternalError("empty broadcast");
    if (s.ok()) s = c.Barrier();
    // Store-side signalling: rank 0 announces, rank 1 waits for it; a key
    // nobody announces times out.
    if (s.ok()) {
      s = rank == 0 ? c.Announce("ready") : c.AwaitAnnouncement("ready", absl::Seconds(30));
    }
    if (s.ok() && rank == 1) {
      absl::Status never = c.AwaitAnnouncement("never", absl::Milliseconds(300));
      if (never.code() != absl::StatusCode::kDeadlineExceeded) {
        s = absl::InternalError(absl::StrCat("unannounced key: ", never.ToString()));
      }
    }
    // Keep rank 0 (the store's host) alive until rank 1 is done.
    if (s.ok()) s = rank == 1 ? c.Announce("done") : c.AwaitAnnouncement("done", absl::Seconds(30));
    if (s.ok()) s = c.Barrier();
    errors[rank] = s;
  });
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(errors[r].ok()) << "rank " << r << ": " << errors[r];
    EXPECT_TRUE(torch::equal(sums[r], torch::arange(5, torch::kFloat32) * 3));
    EXPECT_TRUE(torch::equal(maxes[r], torch::tensor({5.0f, 7.0f})));
    EXPECT_TRUE(torch::equal(casts[r], torch::full({4}, 42, torch::kInt64)));
    EXPECT_EQ(received[r], received[0]);
    EXPECT_EQ(received[r].size(), 100000u);
  }
}

// Rank 1 joins the group but never enters the all-reduce: rank 0 must fail
// with DeadlineExceeded (not hang), and the communicator then refuses work.
TEST(GlooCommunicator, MissingRankInCollectiveTimesOut) {
  const int port = testing::PickFreePort();
  absl::Status rank0_status, rank0_after;
  double seconds = 0;
  std::atomic<bool> rank0_done{false};
  RunRanks(2, [&](int rank) {
    auto comm = MakeCommunicator(GlooOptions(rank, 2, port, absl::Seconds(1)));
    if (!comm.ok()) {
      if (rank == 0) rank0_status = comm.status();
      rank0_done = true;
      return;
    }
    if (rank == 1) {
      while (!rank0_done) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      return;
    }
    auto start = std::chrono::steady_clock::now();
    rank0_status = (*comm)->AllReduceSum(torch::ones({8}));
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rank0_after = (*comm)->Barrier();
    rank0_done = true;
  });
  EXPECT_EQ(rank0_status.code(), absl::StatusCode::kDeadlineExceeded) << rank0_status;
  EXPECT_NE(rank0_status.message().find("rank 0 of 2"), std::string::npos) << rank0_status;
  EXPECT_NE(rank0_status.message().find("all_reduce"), std::string::npos) << rank0_status;
  EXPECT_EQ(rank0_after.code(), absl::StatusCode::kFailedPrecondition) << rank0_after;
  LOG(INFO) << "missing rank detected after " << seconds << " s (timeout 1 s): " << rank0_status;
}

// Rank 1 joins and then goes away (its process group is destroyed): rank 0's
// next collective fails instead of hanging.
TEST(GlooCommunicator, DeadRankFailsPeer) {
  const int port = testing::PickFreePort();
  absl::Status rank0_status;
  std::atomic<bool> rank1_gone{false};
  RunRanks(2, [&](int rank) {
    auto comm = MakeCommunicator(GlooOptions(rank, 2, port, absl::Seconds(2)));
    if (!comm.ok()) {
      if (rank == 0) rank0_status = comm.status();
      rank1_gone = true;
      return;
    }
    if (rank == 1) {
      comm->reset();
      rank1_gone = true;
      return;
    }
    while (!rank1_gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    rank0_status = (*comm)->AllReduceSum(torch::ones({8}));
  });
  EXPECT_FALSE(rank0_status.ok());
  EXPECT_TRUE(rank0_status.code() == absl::StatusCode::kUnavailable ||
              rank0_status.code() == absl::StatusCode::kDeadlineExceeded)
      << rank0_status;
  EXPECT_NE(rank0_status.message().find("rank 0 of 2"), std::string::npos) << rank0_status;
}

// Only rank 0 of a world of 2 ever starts: the rendezvous fails in time.
TEST(GlooCommunicator, RankThatNeverStartsFailsRendezvous) {
  const int port = testing::PickFreePort();
  auto comm = MakeCommunicator(GlooOptions(0, 2, port, absl::Seconds(1)));
  ASSERT_FALSE(comm.ok());
  EXPECT_TRUE(comm.status().code() == absl::StatusCode::kDeadlineExceeded ||
              comm.status().code() == absl::StatusCode::kUnavailable)
      << comm.status();
  EXPECT_NE(comm.status().message().find("rendezvous"), std::string::npos) << comm.status();
}

}  // namespace
}  // namespace rlvr::learner
