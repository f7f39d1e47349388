#include "learner/rollout_decoder.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <google/protobuf/io/coded_stream.h>

namespace rlvr::learner {
namespace {

using google::protobuf::io::CodedOutputStream;

// Field numbers and wire types of the messages read here (session.proto,
// rollout.proto).
constexpr uint32_t kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5;
constexpr uint32_t kActorHello = 1, kActorGroup = 2, kActorReturnLeases = 3, kActorGroupBatch = 4;
constexpr uint32_t kBatchGroups = 1;
constexpr uint32_t kGroupLeaseId = 1, kGroupPromptId = 2, kGroupPolicyVersion = 3,
                   kGroupCompletions = 4, kGroupGenerationSeconds = 5;
constexpr uint32_t kCompletionTokenIds = 1, kCompletionLogprobs = 2, kCompletionReward = 3,
                   kCompletionVerifierReason = 4, kCompletionFinishReason = 5;

// The varint, tag and skip rules both readers below share, over the bytes
// `Self` gives (Next, Advance, Delimited). Every method returns false where
// protobuf might judge the bytes differently; the caller declines.
template <typename Self>
class WireRules {
 public:
  // At most 10 bytes, as protobuf reads them (bits past 64 dropped).
  bool Varint(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      uint8_t b;
      if (!self().Next(&b)) return false;
      result |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (b < 0x80) {
        *v = result;
        return true;
      }
    }
    return false;
  }

  // A tag or a length: at most 5 bytes, the last below `last_limit`, as
  // protobuf reads them (it refuses a longer, padded encoding).
  bool Varint32(uint8_t last_limit, uint32_t* v) {
    uint32_t result = 0;
    for (int i = 0; i < 5; ++i) {
      uint8_t b;
      if (!self().Next(&b)) return false;
      if (i == 4 && b >= last_limit) return false;
      result |= static_cast<uint32_t>(b & 0x7f) << (7 * i);
      if (b < 0x80) {
        *v = result;
        return true;
      }
    }
    return false;
  }

  // A tag with a field number >= 1 and a wire type this reader can skip
  // (not the deprecated group types).
  bool Tag(uint32_t* field, uint32_t* wire_type) {
    uint32_t tag;
    if (!Varint32(/*last_limit=*/16, &tag)) return false;
    *field = static_cast<uint32_t>(tag >> 3);
    *wire_type = static_cast<uint32_t>(tag & 7);
    return *field != 0 && (*wire_type == kVarint || *wire_type == kFixed64 ||
                           *wire_type == kLengthDelimited || *wire_type == kFixed32);
  }

  bool Skip(uint32_t wire_type) {
    uint64_t v;
    Self inner;
    switch (wire_type) {
      case kVarint:
        return Varint(&v);
      case kFixed64:
        return self().Advance(8);
      case kLengthDelimited:
        return self().Delimited(&inner);
      case kFixed32:
        return self().Advance(4);
      default:
        return false;
    }
  }

 private:
  Self& self() { return static_cast<Self&>(*this); }
};

// A bounded reader over contiguous bytes: a group and everything in it.
class Reader : public WireRules<Reader> {
 public:
  Reader() = default;
  Reader(const uint8_t* p, const uint8_t* end) : p_(p), end_(end) {}
  bool done() const { return p_ == end_; }

  bool Next(uint8_t* b) {
    if (p_ == end_) return false;
    *b = *p_++;
    return true;
  }

  // The payload of a length-delimited field.
  bool Delimited(Reader* inner) {
    uint32_t n;
    if (!Varint32(/*last_limit=*/8, &n) || n > static_cast<uint64_t>(end_ - p_)) return false;
    *inner = Reader(p_, p_ + n);
    p_ += n;
    return true;
  }

  bool Fixed32(uint32_t* v) {
    const uint8_t* at = p_;
    if (!Advance(4)) return false;
    std::memcpy(v, at, 4);  // Little-endian, as x86 and aarch64 are.
    return true;
  }

  bool Advance(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) return false;
    p_ += n;
    return true;
  }

  // The bytes left, already contiguous (as PieceReader::Contiguous).
  Reader Contiguous(std::string* /*joined*/) const { return *this; }

