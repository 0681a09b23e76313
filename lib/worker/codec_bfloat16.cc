// bfloat16: widened to float32 a chunk at a time, quantized as float32, and
// the result narrowed back (round to nearest even).
#include "worker/codec_floats.h"

namespace grid::worker {
namespace {

void Widen(const uint16_t* in, size_t n, float* out) { numerics::BFloat16ToFloat({in, n}, {out, n}); }
void Narrow(const float* in, size_t n, uint16_t* out) { numerics::FloatToBFloat16({in, n}, {out, n}); }

}  // namespace

extern const Codec kBFloat16Codec;
const Codec kBFloat16Codec =
    codec_floats::FloatCodec<uint16_t, Widen, Narrow>::Make(DataType::kBFloat16);

}  // namespace grid::worker
