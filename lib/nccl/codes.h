// Between NCCL's codes and libgrid's: a Status's result code, an NCCL
// datatype's grid::DataType.
#ifndef GRID_LIB_NCCL_CODES_H_
#define GRID_LIB_NCCL_CODES_H_

#include <string>

#include "absl/status/status.h"
#include "grid/nccl.h"
#include "grid/types.h"

namespace grid::nccl {

ncclResult_t FromStatus(const absl::Status& s);
// False for a type GRID does not aggregate.
bool TypeOf(ncclDataType_t t, grid::DataType* out);
// NCCL's names, for messages ("ncclFloat64", "ncclMax"); a value NCCL does
// not define is named by its number. They take int: a value outside the
// enum is what they must name, and loading it as the enum is undefined.
std::string TypeName(int type);
std::string OpName(int op);

}  // namespace grid::nccl

#endif  // GRID_LIB_NCCL_CODES_H_