  const uint8_t* begin() const { return p_; }
  const uint8_t* end() const { return end_; }
  size_t size() const { return static_cast<size_t>(end_ - p_); }

 private:
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
};

// A bounded reader over a message held in pieces (gRPC's slices), in
// order. Only the envelope is read through it: the kind field and a batch's
// group headers, a few bytes per group. Each group's bytes are then handed
// to a Reader (Contiguous): in place when one piece holds them all, which
// is most groups, so the message is not joined into one copy first.
class PieceReader : public WireRules<PieceReader> {
 public:
  PieceReader() = default;
  explicit PieceReader(std::span<const std::string_view> pieces) : pieces_(pieces.data()) {
    for (const std::string_view& piece : pieces) left_ += piece.size();
  }
  bool done() const { return left_ == 0; }

  bool Next(uint8_t* b) {
    if (left_ == 0) return false;
    Settle();
    *b = static_cast<uint8_t>(pieces_[piece_][at_++]);
    --left_;
    return true;
  }

  bool Advance(size_t n) {
    if (n > left_) return false;
    Walk(n, [](const char*, size_t) {});
    return true;
  }

  bool Delimited(PieceReader* inner) {
    uint32_t n;
    if (!Varint32(/*last_limit=*/8, &n) || n > left_) return false;
    *inner = *this;
    inner->left_ = n;
    return Advance(n);
  }

  // The bytes left as one Reader: in place where one piece holds them,
  // else copied into *joined (valid until its next use).
  Reader Contiguous(std::string* joined) const {
    if (left_ == 0) return Reader();
    PieceReader from = *this;
    from.Settle();
    const std::string_view piece = from.pieces_[from.piece_].substr(from.at_);
    if (piece.size() >= left_) {
      const auto* p = reinterpret_cast<const uint8_t*>(piece.data());
      return Reader(p, p + left_);
    }
    joined->clear();
    from.Walk(from.left_, [joined](const char* run, size_t n) { joined->append(run, n); });
    const auto* p = reinterpret_cast<const uint8_t*>(joined->data());
    return Reader(p, p + joined->size());
  }

 private:
  // Moves past the next `n` bytes (at most those left), handing each run of
  // them that lies in one piece to `visit`.
  template <typename Visit>
  void Walk(size_t n, Visit&& visit) {
    left_ -= n;
    while (n > 0) {
      Settle();
      const size_t run = std::min(n, pieces_[piece_].size() - at_);
      visit(pieces_[piece_].data() + at_, run);
      at_ += run;
      n -= run;
    }
  }

  // Moves past used-up (or empty) pieces. Called only while bytes are
  // left, so a piece that holds one follows.
  void Settle() {
    while (at_ == pieces_[piece_].size()) {
      ++piece_;
      at_ = 0;
    }
  }

  const std::string_view* pieces_ = nullptr;
  size_t piece_ = 0;  // The piece being read, and the offset in it.
  size_t at_ = 0;
  size_t left_ = 0;  // Bytes left to this reader (across pieces).
};

static_assert(std::endian::native == std::endian::little, "the wire is little-endian");
static_assert(sizeof(Rollout) == 2 * sizeof(std::vector<int>) + sizeof(double),
              "a field was added to Rollout: set it in DecodeCompletion and ConvertRolloutGroup");

// Protobuf rejects a proto3 string that is not UTF-8; ASCII always is one.
bool IsAscii(const Reader& r) {
  uint8_t any = 0;
  for (const uint8_t* p = r.begin(); p != r.end(); ++p) any |= *p;
  return any < 0x80;
}

#if defined(__x86_64__)
#define RLVR_AVX2_TARGET __attribute__((target("avx2")))

