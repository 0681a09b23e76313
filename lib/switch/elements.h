// Internal: the switch's add of a big-endian payload into a slot copy, with
// overflow detection. AVX2 where the CPU has it, scalar otherwise; both give
// identical results (tests/switch/pipeline_test.cc). Loading and storing
// payloads is numerics::Int32FromWire / Int32ToWire.
#ifndef GRID_LIB_SWITCH_ELEMENTS_H_
#define GRID_LIB_SWITCH_ELEMENTS_H_

#include <cstddef>
#include <cstdint>

namespace grid::sw::internal {

// acc[i] += payload[i] (int32, wrapping); true if any sum wrapped.
bool AddElements(int32_t* acc, const uint8_t* payload, size_t n);

bool AddElementsScalar(int32_t* acc, const uint8_t* payload, size_t n);
bool AddElementsAvx2(int32_t* acc, const uint8_t* payload, size_t n);

}  // namespace grid::sw::internal

#endif  // GRID_LIB_SWITCH_ELEMENTS_H_
