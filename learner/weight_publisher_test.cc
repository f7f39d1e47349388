// WeightPublisher over real gRPC: chunking, CRCs, many watchers, and a slow
// watcher skipping to the newest version.
#include "learner/weight_publisher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/base/checksum.h"
#include "common/net/grpc_util.h"

namespace rlvr::learner {
namespace {

std::shared_ptr<const std::string> Blob(size_t n, char seed) {
  auto b = std::make_shared<std::string>(n, '\0');
  for (size_t i = 0; i < n; ++i) (*b)[i] = static_cast<char>(seed + i * 31 + (i >> 10));
  return b;
}

class WeightPublisherTest : public ::testing::Test {
 protected:
  void Start(size_t chunk_bytes) {
    publisher_ = std::make_unique<WeightPublisher>(&metrics_, chunk_bytes);
    auto started = StartGrpcServer(GrpcServerOptions{}, {publisher_.get()});
    ASSERT_TRUE(started.ok()) << started.status();
    server_ = std::move(started->server);
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(64 << 20);
    channel_ = grpc::CreateCustomChannel("127.0.0.1:" + std::to_string(started->port),
                                         grpc::InsecureChannelCredentials(), args);
  }
  void TearDown() override {
    if (publisher_) publisher_->Shutdown();
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  }

  struct Received {
    uint64_t version = 0;
    std::string blob;
    int chunks = 0;
  };
  // Reads one complete version from `reader`, checking every invariant.
  static bool ReadVersion(grpc::ClientReader<rlvr::v1::WeightChunk>* reader, Received* out,
                          size_t max_chunk) {
    rlvr::v1::WeightChunk c;
    *out = Received{};
    while (reader->Read(&c)) {
      if (out->chunks == 0) out->version = c.version();
      EXPECT_EQ(c.version(), out->version);
      EXPECT_EQ(c.offset(), out->blob.size());
      EXPECT_LE(c.data().size(), max_chunk);
      EXPECT_EQ(c.chunk_crc32(), Crc32(c.data()));
      out->blob += c.data();
      ++out->chunks;
      if (c.last()) {
        EXPECT_EQ(c.total_bytes(), out->blob.size());
        EXPECT_EQ(c.blob_crc32(), Crc32(out->blob));
        return true;
      }
    }
    return false;
  }

  LearnerMetrics metrics_{std::make_shared<prometheus::Registry>()};
  std::unique_ptr<WeightPublisher> publisher_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(WeightPublisherTest, EncodedChunkParsesAsWeightChunk) {
  std::string text = "abcdefghij";
  auto v =
      std::make_shared<const PublishedVersion>(9, std::make_shared<const std::string>(text), 4);
  ASSERT_EQ(v->num_chunks(), 3u);
  auto decode = [&](size_t index) {
    grpc::ByteBuffer bb = EncodeWeightChunk(v, index);
    std::vector<grpc::Slice> slices;
    EXPECT_TRUE(bb.Dump(&slices).ok());
    std::string bytes;
    for (const auto& s : slices) bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
    rlvr::v1::WeightChunk c;
    EXPECT_TRUE(c.ParseFromString(bytes));
    return c;
  };
  rlvr::v1::WeightChunk first = decode(0);
  EXPECT_EQ(first.data(), "abcd");
  EXPECT_EQ(first.chunk_crc32(), Crc32(std::string_view("abcd")));
  EXPECT_EQ(first.blob_crc32(), 0u);  // Only the last chunk carries the blob CRC.
  EXPECT_FALSE(first.last());
  rlvr::v1::WeightChunk c = decode(2);
  EXPECT_EQ(c.version(), 9u);
  EXPECT_EQ(c.offset(), 8u);
  EXPECT_EQ(c.total_bytes(), 10u);
  EXPECT_EQ(c.data(), "ij");
  EXPECT_EQ(c.chunk_crc32(), Crc32(std::string_view("ij")));
  EXPECT_EQ(c.blob_crc32(), Crc32(std::string_view(text)));
  EXPECT_TRUE(c.last());
}

// Many threads asking for the same lazily computed CRCs get the same values.
TEST_F(WeightPublisherTest, LazyCrcsAreComputedOnceAndAgreeAcrossThreads) {
  auto blob = Blob((3 << 20) + 17, 5);
  PublishedVersion v(1, blob, 1 << 20);
  ASSERT_EQ(v.num_chunks(), 4u);
  EXPECT_EQ(v.chunk_size(3), 17u);
  std::vector<std::thread> threads;
  std::vector<uint32_t> blob_crcs(8);
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (size_t i = 0; i < v.num_chunks(); ++i) v.ChunkCrc32((i + t) % v.num_chunks());
      blob_crcs[t] = v.BlobCrc32();
    });
  }
  for (auto& th : threads) th.join();
  for (uint32_t c : blob_crcs) EXPECT_EQ(c, Crc32(*blob));
  EXPECT_EQ(v.ChunkCrc32(3), Crc32(std::string_view(blob->data() + (3 << 20), 17)));
  PublishedVersion empty(2, std::make_shared<const std::string>(), 4);
  EXPECT_EQ(empty.num_chunks(), 1u);
  EXPECT_EQ(empty.BlobCrc32(), Crc32(std::string_view()));
}