// Widens 32-byte blocks of one-byte varints (no byte >= 0x80) into ints,
// as long as they last; returns the bytes consumed (= ints written).
RLVR_AVX2_TARGET size_t WidenOneByteIdsAvx2(const uint8_t* p, size_t n, int* dst) {
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    if (_mm256_movemask_epi8(v) != 0) break;
    const __m128i lo = _mm256_castsi256_si128(v);
    const __m128i hi = _mm256_extracti128_si256(v, 1);
    auto* out = reinterpret_cast<__m256i*>(dst + i);
    _mm256_storeu_si256(out, _mm256_cvtepu8_epi32(lo));
    _mm256_storeu_si256(out + 1, _mm256_cvtepu8_epi32(_mm_srli_si128(lo, 8)));
    _mm256_storeu_si256(out + 2, _mm256_cvtepu8_epi32(hi));
    _mm256_storeu_si256(out + 3, _mm256_cvtepu8_epi32(_mm_srli_si128(hi, 8)));
  }
  return i;
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
#endif

// Makes room for `n` more elements after the first `used` of `out`. The
// vector keeps the size of its slot's last group (recycled groups have the
// same shapes), and grows only when that is too small: resize() value-
// initialises what it adds, a pass over memory that is then overwritten
// (memset was ~2.5% of a one-stream ingest profile). The caller trims the
// vector to what it used once the completion is decoded.
template <typename T>
T* Room(std::vector<T>* out, size_t used, size_t n) {
  if (out->size() < used + n) out->resize(used + n);
  return out->data() + used;
}

// Appends a packed run of int32 varints at (*out)[*used], advancing *used.
// One-byte ids (every id of a vocabulary below 128, and most bytes of many
// runs) are widened 32 at a time with AVX2 where the CPU has it, else eight
// at a time.
bool AppendPackedInt32(Reader r, std::vector<int>* out, size_t* used) {
  int* const begin = Room(out, *used, r.size());  // A varint is at least one byte.
  int* dst = begin;
  const uint8_t* p = r.begin();
  const uint8_t* const end = r.end();
#if defined(__x86_64__)
  if (HasAvx2()) {
    const size_t n = WidenOneByteIdsAvx2(p, r.size(), dst);
    p += n;
    dst += n;
  }
#endif
  while (p != end) {
    if (end - p >= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        for (int k = 0; k < 8; ++k) dst[k] = static_cast<int>((w >> (8 * k)) & 0xff);
        dst += 8;
        p += 8;
        continue;
      }
    }
    Reader one(p, end);
    uint64_t v;
    if (!one.Varint(&v)) return false;
    *dst++ = static_cast<int>(static_cast<uint32_t>(v));  // int32 keeps the low 32 bits.
    p = one.begin();
  }
  *used += static_cast<size_t>(dst - begin);
  return true;
}

// The same for a packed run of floats.
bool AppendPackedFloat(Reader r, std::vector<float>* out, size_t* used) {
  if (r.size() % 4 != 0) return false;
  if (r.size() == 0) return true;  // memcpy may not be given a null pointer.
  std::memcpy(Room(out, *used, r.size() / 4), r.begin(), r.size());
  *used += r.size() / 4;
  return true;
}

// A completion's fields; its ids and log-probs fill the first *tokens and
// *logprobs elements of its vectors.
bool DecodeCompletionFields(Reader r, Rollout* out, size_t* tokens, size_t* logprobs) {
  out->reward = 0.0;
  while (!r.done()) {
    uint32_t field, wire_type;
    if (!r.Tag(&field, &wire_type)) return false;
    Reader inner;
    uint64_t v;
    uint32_t bits;
    switch (field) {
      case kCompletionTokenIds:
        // The unpacked encoding (wire type 0) is legal but never written
        // by protobuf for proto3: leave it to protobuf.
        if (wire_type != kLengthDelimited || !r.Delimited(&inner) ||
            !AppendPackedInt32(inner, &out->tokens, tokens)) {
          return false;
        }
        break;
      case kCompletionLogprobs:
        if (wire_type != kLengthDelimited || !r.Delimited(&inner) ||
            !AppendPackedFloat(inner, &out->behaviour_logprobs, logprobs)) {
          return false;
        }
        break;
      case kCompletionReward: {
        if (wire_type != kFixed32 || !r.Fixed32(&bits)) return false;
        float reward;
        std::memcpy(&reward, &bits, 4);
        out->reward = reward;
        break;
      }
      case kCompletionVerifierReason:
        if (wire_type != kLengthDelimited || !r.Delimited(&inner) || !IsAscii(inner)) return false;
        break;
      case kCompletionFinishReason:
        if (wire_type != kVarint || !r.Varint(&v)) return false;
        break;
      default:
        if (!r.Skip(wire_type)) return false;
    }
  }
  return true;
}

