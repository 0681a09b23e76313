// Internal: how each data type travels (docs/worker.md, "Data types"). A
// codec turns a chunk's elements into a payload and a result's payload back
// into elements, averaging and narrowing on the way, so no pass over a
// whole tensor follows the last chunk. The engine picks a type's codec once
// per wire operation and never branches on the type again; a chunk costs
// one indirect call, as the numerics kernels do.
//
// A new data type is one file (codec_<type>.cc, defining its Codec) and one
// line in CodecFor (codec.cc).
#ifndef GRID_LIB_WORKER_CODEC_H_
#define GRID_LIB_WORKER_CODEC_H_

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grid/types.h"

namespace grid::worker {

struct Codec {
  DataType type;
  size_t element_bytes;
  // Quantized types go as int32 scaled by an agreed block exponent (probes
  // and proposals); the others as they are.
  bool quantized;
  uint8_t max_exponent;  // numerics::MaxBlockExponent(type)

  // The block exponent of the n elements at `in` (quantized types).
  absl::StatusOr<uint8_t> (*exponent)(const void* in, size_t n);
  // The n elements at `in` into a chunk's payload (n <= wire::kMaxElements).
  absl::Status (*encode)(const void* in, size_t n, uint8_t exponent, int world, uint8_t* payload);
  // A result's n elements into the n elements at `out`, each divided by
  // `divisor` (1: the sum; the world size: the average).
  absl::Status (*decode)(const uint8_t* payload, size_t n, uint8_t exponent, int world,
                         int divisor, void* out);
  // For fused operations, whose pieces may average or not: a result's n
  // elements in their wide form (float for quantized types, int32 else) at
  // `wide`, and later those into the type, divided by `divisor` (Narrow).
  absl::Status (*decode_wide)(const uint8_t* payload, size_t n, uint8_t exponent, int world,
                              void* wide);
  absl::Status (*narrow)(const void* wide, size_t n, int divisor, void* out);
};

// Bytes of a wide element (float or int32).
inline constexpr size_t kWideBytes = 4;

// The codec of `type`; null for a type no codec was registered for.
const Codec* CodecFor(DataType type);

}  // namespace grid::worker

#endif  // GRID_LIB_WORKER_CODEC_H_
