// Encodes one quantized packet and decodes it again through the installed
// library; exits non-zero if anything disagrees.
#include <cstdio>
#include <vector>

#include "grid/numerics.h"
#include "grid/wire.h"

int main() {
  const std::vector<float> values = {0.5f, -1.25f, 3.0f};
  auto exponent = grid::numerics::BlockExponent(values);
  if (!exponent.ok()) return 1;
  grid::wire::Header header;
  header.num_elements = static_cast<uint16_t>(values.size());
  header.exponent = *exponent;
  std::vector<uint8_t> frame(grid::wire::FrameBytes(header.num_elements));
  if (!grid::wire::WriteFrameHeaders({}, header, absl::MakeSpan(frame)).ok()) return 2;
  if (!grid::numerics::QuantizeToWire(values, *exponent, 1,
                                      frame.data() + grid::wire::kPayloadOffset)
           .ok())
    return 3;
  auto view = grid::wire::DecodeFrame(frame);
  if (!view.ok()) return 4;
  std::vector<float> out(values.size());
  if (!grid::numerics::DequantizeFromWire(view->payload, view->header.exponent, 1,
                                          absl::MakeSpan(out))
           .ok())
    return 5;
  if (out != values) return 6;
  std::printf("consumer: round trip ok\n");
  return 0;
}
