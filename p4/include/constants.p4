// GRID wire protocol v1 constants (docs/wire-protocol.md, include/grid/wire.h).
#ifndef GRID_P4_CONSTANTS_
#define GRID_P4_CONSTANTS_

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_UDP   = 17;
const bit<16> GRID_UDP_PORT_BASE = 0xBE00;   // 48640; the range is 64 ports
const bit<16> GRID_UDP_PORT_MASK = 0xFFC0;
const bit<8>  GRID_VERSION = 1;

const bit<8> GRID_TYPE_DATA    = 1;
const bit<8> GRID_TYPE_PARTIAL = 2;
const bit<8> GRID_TYPE_RESULT  = 3;
const bit<8> GRID_TYPE_SIGNAL  = 4;

const bit<8> GRID_FLAG_RETRANSMIT = 0x01;
const bit<8> GRID_FLAG_CONGESTION = 0x02;
const bit<8> GRID_FLAG_OVERFLOW   = 0x04;
const bit<8> GRID_FLAG_COPY       = 0x08;
const bit<8> GRID_FLAG_COLLISION  = 0x10;

const bit<16> GRID_ALL_RANKS = 0xFFFF;

// One pipeline pass sums this many elements (docs/switch.md, "P4").
const bit<16> GRID_ELEMENTS = 64;

#endif
