// Weights as data: the full parameter set as one flat, versioned, checksummed
// binary blob, used for checkpoints and for streaming weights to actors.
//
// Layout (little-endian): magic "RLVRWGT\0" (8 bytes), format version u32
// (=1), policy version u64, tensor count u32, then per tensor: name length
// u32, name bytes, dtype u8 (torch::ScalarType code), rank u32, dims i64 x
// rank, data length u64, raw contiguous data; finally CRC-32 (common/
// checksum.h) u32 over every preceding byte. Tensors appear in the model's
// named_parameters() order.
//
// Thread safety: SerializeWeights reads the parameters (no concurrent writer
// allowed); LoadWeights writes them (no concurrent reader or writer allowed).
// This header is torch-free; Transformer is defined in model.h.
#ifndef RLVR_COMMON_POLICY_WEIGHTS_H_
#define RLVR_COMMON_POLICY_WEIGHTS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/config/run_config.h"

namespace rlvr::policy {

class Transformer;  // model.h

// The blob of `model`'s parameters tagged with `version`, in the
// parameters' dtype; parameters on a CUDA device are copied to the CPU
// tensor by tensor.
std::string SerializeWeights(Transformer& model, uint64_t version);
// The same, written into `*out` (replacing its contents): a buffer whose
// capacity already fits the blob (an earlier version's) is reused, so its
// pages are not faulted in and zeroed again (12.5 vs 54.6 ms for a 135 MB
// model, bench/policy_bench [install]).
// With `chunk_crcs` not null, also the CRC-32 of each `chunk_bytes`-long
// chunk of the blob (0: 1 MiB, the publisher's default; the last chunk
// shorter) into `*chunk_crcs` (replacing its contents): the checksums
// learner::WeightPublisher sends with each chunk, given to Publish so that
// they are not computed during the transfer. Either way each block is
// checksummed as it is copied in, and the blob's CRC comes from the chunks'
// (no pass over the blob of its own).
void SerializeWeightsInto(Transformer& model, uint64_t version, std::string* out,
                          size_t chunk_bytes = 0, std::vector<uint32_t>* chunk_crcs = nullptr);

// Size of SerializeWeights(model, v) in bytes, without serializing.
uint64_t WeightsBlobBytes(Transformer& model);
// The same for any model of this shape, without building one.
uint64_t WeightsBlobBytes(const rlvr::ModelConfig& config, int vocab_size);

// Validates everything (magic, format version, length, checksum, the exact
// set of names, dtypes and shapes) before touching the model; on any error
// returns InvalidArgument/DataLoss with a clear message and the model is
// untouched. On success copies the values in and sets *version_out (may be
// null). Dtypes must match, except that a float32 blob loads into a
// bfloat16/float16 model (rounded to nearest: an actor computing in
// bfloat16). The model may live on a CUDA device.
absl::Status LoadWeights(absl::string_view blob, Transformer& model, uint64_t* version_out);

// The policy version of a blob after checking magic, format version and the
// header length only (no checksum: cheap).
absl::StatusOr<uint64_t> PeekWeightsVersion(absl::string_view blob);

// File helpers. SaveWeightsFile creates parent directories and writes
// atomically (temp file in the same directory, fsync, rename).
absl::Status SaveWeightsFile(const std::string& path, Transformer& model, uint64_t version);
absl::Status LoadWeightsFile(const std::string& path, Transformer& model, uint64_t* version_out);

}  // namespace rlvr::policy

#endif  // RLVR_COMMON_POLICY_WEIGHTS_H_
