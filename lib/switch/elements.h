// Internal: the switch's element loops over big-endian payloads: load, add
// with overflow detection, store. AVX2 where the CPU has it, scalar
// otherwise; both give identical results (tests/switch/pipeline_test.cc).
#ifndef GRID_LIB_SWITCH_ELEMENTS_H_
#define GRID_LIB_SWITCH_ELEMENTS_H_

#include <cstddef>
#include <cstdint>

namespace grid::sw::internal {

void LoadElements(int32_t* out, const uint8_t* payload, size_t n);
// acc[i] += payload[i] (int32, wrapping); true if any sum wrapped.
bool AddElements(int32_t* acc, const uint8_t* payload, size_t n);
void StoreElements(uint8_t* payload, const int32_t* in, size_t n);

bool AddElementsScalar(int32_t* acc, const uint8_t* payload, size_t n);
bool AddElementsAvx2(int32_t* acc, const uint8_t* payload, size_t n);

}  // namespace grid::sw::internal

#endif  // GRID_LIB_SWITCH_ELEMENTS_H_
