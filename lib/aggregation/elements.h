// Adding a big-endian payload into a copy's int32 values, with overflow
// detection: the arithmetic of every aggregation node (the switch pipeline and
// the root). AVX2 where the CPU has it, scalar otherwise; both give identical
// results (tests/switch/pipeline_test.cc). Loading and storing payloads is
// numerics::Int32FromWire / Int32ToWire.
#ifndef GRID_LIB_AGGREGATION_ELEMENTS_H_
#define GRID_LIB_AGGREGATION_ELEMENTS_H_

#include <cstddef>
#include <cstdint>

namespace grid::aggregation {

// acc[i] += payload[i] (int32, wrapping); true if any sum wrapped.
bool AddElements(int32_t* acc, const uint8_t* payload, size_t n);

bool AddElementsScalar(int32_t* acc, const uint8_t* payload, size_t n);
bool AddElementsAvx2(int32_t* acc, const uint8_t* payload, size_t n);

}  // namespace grid::aggregation

#endif  // GRID_LIB_AGGREGATION_ELEMENTS_H_
