// Internal: the codec of a floating-point type, built from its conversion
// to and from float32 (codec_float32.cc, codec_bfloat16.cc,
// codec_float16.cc): float32 is quantized straight from and to the caller's
// buffer; narrower types pass through a chunk's worth of floats on the stack.
#ifndef GRID_LIB_WORKER_CODEC_FLOATS_H_
#define GRID_LIB_WORKER_CODEC_FLOATS_H_

#include <algorithm>
#include <type_traits>

#include "grid/numerics.h"
#include "grid/wire.h"
#include "worker/codec.h"

namespace grid::worker::codec_floats {

// `Widen(in, n, out)` and `Narrow(in, n, out)` convert n elements between
// the type and float32.
template <typename Elem, void (*Widen)(const Elem*, size_t, float*),
          void (*Narrow)(const float*, size_t, Elem*)>
struct FloatCodec {
  static constexpr bool kIsFloat32 = std::is_same_v<Elem, float>;

  // The n elements at `in` as floats: `in` itself, or widened into `scratch`.
  static const float* Floats(const void* in, size_t n, float* scratch) {
    if constexpr (kIsFloat32) return static_cast<const float*>(in);
    Widen(static_cast<const Elem*>(in), n, scratch);
    return scratch;
  }
  static absl::StatusOr<uint8_t> Exponent(const void* in, size_t n) {
    float scratch[kIsFloat32 ? 1 : wire::kMaxElements];
    return numerics::BlockExponent({Floats(in, n, scratch), n});
  }
  static absl::Status Encode(const void* in, size_t n, uint8_t exponent, int world,
                             uint8_t* payload) {
    float scratch[kIsFloat32 ? 1 : wire::kMaxElements];
    return numerics::QuantizeToWire({Floats(in, n, scratch), n}, exponent, world, payload);
  }
  static absl::Status DecodeWide(const uint8_t* payload, size_t n, uint8_t exponent, int world,
                                 void* wide) {
    return numerics::DequantizeFromWire(payload, exponent, world,
                                        {static_cast<float*>(wide), n});
  }
  // The average as float(double(x) / divisor), as it always was.
  static void Divide(float* x, size_t n, int divisor) {
    if (divisor == 1) return;
    const double d = divisor;
    for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] / d);
  }
  static absl::Status Narrow1(const void* wide, size_t n, int divisor, void* out) {
    if constexpr (kIsFloat32) {
      float* o = static_cast<float*>(out);
      if (o != wide) std::copy_n(static_cast<const float*>(wide), n, o);
      Divide(o, n, divisor);
    } else {
      float scratch[wire::kMaxElements];
      const auto* w = static_cast<const float*>(wide);
      // In chunk-sized steps: a fused piece may be longer than a chunk.
      for (size_t at = 0; at < n; at += wire::kMaxElements) {
        const size_t m = std::min<size_t>(wire::kMaxElements, n - at);
        std::copy_n(w + at, m, scratch);
        Divide(scratch, m, divisor);
        Narrow(scratch, m, static_cast<Elem*>(out) + at);
      }
    }
    return absl::OkStatus();
  }
  static absl::Status Decode(const uint8_t* payload, size_t n, uint8_t exponent, int world,
                             int divisor, void* out) {
    if constexpr (kIsFloat32) {
      absl::Status s = DecodeWide(payload, n, exponent, world, out);
      Divide(static_cast<float*>(out), n, divisor);
      return s;
    } else {
      float scratch[wire::kMaxElements];
      absl::Status s = DecodeWide(payload, n, exponent, world, scratch);
      (void)Narrow1(scratch, n, divisor, out);
      return s;
    }
  }

  static constexpr Codec Make(DataType type) {
    return Codec{type,    sizeof(Elem), true,       numerics::MaxBlockExponent(type),
                 Exponent, Encode,      Decode,     DecodeWide,
                 Narrow1};
  }
};

}  // namespace grid::worker::codec_floats

#endif  // GRID_LIB_WORKER_CODEC_FLOATS_H_
