// Writes one valid frame and one valid datagram per message type into the
// directory given, as the fuzzers' seed corpus.
#include <cstdio>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "grid/wire.h"

int main(int argc, char** argv) {
  using namespace grid::wire;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) return 1;
  for (uint8_t t = kMinMessageType; t <= kMaxMessageType; ++t) {
    Header h;
    h.type = static_cast<MessageType>(t);
    h.flags = flags::kCopy;
    h.job_id = 7;
    h.job_token = 0x01020304;
    h.fan_in = 3;
    h.num_elements = t <= 3 ? 4 : 0;
    std::vector<uint8_t> payload(h.num_elements * kElementBytes, 0x11);
    std::vector<uint8_t> frame(FrameBytes(h.num_elements));
    if (!EncodeFrame({}, h, payload, absl::MakeSpan(frame)).ok()) return 1;
    std::vector<uint8_t> dgram(frame.begin() + kGridOffset, frame.end());
    for (const auto& [name, bytes] : {std::pair{"frame", &frame}, std::pair{"datagram", &dgram}}) {
      const std::string path = dir + "/" + name + "_" + std::to_string(t);
      FILE* f = std::fopen(path.c_str(), "wb");
      if (f == nullptr) return 1;
      std::fwrite(bytes->data(), 1, bytes->size(), f);
      std::fclose(f);
    }
  }
  return 0;
}