// CRCs given with the blob are the ones sent (no pass over the blob); a list
// of the wrong length is not used, and the CRCs are computed.
TEST_F(WeightPublisherTest, GivenChunkCrcsAreUsedWhenThereIsOnePerChunk) {
  auto blob = Blob((2 << 20) + 5, 9);
  const std::vector<uint32_t> marked = {11, 22, 33};  // Not the real CRCs: they show use.
  PublishedVersion given(1, blob, 1 << 20, marked);
  ASSERT_EQ(given.num_chunks(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(given.ChunkCrc32(i), marked[i]);
  PublishedVersion short_list(2, blob, 1 << 20, {11, 22});
  PublishedVersion none(3, blob, 1 << 20);
  for (size_t i = 0; i < 3; ++i) {
    const std::string_view chunk(blob->data() + (i << 20), none.chunk_size(i));
    EXPECT_EQ(short_list.ChunkCrc32(i), Crc32(chunk));
    EXPECT_EQ(none.ChunkCrc32(i), Crc32(chunk));
  }
  EXPECT_EQ(none.BlobCrc32(), Crc32(*blob));
  EXPECT_EQ(short_list.BlobCrc32(), Crc32(*blob));
}

// A full chunk's message fits the 4 MiB default receive limit of the common
// gRPC clients (C++, Go, Java, Node) with room to spare.
TEST_F(WeightPublisherTest, ChunkMessagesFitTheDefaultReceiveLimitWithRoomToSpare) {
  auto v = std::make_shared<const PublishedVersion>(7, Blob(3 * WeightPublisher::kMaxChunkBytes, 3),
                                                    WeightPublisher::kMaxChunkBytes);
  for (size_t i = 0; i < v->num_chunks(); ++i) {
    const size_t bytes = EncodeWeightChunk(v, i).Length();
    EXPECT_LE(bytes, WeightPublisher::kMaxChunkBytes + 64);
    EXPECT_LE(bytes, size_t{2} << 20) << "a chunk message needs more than half a 4 MiB limit";
  }
}

TEST_F(WeightPublisherTest, ManyWatchersReceiveEveryVersionChunkedAndChecksummed) {
  Start(WeightPublisher::kMaxChunkBytes);
  constexpr size_t kChunk = WeightPublisher::kMaxChunkBytes;
  auto v1 = Blob(2 * kChunk + kChunk / 2, 1);  // 3 chunks: 1 + 1 + 0.5 chunk.
  publisher_->Publish(1, v1);
  constexpr int kWatchers = 8;
  std::vector<std::thread> threads;
  std::atomic<int> ok_count{0};
  auto stub = rlvr::v1::WeightService::NewStub(channel_);
  for (int w = 0; w < kWatchers; ++w) {
    threads.emplace_back([&, w] {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
      rlvr::v1::WatchWeightsRequest req;
      req.set_watcher_id("w" + std::to_string(w));
      auto reader = stub->WatchWeights(&ctx, req);
      Received r;
      if (!ReadVersion(reader.get(), &r, WeightPublisher::kMaxChunkBytes)) return;
      EXPECT_EQ(r.version, 1u);
      EXPECT_EQ(r.chunks, 3);
      EXPECT_TRUE(r.blob == *v1);
      // The next version arrives on the same stream.
      if (!ReadVersion(reader.get(), &r, WeightPublisher::kMaxChunkBytes)) return;
      EXPECT_EQ(r.version, 2u);
      EXPECT_EQ(r.blob, std::string(100, 'z'));
      ok_count++;
      ctx.TryCancel();
    });
  }
  for (int i = 0; i < 500 && publisher_->watchers() < kWatchers; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Version 2 comes with its chunk CRCs, as the learner's serializer makes them.
  auto v2 = std::make_shared<std::string>();
  ChunkCrc32Appender appender(v2.get(), publisher_->chunk_bytes());
  appender.Append(std::string(100, 'z'));
  publisher_->Publish(2, v2, appender.chunk_crcs());
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok_count.load(), kWatchers);
}

TEST_F(WeightPublisherTest, WatcherWithCurrentVersionWaitsAndSlowWatcherSkipsToNewest) {
  Start(256 << 10);
  auto big = Blob(48 << 20, 5);  // Far more than the transport buffers.
  publisher_->Publish(1, big);
  auto stub = rlvr::v1::WeightService::NewStub(channel_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  rlvr::v1::WatchWeightsRequest req;
  auto reader = stub->WatchWeights(&ctx, req);
  rlvr::v1::WeightChunk first;
  ASSERT_TRUE(reader->Read(&first));  // Version 1 has started.
  EXPECT_EQ(first.version(), 1u);
  publisher_->Publish(2, std::make_shared<const std::string>(1000, 'b'));
  publisher_->Publish(3, std::make_shared<const std::string>(1000, 'c'));
  // A fast watcher holding version 2 gets only version 3.
  grpc::ClientContext ctx2;
  ctx2.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  rlvr::v1::WatchWeightsRequest req2;
  req2.set_have_version(2);
  auto reader2 = stub->WatchWeights(&ctx2, req2);
  Received r2;
  ASSERT_TRUE(ReadVersion(reader2.get(), &r2, 256 << 10));
  EXPECT_EQ(r2.version, 3u);
  ctx2.TryCancel();
  // The slow watcher finishes version 1, then jumps to 3.
  std::string rest = first.data();
  rlvr::v1::WeightChunk c;
  while (reader->Read(&c)) {
    ASSERT_EQ(c.version(), 1u);
    rest += c.data();
    if (c.last()) break;
  }
  EXPECT_TRUE(rest == *big);
  Received r;
  ASSERT_TRUE(ReadVersion(reader.get(), &r, 256 << 10));
  EXPECT_EQ(r.version, 3u);
  EXPECT_EQ(r.blob, std::string(1000, 'c'));
  ctx.TryCancel();
}

TEST_F(WeightPublisherTest, ShutdownEndsStreams) {
  Start(1024);
  auto stub = rlvr::v1::WeightService::NewStub(channel_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  rlvr::v1::WatchWeightsRequest req;
  auto reader = stub->WatchWeights(&ctx, req);
  for (int i = 0; i < 500 && publisher_->watchers() < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  publisher_->Shutdown();
  rlvr::v1::WeightChunk c;
  EXPECT_FALSE(reader->Read(&c));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

}  // namespace
}  // namespace rlvr::learner
