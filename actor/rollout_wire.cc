#include "actor/rollout_wire.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/wire_format_lite.h>

#include <cstring>

namespace rlvr::actor {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "packed floats are copied as they lie in memory");

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedOutputStream;

constexpr WireFormatLite::WireType kVarint = WireFormatLite::WIRETYPE_VARINT;
constexpr WireFormatLite::WireType kFixed64 = WireFormatLite::WIRETYPE_FIXED64;
constexpr WireFormatLite::WireType kLen = WireFormatLite::WIRETYPE_LENGTH_DELIMITED;
constexpr WireFormatLite::WireType kFixed32 = WireFormatLite::WIRETYPE_FIXED32;

size_t VarintBytes(uint64_t v) { return CodedOutputStream::VarintSize64(v); }

uint8_t* PutVarint(uint64_t v, uint8_t* out) {
  return CodedOutputStream::WriteVarint64ToArray(v, out);
}

// Field tags here are all below 16: one byte each, counted as such below.
uint8_t* PutTag(int field, WireFormatLite::WireType wire_type, uint8_t* out) {
  return CodedOutputStream::WriteTagToArray(WireFormatLite::MakeTag(field, wire_type), out);
}

// A length-delimited field's tag and length prefix, bytes.
size_t LenFieldBytes(size_t body) { return 1 + VarintBytes(body) + body; }

// Encoded bytes of `n` int32 varints (a negative int32 is sign-extended to
// ten bytes, as protobuf does). Branch-free so that it vectorises; the sum is
// kept in 32 bits per block of 2^24 ids (at most 10 bytes each), so that a
// vector holds 8 of them with AVX2 (4 with SSE2, which widens them to 64).
inline __attribute__((always_inline)) size_t PackedInt32BytesBody(const int32_t* ids, int n) {
  // Runs of one-byte ids only (every run of a vocabulary below 128, as the
  // default policy's 99 characters) are told apart by an OR-reduction at
  // ~1/8 of the sizing loop's instructions; that loop was still ~4.5% of a
  // one-stream ingest profile. A run with a larger id pays the reduction on
  // top (ids it has just brought into cache).
  uint32_t any = 0;
  for (int i = 0; i < n; ++i) any |= static_cast<uint32_t>(ids[i]);
  if (any < (1u << 7)) return static_cast<size_t>(n);
  constexpr int64_t kBlock = int64_t{1} << 24;
  size_t bytes = 0;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = n - start < kBlock ? n : start + kBlock;
    uint32_t block = 0;
    for (int64_t i = start; i < end; ++i) {
      const uint32_t x = static_cast<uint32_t>(ids[i]);
      block += 1 + (x >= (1u << 7)) + (x >= (1u << 14)) + (x >= (1u << 21)) + (x >= (1u << 28)) +
               5 * (x >> 31);
    }
    bytes += block;
  }
  return bytes;
}

#if defined(__x86_64__)
// The same loop for CPUs with AVX2: 2.4x faster than the baseline build on
// 256 ids (36 vs 87 ns), where sizing was ~6% of a one-stream ingest profile.
__attribute__((target("avx2"))) size_t PackedInt32BytesAvx2(const int32_t* ids, int n) {
  return PackedInt32BytesBody(ids, n);
}
#endif

uint8_t* PutPackedInt32(const int32_t* ids, int n, size_t bytes, uint8_t* out) {
  if (bytes == static_cast<size_t>(n)) {
    // Every id is in [0, 128): one byte each.
    for (int i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(ids[i]);
    return out + n;
  }
  for (int i = 0; i < n; ++i) {
    out = PutVarint(static_cast<uint64_t>(static_cast<int64_t>(ids[i])), out);
  }
  return out;
}

template <typename T>
uint64_t Bits(T v) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8);
  if constexpr (sizeof(T) == 4) {
    uint32_t b;
    std::memcpy(&b, &v, 4);
    return b;
  } else {
    uint64_t b;
    std::memcpy(&b, &v, 8);
    return b;
  }
}

// Body bytes of `c` with its packed ids' bytes already known. Proto3: a
// scalar at its default (zero bits, empty) is not written.
size_t CompletionBodyBytes(const rlvr::v1::Completion& c, size_t id_bytes) {
  const size_t n = static_cast<size_t>(c.token_ids_size());
  size_t bytes = 0;
  if (n > 0) bytes += LenFieldBytes(id_bytes);
  if (c.behaviour_logprobs_size() > 0) {
    bytes += LenFieldBytes(4 * static_cast<size_t>(c.behaviour_logprobs_size()));
  }
  if (Bits(c.reward()) != 0) bytes += 1 + 4;
  if (!c.verifier_reason().empty()) bytes += LenFieldBytes(c.verifier_reason().size());
  if (c.finish_reason() != 0) {
    bytes += 1 + VarintBytes(static_cast<uint64_t>(static_cast<int64_t>(c.finish_reason())));
  }
  return bytes;
}

size_t GroupHeadBytes(const rlvr::v1::RolloutGroup& g) {
  size_t bytes = 0;
  if (g.lease_id() != 0) bytes += 1 + VarintBytes(g.lease_id());
  if (!g.prompt_id().empty()) bytes += LenFieldBytes(g.prompt_id().size());
  if (g.policy_version() != 0) bytes += 1 + VarintBytes(g.policy_version());
  return bytes;
}

bool NoUnknownFields(const google::protobuf::Message& m) {
  return m.GetReflection()->GetUnknownFields(m).empty();
}

