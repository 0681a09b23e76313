// float16 (IEEE half): widened to float32 a chunk at a time, quantized as
// float32, and the result narrowed back (a sum beyond 65504 becomes Inf, as
// NCCL's does; docs/numerics.md).
#include "worker/codec_floats.h"

namespace grid::worker {
namespace {

void Widen(const uint16_t* in, size_t n, float* out) { numerics::HalfToFloat({in, n}, {out, n}); }
void Narrow(const float* in, size_t n, uint16_t* out) { numerics::FloatToHalf({in, n}, {out, n}); }

}  // namespace

extern const Codec kFloat16Codec;
const Codec kFloat16Codec =
    codec_floats::FloatCodec<uint16_t, Widen, Narrow>::Make(DataType::kFloat16);

}  // namespace grid::worker
