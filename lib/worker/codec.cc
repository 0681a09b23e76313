#include "worker/codec.h"

namespace grid::worker {

// Each type's codec, defined in its own file.
extern const Codec kFloat32Codec, kInt32Codec, kBFloat16Codec, kFloat16Codec;

const Codec* CodecFor(DataType type) {
  for (const Codec* c : {&kFloat32Codec, &kInt32Codec, &kBFloat16Codec, &kFloat16Codec}) {
    if (c->type == type) return c;
  }
  return nullptr;
}

}  // namespace grid::worker