bool Covered(const rlvr::v1::RolloutGroup& g) {
  if (!NoUnknownFields(g)) return false;
  for (const rlvr::v1::Completion& c : g.completions()) {
    if (!NoUnknownFields(c)) return false;
  }
  return true;
}

}  // namespace

bool RolloutWire::Plan(const rlvr::v1::ActorMessage& message) {
  sizes_.clear();
  size_ = 0;
  batch_body_ = 0;
  if (!NoUnknownFields(message)) return false;
  const rlvr::v1::RolloutGroup* single = nullptr;
  const google::protobuf::RepeatedPtrField<rlvr::v1::RolloutGroup>* groups = nullptr;
  if (message.has_group()) {
    single = &message.group();
  } else if (message.has_group_batch()) {
    if (!NoUnknownFields(message.group_batch())) return false;
    groups = &message.group_batch().groups();
  } else {
    return false;
  }
  auto plan_group = [&](const rlvr::v1::RolloutGroup& g) -> size_t {
    const size_t slot = sizes_.size();
    sizes_.push_back(0);
    size_t body = GroupHeadBytes(g);
    for (const rlvr::v1::Completion& c : g.completions()) {
      const size_t ids = internal::PackedInt32Bytes(c.token_ids().data(), c.token_ids_size(),
                                                    /*allow_avx2=*/true);
      const size_t cbody = CompletionBodyBytes(c, ids);
      sizes_.push_back(static_cast<uint32_t>(cbody));
      sizes_.push_back(static_cast<uint32_t>(ids));
      body += LenFieldBytes(cbody);
    }
    if (Bits(g.generation_seconds()) != 0) body += 1 + 8;
    sizes_[slot] = static_cast<uint32_t>(body);
    return body;
  };
  if (single != nullptr) {
    if (!Covered(*single)) return false;
    size_ = LenFieldBytes(plan_group(*single));
  } else {
    size_t batch = 0;
    for (const rlvr::v1::RolloutGroup& g : *groups) {
      if (!Covered(g)) return false;
      batch += LenFieldBytes(plan_group(g));
    }
    batch_body_ = batch;
    size_ = LenFieldBytes(batch);
  }
  // Each body's length must fit the uint32 bookkeeping (messages are capped
  // far below 4 GiB by the learner's max_message_bytes).
  return size_ < (size_t{1} << 32);
}

uint8_t* RolloutWire::Write(const rlvr::v1::ActorMessage& message, uint8_t* out) const {
  size_t next = 0;  // Index into sizes_.
  auto write_group = [&](const rlvr::v1::RolloutGroup& g, int field, uint8_t* p) {
    p = PutTag(field, kLen, p);
    p = PutVarint(sizes_[next++], p);
    if (g.lease_id() != 0) p = PutVarint(g.lease_id(), PutTag(1, kVarint, p));
    if (!g.prompt_id().empty()) {
      p = PutVarint(g.prompt_id().size(), PutTag(2, kLen, p));
      std::memcpy(p, g.prompt_id().data(), g.prompt_id().size());
      p += g.prompt_id().size();
    }
    if (g.policy_version() != 0) p = PutVarint(g.policy_version(), PutTag(3, kVarint, p));
    for (const rlvr::v1::Completion& c : g.completions()) {
      const uint32_t cbody = sizes_[next++];
      const uint32_t ids = sizes_[next++];
      p = PutVarint(cbody, PutTag(4, kLen, p));
      if (c.token_ids_size() > 0) {
        p = PutVarint(ids, PutTag(1, kLen, p));
        p = PutPackedInt32(c.token_ids().data(), c.token_ids_size(), ids, p);
      }
      if (c.behaviour_logprobs_size() > 0) {
        const size_t bytes = 4 * static_cast<size_t>(c.behaviour_logprobs_size());
        p = PutVarint(bytes, PutTag(2, kLen, p));
        std::memcpy(p, c.behaviour_logprobs().data(), bytes);
        p += bytes;
      }
      if (const uint64_t r = Bits(c.reward()); r != 0) {
        p = PutTag(3, kFixed32, p);
        const uint32_t r32 = static_cast<uint32_t>(r);
        std::memcpy(p, &r32, 4);
        p += 4;
      }
      if (!c.verifier_reason().empty()) {
        p = PutVarint(c.verifier_reason().size(), PutTag(4, kLen, p));
        std::memcpy(p, c.verifier_reason().data(), c.verifier_reason().size());
        p += c.verifier_reason().size();
      }
      if (c.finish_reason() != 0) {
        p = PutVarint(static_cast<uint64_t>(static_cast<int64_t>(c.finish_reason())),
                      PutTag(5, kVarint, p));
      }
    }
    if (const uint64_t s = Bits(g.generation_seconds()); s != 0) {
      p = PutTag(5, kFixed64, p);
      std::memcpy(p, &s, 8);
      p += 8;
    }
    return p;
  };
  if (message.has_group()) return write_group(message.group(), 2, out);
  // ActorMessage.group_batch = 4, RolloutBatch.groups = 1.
  out = PutVarint(batch_body_, PutTag(4, kLen, out));
  for (const rlvr::v1::RolloutGroup& g : message.group_batch().groups()) {
    out = write_group(g, 1, out);
  }
  return out;
}

namespace internal {

size_t PackedInt32Bytes(const int32_t* ids, int n, bool allow_avx2) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2 && allow_avx2) return PackedInt32BytesAvx2(ids, n);
#endif
  return PackedInt32BytesBody(ids, n);
}

}  // namespace internal

}  // namespace rlvr::actor
