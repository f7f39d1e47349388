// The generic publishing of the ingest's figures, driven by the one
// definition, proto/rlvr/v1/ingest.proto: every field of IngestSnapshot says
// in its `ingest` option which LearnerStatus field it fills and which
// metrics.jsonl key receives its per-update increase. Nothing here names a
// field.
//
// The definition is read once, at the first call, and checked (a status field
// that LearnerStatus lacks or that has another type, a delta of a field that
// is no uint64 counter: a programming error, fatal). Thread safety:
// thread-compatible; the functions are pure (the cached definition is
// immutable).
#ifndef RLVR_LEARNER_DIAGNOSTICS_INGEST_SNAPSHOT_H_
#define RLVR_LEARNER_DIAGNOSTICS_INGEST_SNAPSHOT_H_

#include <nlohmann/json_fwd.hpp>

#include "rlvr/v1/ingest.pb.h"

namespace rlvr::v1 {
class LearnerStatus;
}  // namespace rlvr::v1

namespace rlvr::learner {

using rlvr::v1::IngestSnapshot;

// Sets every LearnerStatus field named by a `status` option to its figure.
void IngestToStatus(const IngestSnapshot& snapshot, rlvr::v1::LearnerStatus* status);

// Writes now - before of every counter with a `json_delta` key into `*line`
// ("a.b" into the object at "a", next to what is there). `before` is the
// snapshot taken at the previous line (empty at the first).
void IngestDeltasToJson(const IngestSnapshot& now, const IngestSnapshot& before,
                        nlohmann::json* line);

}  // namespace rlvr::learner

#endif  // RLVR_LEARNER_DIAGNOSTICS_INGEST_SNAPSHOT_H_