// Decodes one completion into `out`, whose vectors are reused (see Room).
bool DecodeCompletion(Reader r, Rollout* out) {
  size_t tokens = 0;
  size_t logprobs = 0;
  const bool ok = DecodeCompletionFields(r, out, &tokens, &logprobs);
  out->tokens.resize(tokens);  // Shrinking writes nothing.
  out->behaviour_logprobs.resize(logprobs);
  return ok;
}

// `scratch` receives completions past the limit: they are read (a
// malformed one must still decline) but not kept.
bool DecodeGroup(Reader r, int max_completions, ReceivedGroup* out, Rollout* scratch) {
  Group& g = out->group;
  g.lease_id = 0;
  g.prompt_id.clear();
  g.policy_version = 0;
  out->completions = 0;
  out->message_bytes = 1 + CodedOutputStream::VarintSize64(r.size()) + r.size();
  size_t kept = 0;
  while (!r.done()) {
    uint32_t field, wire_type;
    if (!r.Tag(&field, &wire_type)) return false;
    Reader inner;
    switch (field) {
      case kGroupLeaseId:
        if (wire_type != kVarint || !r.Varint(&g.lease_id)) return false;
        break;
      case kGroupPromptId:
        if (wire_type != kLengthDelimited || !r.Delimited(&inner) || !IsAscii(inner)) return false;
        g.prompt_id.assign(reinterpret_cast<const char*>(inner.begin()), inner.size());
        break;
      case kGroupPolicyVersion:
        if (wire_type != kVarint || !r.Varint(&g.policy_version)) return false;
        break;
      case kGroupCompletions: {
        if (wire_type != kLengthDelimited || !r.Delimited(&inner)) return false;
        Rollout* dst = scratch;
        if (out->completions < max_completions) {
          if (kept == g.rollouts.size()) g.rollouts.emplace_back();
          dst = &g.rollouts[kept++];
        }
        if (!DecodeCompletion(inner, dst)) return false;
        ++out->completions;
        break;
      }
      case kGroupGenerationSeconds:
        if (wire_type != kFixed64 || !r.Skip(wire_type)) return false;
        break;
      default:
        if (!r.Skip(wire_type)) return false;
    }
  }
  g.rollouts.resize(kept);
  return true;
}

// The slot for the next group, reusing an earlier call's.
ReceivedGroup* Slot(std::vector<ReceivedGroup>* out, size_t index) {
  if (index == out->size()) out->emplace_back();
  return &(*out)[index];
}

// Whether the message's group_batch holds more than `max_groups` groups,
// judged from the field headers alone, as protobuf would assemble it: the
// groups of repeated group_batch fields add up, and another member of the
// kind oneof discards them (so the whole message is scanned: it allocates
// nothing). At a malformed header the scan stops and judges the groups so
// far.
template <typename R>
bool MoreGroupsThan(R r, size_t max_groups) {
  size_t groups = 0;
  while (!r.done()) {
    uint32_t field, wire_type;
    R inner;
    if (!r.Tag(&field, &wire_type)) break;
    if (field != kActorGroupBatch || wire_type != kLengthDelimited) {
      const bool other_kind =
          field == kActorHello || field == kActorGroup || field == kActorReturnLeases;
      if (other_kind && wire_type == kLengthDelimited) groups = 0;
      if (!r.Skip(wire_type)) break;
      continue;
    }
    if (!r.Delimited(&inner)) break;
    while (!inner.done()) {
      uint32_t f, w;
      if (!inner.Tag(&f, &w) || !inner.Skip(w)) break;
      // Field 1 of another wire type is an unknown field to protobuf.
      if (f == kBatchGroups && w == kLengthDelimited) ++groups;
    }
  }
  return groups > max_groups;
}

