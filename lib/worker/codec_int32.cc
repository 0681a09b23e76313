// int32: unscaled on the wire (only the byte order changes); the switches'
// int32 sums are exact, and an average is the sum divided, rounding toward
// zero.
#include <algorithm>

#include "grid/numerics.h"
#include "worker/codec.h"

namespace grid::worker {
namespace {

absl::StatusOr<uint8_t> Exponent(const void*, size_t) { return uint8_t{0}; }

absl::Status Encode(const void* in, size_t n, uint8_t, int, uint8_t* payload) {
  numerics::Int32ToWire({static_cast<const int32_t*>(in), n}, payload);
  return absl::OkStatus();
}

absl::Status DecodeWide(const uint8_t* payload, size_t n, uint8_t, int, void* wide) {
  numerics::Int32FromWire(payload, {static_cast<int32_t*>(wide), n});
  return absl::OkStatus();
}

absl::Status Narrow(const void* wide, size_t n, int divisor, void* out) {
  const auto* w = static_cast<const int32_t*>(wide);
  auto* o = static_cast<int32_t*>(out);
  if (divisor == 1) {
    if (o != w) std::copy_n(w, n, o);
  } else {
    for (size_t i = 0; i < n; ++i) o[i] = w[i] / divisor;
  }
  return absl::OkStatus();
}

absl::Status Decode(const uint8_t* payload, size_t n, uint8_t exponent, int world, int divisor,
                    void* out) {
  (void)DecodeWide(payload, n, exponent, world, out);
  return Narrow(out, n, divisor, out);
}

}  // namespace

extern const Codec kInt32Codec;
const Codec kInt32Codec = {DataType::kInt32, 4, false, 0, Exponent, Encode, Decode, DecodeWide,
                           Narrow};

}  // namespace grid::worker
