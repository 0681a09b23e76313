// Internal: the GRID-header half of the codec, shared by the datagram and the
// frame paths so both apply exactly the same checks.
#ifndef GRID_LIB_WIRE_HEADER_CODEC_H_
#define GRID_LIB_WIRE_HEADER_CODEC_H_

#include <cstddef>
#include <cstdint>

#include "grid/wire.h"

namespace grid::wire::internal {

// Semantic checks on a host-order header (the same for encoder and decoder).
WireError CheckHeader(const Header& header, uint64_t* bad_value);

// Reads and checks the header at `bytes`; `payload_bytes` is what follows it.
// The caller guarantees kHeaderBytes readable bytes.
WireError LoadHeader(const uint8_t* bytes, size_t payload_bytes, Header* out, uint64_t* bad_value);

// Writes a header that CheckHeader accepted.
void StoreHeader(const Header& header, uint8_t* out);

}  // namespace grid::wire::internal

#endif  // GRID_LIB_WIRE_HEADER_CODEC_H_
