#include "actor/weight_stream.h"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>

#include "actor/testing/fake_learner.h"
#include "actor/transport.h"

namespace rlvr::actor {
namespace {

using testing::Corruption;
using testing::FakeLearner;
using testing::FakeLearnerOptions;

// Bytes that are not a weights blob: the stream only moves and checks them.
std::string Blob(size_t bytes, int seed) {
  std::string blob(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) blob[i] = static_cast<char>(i * 31 + seed);
  return blob;
}

class WeightStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FakeLearnerOptions options;
    options.chunk_bytes = 16 << 10;
    auto learner = FakeLearner::Start(options);
    ASSERT_TRUE(learner.ok()) << learner.status();
    learner_ = std::move(*learner);
    grpc::ChannelArguments args;
    SetWeightChannelArgs(&args);
    channel_ =
        grpc::CreateCustomChannel(learner_->address(), grpc::InsecureChannelCredentials(), args);
  }

  // The first event of a stream that watches a transfer of `version`
  // spoiled in `mode` (the stream has ended by the time this returns).
  WeightStream::Event FirstEventOfSpoiled(Corruption mode, uint64_t version,
                                          WeightAssembler* assembler) {
    learner_->CorruptNextTransfers(mode, 1);
    learner_->PublishWeights(version, Blob(100'000, static_cast<int>(version)));
    grpc::ClientContext context;
    WeightStream stream(channel_.get(), &context, rlvr::v1::WatchWeightsRequest(), assembler);
    return stream.Next();
  }

  std::unique_ptr<FakeLearner> learner_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(WeightStreamTest, DeliversEachVersionAndReusesTheBufferGivenBack) {
  const std::string v1 = Blob(100'000, 1), v2 = Blob(100'000, 2), v3 = Blob(50'000, 3);
  learner_->PublishWeights(1, v1);
  WeightAssembler assembler;
  grpc::ClientContext context;
  WeightStream stream(channel_.get(), &context, rlvr::v1::WatchWeightsRequest(), &assembler);

  WeightStream::Event e = stream.Next();
  ASSERT_EQ(e.kind, WeightStream::Event::kBlob);
  EXPECT_EQ(e.version, 1u);
  EXPECT_EQ(e.blob, v1);
  // Published while the consumer holds version 1: read once it resumes.
  learner_->PublishWeights(2, v2);
  // The buffer given back (larger than any version here) receives the next.
  std::string buffer;
  buffer.reserve(1 << 20);
  stream.Resume(std::move(buffer));

  e = stream.Next();
  ASSERT_EQ(e.kind, WeightStream::Event::kBlob);
  EXPECT_EQ(e.version, 2u);
  EXPECT_EQ(e.blob, v2);
  EXPECT_GE(e.blob.capacity(), size_t{1} << 20) << "version 2 should land in the buffer given back";
  learner_->PublishWeights(3, v3);
  stream.Resume(std::move(e.blob));

  e = stream.Next();
  ASSERT_EQ(e.kind, WeightStream::Event::kBlob);
  EXPECT_EQ(e.version, 3u);
  EXPECT_EQ(e.blob, v3);

  // Cancelled while the consumer holds a blob: Resume reads on, the read
  // fails and the call ends.
  context.TryCancel();
  stream.Resume(std::move(e.blob));
  e = stream.Next();
  ASSERT_EQ(e.kind, WeightStream::Event::kEnd);
  EXPECT_TRUE(e.transfer_error.ok()) << e.transfer_error;
  EXPECT_FALSE(e.mid_transfer);
  EXPECT_EQ(e.status.error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(WeightStreamTest, ABadChunkEndsTheCallWithItsError) {
  WeightAssembler assembler;
  WeightStream::Event e = FirstEventOfSpoiled(Corruption::kBadChunkCrc, 7, &assembler);
  ASSERT_EQ(e.kind, WeightStream::Event::kEnd);
  EXPECT_EQ(e.transfer_error.code(), absl::StatusCode::kDataLoss) << e.transfer_error;
  EXPECT_EQ(e.chunk_version, 7u);
  EXPECT_EQ(e.status.error_code(), grpc::StatusCode::CANCELLED);

  // A new stream on the same assembler starts over and gets the version.
  learner_->PublishWeights(8, Blob(100'000, 8));
  grpc::ClientContext again;
  WeightStream retry(channel_.get(), &again, rlvr::v1::WatchWeightsRequest(), &assembler);
  e = retry.Next();
  ASSERT_EQ(e.kind, WeightStream::Event::kBlob);
  EXPECT_EQ(e.version, 8u);
  EXPECT_EQ(e.blob, Blob(100'000, 8));
  again.TryCancel();
  retry.Resume(std::move(e.blob));
  EXPECT_EQ(retry.Next().kind, WeightStream::Event::kEnd);
}

TEST_F(WeightStreamTest, AStreamCutMidTransferSaysSo) {
  WeightAssembler assembler;
  WeightStream::Event e = FirstEventOfSpoiled(Corruption::kTruncate, 3, &assembler);
  ASSERT_EQ(e.kind, WeightStream::Event::kEnd);
  EXPECT_TRUE(e.transfer_error.ok()) << e.transfer_error;
  EXPECT_TRUE(e.mid_transfer);
}

// A consumer that stops early (an error, shutdown) may drop the stream at
// any point: before the first chunk, with a blob not yet taken, or while it
// holds one. The destructor ends the call before the object goes away (run
// under ASan this shows no use after free).
TEST_F(WeightStreamTest, DroppingTheStreamAtAnyPointEndsTheCallFirst) {
  WeightAssembler assembler;
  {
    grpc::ClientContext context;
    WeightStream stream(channel_.get(), &context, rlvr::v1::WatchWeightsRequest(), &assembler);
  }
  learner_->PublishWeights(1, Blob(100'000, 1));
  {
    grpc::ClientContext context;
    WeightStream stream(channel_.get(), &context, rlvr::v1::WatchWeightsRequest(), &assembler);
    WeightStream::Event e = stream.Next();
    ASSERT_EQ(e.kind, WeightStream::Event::kBlob);  // Held while the stream goes.
  }
  {
    grpc::ClientContext context;
    WeightStream stream(channel_.get(), &context, rlvr::v1::WatchWeightsRequest(), &assembler);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // The blob arrives untaken.
  }
  // The assembler is free again: a new stream gets the version.
  grpc::ClientContext context;
  WeightStream stream(channel_.get(), &context, rlvr::v1::WatchWeightsRequest(), &assembler);
  WeightStream::Event e = stream.Next();
  ASSERT_EQ(e.kind, WeightStream::Event::kBlob);
  EXPECT_EQ(e.blob, Blob(100'000, 1));
}

// Dropped at random moments while versions stream in (mid-transfer, as a
// blob completes, while the consumer holds one): never hangs, never leaks a
// call (ASan), and the assembler is usable again each time.
TEST_F(WeightStreamTest, DroppedAtRandomMomentsWhileVersionsStreamIn) {
  WeightAssembler assembler;
  std::mt19937 rng(7);
  for (int i = 0; i < 40; ++i) {
    learner_->PublishWeights(i + 1, Blob(64 << 10, i));  // 4 chunks of 16 KiB.
    grpc::ClientContext context;
    WeightStream stream(channel_.get(), &context, rlvr::v1::WatchWeightsRequest(), &assembler);
    if (i % 2 == 1) {
      WeightStream::Event e = stream.Next();
      ASSERT_EQ(e.kind, WeightStream::Event::kBlob);
      ASSERT_EQ(e.blob, Blob(64 << 10, i));
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
  }
}

TEST_F(WeightStreamTest, ALearnerThatGoesAwayEndsTheCall) {
  WeightAssembler assembler;
  grpc::ClientContext context;
  WeightStream stream(channel_.get(), &context, rlvr::v1::WatchWeightsRequest(), &assembler);
  // Shuts the server down: the fake ends its watch streams (OK) or the
  // server cancels them, whichever comes first.
  learner_.reset();
  WeightStream::Event e = stream.Next();
  ASSERT_EQ(e.kind, WeightStream::Event::kEnd);
  EXPECT_TRUE(e.transfer_error.ok()) << e.transfer_error;
  EXPECT_FALSE(e.mid_transfer);
}

}  // namespace
}  // namespace rlvr::actor
