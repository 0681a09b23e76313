#include "nccl/codes.h"

#include "absl/strings/str_format.h"

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

std::string TypeName(int t) {
  // The first name of each value (ncclInt8 over ncclChar, ncclFloat32 over ncclFloat).
  switch (t) {
    case ncclInt8:
      return "ncclInt8";
    case ncclUint8:
      return "ncclUint8";
    case ncclInt32:
      return "ncclInt32";
    case ncclUint32:
      return "ncclUint32";
    case ncclInt64:
      return "ncclInt64";
    case ncclUint64:
      return "ncclUint64";
    case ncclFloat16:
      return "ncclFloat16";
    case ncclFloat32:
      return "ncclFloat32";
    case ncclFloat64:
      return "ncclFloat64";
    case ncclBfloat16:
      return "ncclBfloat16";
    default:
      return absl::StrFormat("datatype %d", t);
  }
}

std::string OpName(int op) {
  switch (op) {
    case ncclSum:
      return "ncclSum";
    case ncclProd:
      return "ncclProd";
    case ncclMax:
      return "ncclMax";
    case ncclMin:
      return "ncclMin";
    case ncclAvg:
      return "ncclAvg";
    default:
      return absl::StrFormat("op %d", op);
  }
}

}  // namespace grid::nccl
