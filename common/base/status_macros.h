// RETURN_IF_ERROR / ASSIGN_OR_RETURN for absl::Status and absl::StatusOr.
// Debian's Abseil (20220623) ships neither, so the project defines them once here.
#ifndef RLVR_COMMON_BASE_STATUS_MACROS_H_
#define RLVR_COMMON_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define RLVR_STATUS_CONCAT_INNER_(a, b) a##b
#define RLVR_STATUS_CONCAT_(a, b) RLVR_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status); returns it from the caller if not OK.
#define RETURN_IF_ERROR(expr)                    \
  do {                                           \
    ::absl::Status rlvr_status_ = (expr);        \
    if (!rlvr_status_.ok()) return rlvr_status_; \
  } while (0)

// ASSIGN_OR_RETURN(lhs, expr): evaluates `expr` (an absl::StatusOr<T>); on
// error returns its status, otherwise moves the value into `lhs`, which may be
// a declaration (`auto x`) or an existing variable.
#define ASSIGN_OR_RETURN(lhs, expr) \
  RLVR_ASSIGN_OR_RETURN_IMPL_(RLVR_STATUS_CONCAT_(rlvr_statusor_, __LINE__), lhs, expr)

#define RLVR_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr)   \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(statusor).value()

#endif  // RLVR_COMMON_BASE_STATUS_MACROS_H_
