// Crc32 (carry-less multiplication, 512-, 256- or 128-bit, where the CPU has it)
// against zlib's crc32, bit for bit, for every length class, alignment and
// seed; each forced path too, so a machine with the wider instructions still
// checks the narrower one.
#include "common/base/checksum.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>

namespace rlvr {
namespace {

uint32_t Zlib(const std::string& s, size_t off, size_t len, uint32_t seed) {
  return static_cast<uint32_t>(
      crc32(seed, reinterpret_cast<const Bytef*>(s.data()) + off, static_cast<uInt>(len)));
}

TEST(ChecksumTest, MatchesZlibForAllLengthsAlignmentsAndSeeds) {
  std::mt19937_64 rng(7);
  std::string buf(1 << 20, '\0');
  for (char& c : buf) c = static_cast<char>(rng());
  // Up to 1100 bytes: the 256-byte rounds, then every 64- and 16-byte tail.
  for (size_t len = 0; len <= 1100; ++len) {
    for (size_t off : {0, 1, 7, 15, 33}) {
      const uint32_t seed = len % 3 == 0 ? 0 : static_cast<uint32_t>(rng());
      ASSERT_EQ(Crc32(std::string_view(buf.data() + off, len), seed), Zlib(buf, off, len, seed))
          << "len " << len << " off " << off;
    }
  }
  for (int i = 0; i < 200; ++i) {
    const size_t off = rng() % 64;
    const size_t len = rng() % (buf.size() - 64);
    const uint32_t seed = static_cast<uint32_t>(rng());
    ASSERT_EQ(Crc32(std::string_view(buf.data() + off, len), seed), Zlib(buf, off, len, seed))
        << "len " << len << " off " << off;
  }
  EXPECT_EQ(Crc32("123456789"), 0xCBF43926u);  // The standard check value.
}

TEST(ChecksumTest, EveryPathMatchesZlib) {
  using internal::Crc32Path;
  std::mt19937_64 rng(11);
  std::string buf(1 << 16, '\0');
  for (char& c : buf) c = static_cast<char>(rng());
  for (Crc32Path path :
       {Crc32Path::kVector512, Crc32Path::kVector256, Crc32Path::kVector128, Crc32Path::kZlib}) {
    for (int i = 0; i < 400; ++i) {
      const size_t off = rng() % 64;
      const size_t len = i < 200 ? rng() % 1200 : rng() % (buf.size() - 64);
      const uint32_t seed = static_cast<uint32_t>(rng());
      ASSERT_EQ(internal::Crc32Using(path, std::string_view(buf.data() + off, len), seed),
                Zlib(buf, off, len, seed))
          << "path " << static_cast<int>(path) << " len " << len << " off " << off;
    }
  }
}

TEST(ChecksumTest, PiecesChainLikeOneCall) {
  std::string buf(100000, '\0');
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<char>(i * 31 + 7);
  const uint32_t whole = Crc32(buf);
  uint32_t chained = 0;
  for (size_t off = 0; off < buf.size(); off += 4099) {
    chained = Crc32(std::string_view(buf).substr(off, 4099), chained);
  }
  EXPECT_EQ(chained, whole);
}

// The copying CRC gives Crc32's value and an exact copy, streamed or not,
// for lengths around its block size and the vector widths and for every
// alignment of source and destination; it writes nothing outside dst.
TEST(ChecksumTest, CopyingCrcMatchesCrcAndCopiesExactly) {
  std::mt19937_64 rng(11);
  std::string src(100000, '\0');
  for (char& c : src) c = static_cast<char>(rng());
  // Around the vector widths and the 16 KiB block, and a long run.
  const size_t kLengths[] = {0,   1,    15,    16,    17,    63,    64,    65,   255,
                             256, 4097, 16383, 16384, 16385, 40000, 65537, 99936};
  for (size_t len : kLengths) {
    for (size_t src_off : {0, 3, 16}) {
      for (size_t dst_off : {0, 1, 8, 31}) {
        for (bool stream : {false, true}) {
          const uint32_t seed = static_cast<uint32_t>(rng());
          std::string dst(len + dst_off + 32, '\x5c');
          const std::string_view in(src.data() + src_off, len);
          ASSERT_EQ(Crc32Copy(in, dst.data() + dst_off, seed, stream), Crc32(in, seed))
              << "len " << len << " src_off " << src_off << " dst_off " << dst_off;
          ASSERT_EQ(std::string_view(dst.data() + dst_off, len), in)
              << "len " << len << " src_off " << src_off << " dst_off " << dst_off;
          ASSERT_EQ(dst.find_first_not_of('\x5c'), len == 0 ? std::string::npos : dst_off);
          ASSERT_EQ(dst.find_last_not_of('\x5c'), len == 0 ? std::string::npos : dst_off + len - 1);
        }
      }
    }
  }
}

// The appender's chunk CRCs against zlib over each chunk of the result,
// for appends that cross chunk and block boundaries in every way.
TEST(ChecksumTest, AppenderKeepsEachChunksCrcAndTheWholes) {
  std::mt19937_64 rng(17);
  std::string src(200000, '\0');
  for (char& c : src) c = static_cast<char>(rng());
  for (size_t chunk : {1, 7, 4096, 16384, 16385, 50000, 1 << 20}) {
    for (size_t piece : {1, 5, 3000, 16384, 70001}) {
      std::string out = "prefix";  // Not part of the chunks: they count from the first append.
      ChunkCrc32Appender a(&out, chunk);
      EXPECT_TRUE(a.chunk_crcs().empty());
      EXPECT_EQ(a.Crc32OfAll(), 0u);
      const size_t total = chunk == 1 ? 2000 : src.size();
      for (size_t at = 0; at < total; at += piece) {
        a.Append(std::string_view(src).substr(at, std::min(piece, total - at)));
      }
      ASSERT_EQ(out, "prefix" + src.substr(0, total)) << "chunk " << chunk << " piece " << piece;
      ASSERT_EQ(a.size(), total);
      ASSERT_EQ(a.chunk_crcs().size(), (total + chunk - 1) / chunk);
      for (size_t i = 0; i < a.chunk_crcs().size(); ++i) {
        ASSERT_EQ(a.chunk_crcs()[i], Zlib(src, i * chunk, std::min(chunk, total - i * chunk), 0))
            << "chunk " << chunk << " piece " << piece << " index " << i;
      }
      ASSERT_EQ(a.Crc32OfAll(), Zlib(src, 0, total, 0)) << "chunk " << chunk << " piece " << piece;
    }
  }
}

TEST(ChecksumTest, CombineEqualsTheCrcOfTheConcatenation) {
  const std::string a = "weights, chunk one";
  std::string b(3 << 20, '\0');
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<char>(i * 7 + 1);
  EXPECT_EQ(Crc32Combine(Crc32(a), Crc32(b), b.size()), Crc32(a + b));
  EXPECT_EQ(Crc32Combine(Crc32(a), Crc32(""), 0), Crc32(a));
  EXPECT_EQ(Crc32Combine(0, Crc32(b), b.size()), Crc32(b));
}

// The reported loop is the one the kernel's view of the CPU allows
// (/proc/cpuinfo's flags), the fastest first.
TEST(ChecksumTest, ImplementationFollowsTheCpuFlags) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string w; words >> w;) flags.insert(w);
    break;
  }
  if (flags.empty()) GTEST_SKIP() << "no x86 flags in /proc/cpuinfo";
  const bool clmul = flags.count("pclmulqdq") && flags.count("sse4_1");
  const bool vclmul = clmul && flags.count("vpclmulqdq");
  const std::string expected = vclmul && flags.count("avx512f") ? "vpclmulqdq-512"
                               : vclmul && flags.count("avx2")  ? "vpclmulqdq-256"
                               : clmul                          ? "pclmulqdq-128"
                                                                : "table";
  EXPECT_EQ(Crc32Implementation(), expected);
}

}  // namespace
}  // namespace rlvr
