// Header definitions shared by the TNA and v1model programs. The GRID header
// must match include/grid/wire.h field by field: same names, widths and order
// (tests/switch/p4_header_test.cc checks it).
#ifndef GRID_P4_HEADERS_
#define GRID_P4_HEADERS_

header ethernet_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header ipv4_h {
    bit<8>  version_ihl;
    bit<8>  tos;
    bit<16> total_length;
    bit<16> identification;
    bit<16> flags_fragment;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> checksum;
    bit<32> src;
    bit<32> dst;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

// wire.h: struct WireHeader (34 bytes).
header grid_h {
    bit<8>  version;
    bit<8>  type;
    bit<8>  flags;
    bit<8>  reserved;
    bit<16> job_id;
    bit<32> job_token;
    bit<16> rank;
    bit<16> agg_node;
    bit<16> path;
    bit<16> next_path;
    bit<16> fan_in;
    bit<16> slot;
    bit<32> op_seq;
    bit<32> chunk;
    bit<8>  exponent;
    bit<8>  next_exponent;
    bit<16> num_elements;
}

// 64 int32 elements, big-endian, as element pairs: a Tofino stateful ALU
// updates a 2 x 32-bit register cell in one operation, so 32 pair registers
// sum 64 elements in one pass.
#define GRID_PAIR(i) bit<32> e##i##_lo; bit<32> e##i##_hi;
header grid_payload_h {
    GRID_PAIR(0)  GRID_PAIR(1)  GRID_PAIR(2)  GRID_PAIR(3)
    GRID_PAIR(4)  GRID_PAIR(5)  GRID_PAIR(6)  GRID_PAIR(7)
    GRID_PAIR(8)  GRID_PAIR(9)  GRID_PAIR(10) GRID_PAIR(11)
    GRID_PAIR(12) GRID_PAIR(13) GRID_PAIR(14) GRID_PAIR(15)
    GRID_PAIR(16) GRID_PAIR(17) GRID_PAIR(18) GRID_PAIR(19)
    GRID_PAIR(20) GRID_PAIR(21) GRID_PAIR(22) GRID_PAIR(23)
    GRID_PAIR(24) GRID_PAIR(25) GRID_PAIR(26) GRID_PAIR(27)
    GRID_PAIR(28) GRID_PAIR(29) GRID_PAIR(30) GRID_PAIR(31)
}

struct headers_t {
    ethernet_h     ethernet;
    ipv4_h         ipv4;
    udp_h          udp;
    grid_h         grid;
    grid_payload_h payload;
}

#endif