// The message's envelope, read through `R` (Reader or PieceReader); each
// group is decoded from a contiguous Reader.
template <typename R>
DecodeOutcome DecodeEnvelope(R r, const DecodeLimits& limits, std::vector<ReceivedGroup>* out,
                             size_t* count, std::string* joined) {
  if (MoreGroupsThan(r, limits.max_groups)) return DecodeOutcome::kTooManyGroups;
  const int max_completions = std::max(limits.max_completions, 0);
  Rollout scratch;
  DecodeOutcome outcome = DecodeOutcome::kDecline;
  *count = 0;
  while (!r.done()) {
    uint32_t field, wire_type;
    if (!r.Tag(&field, &wire_type)) return DecodeOutcome::kDecline;
    if (field != kActorGroup && field != kActorGroupBatch) {
      // Hello and ReturnLeases are protobuf's; unknown fields are skipped.
      if (field == kActorHello || field == kActorReturnLeases || !r.Skip(wire_type)) {
        return DecodeOutcome::kDecline;
      }
      continue;
    }
    // A second kind field merges into or replaces the first: protobuf's call.
    R inner;
    if (outcome != DecodeOutcome::kDecline || wire_type != kLengthDelimited ||
        !r.Delimited(&inner)) {
      return DecodeOutcome::kDecline;
    }
    if (field == kActorGroup) {
      if (!DecodeGroup(inner.Contiguous(joined), max_completions, Slot(out, 0), &scratch)) {
        return DecodeOutcome::kDecline;
      }
      *count = 1;
      outcome = DecodeOutcome::kGroup;
      continue;
    }
    while (!inner.done()) {
      uint32_t f, w;
      R group;
      if (!inner.Tag(&f, &w)) return DecodeOutcome::kDecline;
      if (f != kBatchGroups) {
        if (!inner.Skip(w)) return DecodeOutcome::kDecline;
        continue;
      }
      if (w != kLengthDelimited || !inner.Delimited(&group) ||
          !DecodeGroup(group.Contiguous(joined), max_completions, Slot(out, *count), &scratch)) {
        return DecodeOutcome::kDecline;
      }
      ++*count;
    }
    outcome = DecodeOutcome::kBatch;
  }
  return outcome;
}

}  // namespace

DecodeOutcome DecodeRolloutMessage(std::string_view wire, const DecodeLimits& limits,
                                   std::vector<ReceivedGroup>* out, size_t* count) {
  const auto* p = reinterpret_cast<const uint8_t*>(wire.data());
  return DecodeEnvelope(Reader(p, p + wire.size()), limits, out, count, /*joined=*/nullptr);
}

DecodeOutcome DecodeRolloutMessage(std::span<const std::string_view> pieces,
                                   const DecodeLimits& limits, std::vector<ReceivedGroup>* out,
                                   size_t* count, std::string* joined) {
  if (pieces.size() == 1) return DecodeRolloutMessage(pieces[0], limits, out, count);
  return DecodeEnvelope(PieceReader(pieces), limits, out, count, joined);
}

void ConvertRolloutGroup(const rlvr::v1::RolloutGroup& group, int max_completions,
                         size_t message_bytes, ReceivedGroup* out) {
  Group& g = out->group;
  g.lease_id = group.lease_id();
  g.prompt_id.assign(group.prompt_id());
  g.policy_version = group.policy_version();
  out->completions = group.completions_size();
  out->message_bytes = message_bytes;
  const int kept = std::clamp(group.completions_size(), 0, std::max(max_completions, 0));
  g.rollouts.resize(static_cast<size_t>(kept));
  for (int i = 0; i < kept; ++i) {
    const rlvr::v1::Completion& c = group.completions(i);
    Rollout& r = g.rollouts[static_cast<size_t>(i)];
    // Through pointers: protobuf's repeated-field iterators are not raw
    // pointers, and assign() would copy them one element at a time.
    const auto& ids = c.token_ids();
    const auto& logprobs = c.behaviour_logprobs();
    r.tokens.assign(ids.data(), ids.data() + ids.size());
    r.behaviour_logprobs.assign(logprobs.data(), logprobs.data() + logprobs.size());
    r.reward = c.reward();
  }
}

}  // namespace rlvr::learner
