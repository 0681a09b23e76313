// Element types, shared by the public API.
#ifndef GRID_TYPES_H_
#define GRID_TYPES_H_

#include <cstddef>
#include <cstdint>

#include "grid/export.h"

GRID_API_BEGIN

namespace grid {

enum class DataType : uint8_t {
  kFloat32 = 0,
  kInt32 = 1,
  kBFloat16 = 2,
  kFloat16 = 3,
};

constexpr size_t DataTypeSize(DataType type) {
  switch (type) {
    case DataType::kFloat32:
    case DataType::kInt32:
      return 4;
    case DataType::kBFloat16:
    case DataType::kFloat16:
      return 2;
  }
  return 0;
}

constexpr const char* DataTypeName(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return "float32";
    case DataType::kInt32:
      return "int32";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kFloat16:
      return "float16";
  }
  return "unknown";
}

}  // namespace grid

GRID_API_END

#endif  // GRID_TYPES_H_
