#include "nccl/codes.h"

namespace grid::nccl {

ncclResult_t FromStatus(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk:
      return ncclSuccess;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return ncclInvalidArgument;
    case absl::StatusCode::kFailedPrecondition:
      return ncclInvalidUsage;
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kAborted:
    case absl::StatusCode::kCancelled:
      return ncclRemoteError;  // another rank, a switch or the root did not answer
    case absl::StatusCode::kInternal:
      return ncclInternalError;
    default:
      return ncclSystemError;
  }
}

bool TypeOf(ncclDataType_t t, grid::DataType* out) {
  switch (t) {
    case ncclFloat32:
      *out = grid::DataType::kFloat32;
      return true;
    case ncclInt32:
      *out = grid::DataType::kInt32;
      return true;
    case ncclFloat16:
      *out = grid::DataType::kFloat16;
      return true;
    case ncclBfloat16:
      *out = grid::DataType::kBFloat16;
      return true;
    default:
      return false;
  }
}

}  // namespace grid::nccl
