// float32: quantized with a shared block exponent (docs/numerics.md).
#include "worker/codec_floats.h"

namespace grid::worker {
namespace {

void Same(const float*, size_t, float*) {}

}  // namespace

extern const Codec kFloat32Codec;
const Codec kFloat32Codec =
    codec_floats::FloatCodec<float, Same, Same>::Make(DataType::kFloat32);

}  // namespace grid::worker
