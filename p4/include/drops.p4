// Why a packet was dropped: the index into each program's `drops` counter.
// The numbers are sw::Drop's (lib/switch), whose first values are the wire
// codec's wire::WireError; the name is sw::DropName's in capitals, with '.'
// as '_'. tests/switch/p4_header_test.cc checks every one, so the P4 and C++
// counters can be compared reason by reason (tests/p4/). Reasons 2
// (ethernet.ether_type), 7 (ipv4.protocol) and 9 (udp.dst_port) never occur:
// a packet that fails them is not classified as GRID, in either pipeline.
#ifndef GRID_P4_DROPS_
#define GRID_P4_DROPS_

const bit<32> DROP_FRAME_LENGTH        = 1;
const bit<32> DROP_IPV4_VERSION        = 3;
const bit<32> DROP_IPV4_IHL            = 4;
const bit<32> DROP_IPV4_TOTAL_LENGTH   = 5;
const bit<32> DROP_IPV4_FLAGS_FRAGMENT = 6;
const bit<32> DROP_IPV4_CHECKSUM       = 8;
const bit<32> DROP_UDP_LENGTH          = 10;
const bit<32> DROP_GRID_VERSION        = 11;
const bit<32> DROP_GRID_TYPE           = 12;
const bit<32> DROP_GRID_FLAGS          = 13;
const bit<32> DROP_GRID_RESERVED       = 14;
const bit<32> DROP_GRID_NUM_ELEMENTS   = 15;
const bit<32> DROP_GRID_FAN_IN         = 16;
const bit<32> DROP_GRID_PAYLOAD        = 17;
const bit<32> DROP_UNKNOWN_JOB         = 18;
const bit<32> DROP_BAD_TOKEN           = 19;
const bit<32> DROP_NOT_MEMBER          = 20;
const bit<32> DROP_BAD_SLOT            = 21;
const bit<32> DROP_BAD_FAN_IN          = 22;
const bit<32> DROP_BAD_LENGTH          = 23;
const bit<32> DROP_COLLISION           = 24;
const bit<32> DROP_DUPLICATE           = 25;
const bit<32> DROP_NO_ROUTE            = 26;
const bit<32> DROP_NOT_FOR_US          = 27;
const bit<32> DROP_STALE               = 28;
const bit<32> DROP_TTL_EXPIRED         = 29;
const bit<32> DROP_BAD_INGRESS         = 30;
const bit<32> DROP_BAD_SOURCE          = 31;
// Reason 32 (over_capacity) is the software switch's alone: these programs
// have no aggregation-capacity meter (docs/switch.md, "Best effort").
// The size of the counter: one past the last reason (index 0 is unused).
#define GRID_DROP_REASONS 33

#endif
