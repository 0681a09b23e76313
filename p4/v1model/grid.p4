// GRID aggregation switch for BMv2 (v1model). The same tables, registers and
// decisions as the C++ reference pipeline (lib/switch/pipeline.cc, whose slot
// rules are lib/aggregation/copy.cc); tests/p4/ runs both on the same packets
// and requires the same bytes out of the same ports and the same drop
// counters. docs/switch.md, section "P4", maps one onto the other. Table
// entries come from grid-switch/1 files through sw::ConfigToP4Entries.
//
//   p4c-bm2-ss -I p4/include -o grid.json p4/v1model/grid.p4
#include <core.p4>
#include <v1model.p4>

#include "constants.p4"
#include "drops.p4"
#include "headers.p4"
#include "parser.p4"

// Slot memory: 2 copies per slot (sw::kP4MaxSlots slots).
#define GRID_COPIES 2048
// Applies M to every element pair index.
#define FOR_PAIRS(M) \
    M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15) \
    M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31)

// The bytes of the frames a switch makes (wire.h: FrameBytes, WriteFrameHeaders).
const bit<16> IPV4_UDP_GRID_BYTES = 62;  // IPv4 + UDP + GRID headers
const bit<16> UDP_GRID_BYTES = 42;       // UDP + GRID headers
const bit<32> ETHERNET_BYTES = 14;
const bit<8>  FRESH_TTL = 64;
const bit<16> IPV4_DONT_FRAGMENT = 0x4000;
const bit<8>  IPV4_VERSION_IHL = 0x45;   // version 4, no options
const bit<8>  GRID_FLAGS_KNOWN = 0x3F;
// What a copy keeps of its contributions' flags (aggregation::Contribute).
const bit<8>  GRID_KEPT_FLAGS = GRID_FLAG_CONGESTION | GRID_FLAG_OVERFLOW | GRID_FLAG_RETRANSMIT;
const bit<16> GRID_MAX_ELEMENTS = 1024;
const bit<32> REPLICATION = 5;           // standard_metadata.instance_type of a multicast copy

struct meta_t {
    bit<32> token;
    bit<1>  aggregate;       // this switch aggregates the job
    bit<16> fan_in;
    bit<32> slot_base;
    bit<32> slots;
    bit<9>  root_port;
    bit<32> root_ip;
    bit<48> root_mac;
    bit<16> root_node;
    bit<16> root_fan_in;
    bit<16> to_root_label;
    bit<16> mcast_group;
    bit<1>  member;          // the rank is a member here
    bit<32> member_bit;      // 1 << its bit
    bit<9>  member_port;
    bit<32> member_ip;
    bit<48> member_mac;
    bit<16> result_label;
    bit<1>  edge;            // the packet came in on a port that faces a host
    bit<32> edge_ip;         // that host's address
}

parser GridV1Parser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                    inout standard_metadata_t std) {
    GridParser() grid_parser;
    state start {
        grid_parser.apply(pkt, hdr);
        transition accept;
    }
}

control GridVerify(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version_ihl, hdr.ipv4.tos, hdr.ipv4.total_length, hdr.ipv4.identification,
              hdr.ipv4.flags_fragment, hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.checksum, HashAlgorithm.csum16);
    }
}

control GridIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    counter(GRID_DROP_REASONS, CounterType.packets) drops;

    // Per copy: the chunk it holds, its contributor bitmap, count and state.
    register<bit<32>>(GRID_COPIES) copy_op;
    register<bit<32>>(GRID_COPIES) copy_chunk;
    register<bit<32>>(GRID_COPIES) copy_bitmap;
    register<bit<32>>(GRID_COPIES) copy_count;
    register<bit<1>>(GRID_COPIES)  copy_complete;
    register<bit<8>>(GRID_COPIES)  copy_exponent;
    register<bit<8>>(GRID_COPIES)  copy_next_exponent;
    register<bit<8>>(GRID_COPIES)  copy_flags;
    register<bit<1>>(GRID_COPIES)  copy_header_only;  // its values are not used
#define VALUE_REGS(i) register<bit<32>>(GRID_COPIES) v##i##_lo; register<bit<32>>(GRID_COPIES) v##i##_hi;
    FOR_PAIRS(VALUE_REGS)

    bit<16> node_id = 0;
    bit<32> switch_ip = 0;
    bit<48> switch_mac = 0;

    action set_identity(bit<16> id, bit<32> ip, bit<48> mac) {
        node_id = id;
        switch_ip = ip;
        switch_mac = mac;
    }
    table identity {
        actions = { set_identity; }
        default_action = set_identity(0, 0, 0);
    }

    action set_nhop(bit<9> port, bit<48> mac) {
        std.egress_spec = port;
        hdr.ethernet.src = switch_mac;
        hdr.ethernet.dst = mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    action no_route() {}
    table label_route {
        key = { hdr.grid.path: exact; }
        actions = { set_nhop; no_route; }
        default_action = no_route();
    }
    table ip_route {
        key = { hdr.ipv4.dst: exact; }
        actions = { set_nhop; no_route; }
        default_action = no_route();
    }

    // Ports that face a host: the only source address they take (BCP 38).
    action set_edge(bit<32> ip) {
        meta.edge = 1;
        meta.edge_ip = ip;
    }
    table edge {
        key = { std.ingress_port: exact @name("standard_metadata.ingress_port"); }
        actions = { set_edge; NoAction; }
        default_action = NoAction();
    }

    action job_only(bit<32> token) {
        meta.token = token;
        meta.aggregate = 0;
    }
    action job_aggregate(bit<32> token, bit<16> fan_in, bit<32> slot_base, bit<32> slots,
                         bit<9> root_port, bit<32> root_ip, bit<48> root_mac, bit<16> root_node,
                         bit<16> root_fan_in, bit<16> to_root_label, bit<16> mcast_group) {
        meta.token = token;
        meta.aggregate = 1;
        meta.fan_in = fan_in;
        meta.slot_base = slot_base;
        meta.slots = slots;
        meta.root_port = root_port;
        meta.root_ip = root_ip;
        meta.root_mac = root_mac;
        meta.root_node = root_node;
        meta.root_fan_in = root_fan_in;
        meta.to_root_label = to_root_label;
        meta.mcast_group = mcast_group;
    }
    action unknown_job() {}
    table job {
        key = { hdr.grid.job_id: exact; }
        actions = { job_only; job_aggregate; unknown_job; }
        default_action = unknown_job();
    }

    action set_member(bit<8> bit_index, bit<9> port, bit<32> ip, bit<48> mac, bit<16> label) {
        meta.member = 1;
        meta.member_bit = (bit<32>)1 << bit_index;
        meta.member_port = port;
        meta.member_ip = ip;
        meta.member_mac = mac;
        meta.result_label = label;
    }
    action not_member() { meta.member = 0; }
    table member {
        key = { hdr.grid.job_id: exact; hdr.grid.rank: exact; }
        actions = { set_member; not_member; }
        default_action = not_member();
    }

    // The addressing of a packet the switch makes (wire.h WriteFrameHeaders):
    // fresh IPv4 fields, GRID's source port, no UDP checksum.
    action readdress_made(bit<32> dst_ip, bit<48> dst_mac, bit<9> port) {
        hdr.ethernet.src = switch_mac;
        hdr.ethernet.dst = dst_mac;
        hdr.ipv4.tos = 0;
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags_fragment = IPV4_DONT_FRAGMENT;
        hdr.ipv4.ttl = FRESH_TTL;
        hdr.ipv4.src = switch_ip;
        hdr.ipv4.dst = dst_ip;
        hdr.udp.src_port = GRID_UDP_PORT_BASE;
        hdr.udp.checksum = 0;
        std.egress_spec = port;
    }

    // The copy's sums leave as a PARTIAL to the root (sw EmitPartial).
    action to_partial(bit<16> requester, bit<8> flags, bit<8> exponent, bit<8> next_exponent) {
        readdress_made(meta.root_ip, meta.root_mac, meta.root_port);
        hdr.grid.type = GRID_TYPE_PARTIAL;
        hdr.grid.flags = flags;
        hdr.grid.rank = requester;
        hdr.grid.agg_node = meta.root_node;
        hdr.grid.path = meta.to_root_label;
        hdr.grid.next_path = 0;
        hdr.grid.fan_in = meta.root_fan_in;
        hdr.grid.job_token = meta.token;
        hdr.grid.exponent = exponent;
        hdr.grid.next_exponent = next_exponent;
    }

    apply {
        identity.apply();
        edge.apply();
        bool spoofed = meta.edge == 1 && hdr.ipv4.isValid() && hdr.ipv4.src != meta.edge_ip;
        bit<32> reason = 0;           // a drop reason (drops.p4), or 0
        bool signal = false;          // a collision: the packet returns as a SIGNAL
        bool consumed = false;        // added into a copy that is not yet complete

        if (!hdr.ipv4.isValid()) {
            reason = DROP_NO_ROUTE;
        } else if (!hdr.udp.isValid() ||
                   (hdr.udp.dst_port & GRID_UDP_PORT_MASK) != GRID_UDP_PORT_BASE) {
            // Not GRID: a router's checks, then plain IPv4 forwarding.
            if (hdr.ipv4.version_ihl[7:4] != 4) {
                reason = DROP_IPV4_VERSION;
            } else if (hdr.ipv4.version_ihl != IPV4_VERSION_IHL) {
                reason = DROP_IPV4_IHL;
            } else if (std.checksum_error == 1) {
                reason = DROP_IPV4_CHECKSUM;
            } else if (spoofed) {
                reason = DROP_BAD_SOURCE;
            } else if (hdr.ipv4.ttl <= 1) {
                reason = DROP_TTL_EXPIRED;
            } else if (!ip_route.apply().hit) {
                reason = DROP_NO_ROUTE;
            }
        } else if (!hdr.grid.isValid()) {
            reason = DROP_FRAME_LENGTH;
        } else {
            // The codec's checks, in wire::ParseFrame's order.
            bool is_chunk = hdr.grid.type == GRID_TYPE_DATA ||
                            hdr.grid.type == GRID_TYPE_PARTIAL ||
                            hdr.grid.type == GRID_TYPE_RESULT;
            bit<32> frame_bytes = (bit<32>)hdr.ipv4.total_length + ETHERNET_BYTES;
            bit<16> payload_bytes = hdr.ipv4.total_length - IPV4_UDP_GRID_BYTES;
            if (hdr.ipv4.version_ihl[7:4] != 4) {
                reason = DROP_IPV4_VERSION;
            } else if (hdr.ipv4.version_ihl != IPV4_VERSION_IHL) {
                reason = DROP_IPV4_IHL;
            } else if (hdr.ipv4.total_length < IPV4_UDP_GRID_BYTES) {
                reason = DROP_IPV4_TOTAL_LENGTH;
            } else if (frame_bytes > std.packet_length) {
                reason = DROP_FRAME_LENGTH;
            } else if (hdr.ipv4.flags_fragment[13:0] != 0) {
                reason = DROP_IPV4_FLAGS_FRAGMENT;
            } else if (std.checksum_error == 1) {
                reason = DROP_IPV4_CHECKSUM;
            } else if (hdr.udp.length != hdr.ipv4.total_length - 20) {
                reason = DROP_UDP_LENGTH;
            } else if (hdr.grid.version != GRID_VERSION) {
                reason = DROP_GRID_VERSION;
            } else if (hdr.grid.reserved != 0) {
                reason = DROP_GRID_RESERVED;
            } else if (hdr.grid.type < GRID_TYPE_DATA || hdr.grid.type > GRID_TYPE_SIGNAL) {
                reason = DROP_GRID_TYPE;
            } else if ((hdr.grid.flags & ~GRID_FLAGS_KNOWN) != 0) {
                reason = DROP_GRID_FLAGS;
            } else if (hdr.grid.num_elements > GRID_MAX_ELEMENTS) {
                reason = DROP_GRID_NUM_ELEMENTS;
            } else if (hdr.grid.fan_in == 0 && is_chunk) {
                reason = DROP_GRID_FAN_IN;
            } else if (payload_bytes != hdr.grid.num_elements << 2) {
                reason = DROP_GRID_PAYLOAD;
            } else if (spoofed) {
                reason = DROP_BAD_SOURCE;
            } else if (!job.apply().hit) {
                reason = DROP_UNKNOWN_JOB;
            } else if (hdr.grid.job_token != meta.token) {
                reason = DROP_BAD_TOKEN;
            } else if (hdr.grid.agg_node != node_id) {
                // Passing through: forward along the plan's path.
                if (hdr.ipv4.ttl <= 1) {
                    reason = DROP_TTL_EXPIRED;
                } else if (!label_route.apply().hit) {
                    reason = DROP_NO_ROUTE;
                } else {
                    hdr.udp.checksum = 0;
                }
            } else if (meta.aggregate == 0 ||
                       (hdr.grid.type != GRID_TYPE_DATA && hdr.grid.type != GRID_TYPE_RESULT)) {
                reason = DROP_NOT_FOR_US;
            } else {
                member.apply();
                if (hdr.grid.type == GRID_TYPE_RESULT) {
                    // Results come from the root, on the path from it.
                    if (std.ingress_port != meta.root_port) {
                        reason = DROP_BAD_INGRESS;
                    } else if (hdr.ipv4.src != meta.root_ip) {
                        reason = DROP_BAD_SOURCE;
                    } else if (hdr.grid.rank == GRID_ALL_RANKS) {
                        // To every member: the job's multicast group; the
                        // egress readdresses each replica.
                        std.mcast_grp = meta.mcast_group;
                        hdr.udp.checksum = 0;
                    } else if (meta.member == 1) {
                        // To the one rank that asked.
                        hdr.ethernet.src = switch_mac;
                        hdr.ethernet.dst = meta.member_mac;
                        hdr.ipv4.ttl = FRESH_TTL;
                        hdr.ipv4.src = switch_ip;
                        hdr.ipv4.dst = meta.member_ip;
                        hdr.udp.checksum = 0;
                        hdr.grid.path = meta.result_label;
                        std.egress_spec = meta.member_port;
                    } else {
                        reason = DROP_NOT_MEMBER;
                    }
                } else if (meta.member == 0) {
                    reason = DROP_NOT_MEMBER;
                } else if (std.ingress_port != meta.member_port) {
                    // A rank's chunks come from its host, on the plan's path.
                    reason = DROP_BAD_INGRESS;
                } else if (hdr.ipv4.src != meta.member_ip) {
                    reason = DROP_BAD_SOURCE;
                } else if (hdr.grid.fan_in != meta.fan_in) {
                    reason = DROP_BAD_FAN_IN;
                } else if ((bit<32>)hdr.grid.slot >= meta.slots) {
                    reason = DROP_BAD_SLOT;
                } else if (!hdr.payload.isValid() && hdr.grid.num_elements != 0) {
                    // Every chunk carries the job's GRID_ELEMENTS elements,
                    // or none (an exponent probe).
                    reason = DROP_BAD_LENGTH;
                } else {
                    // aggregation::Contribute, on this copy.
                    bit<32> index = ((meta.slot_base + (bit<32>)hdr.grid.slot) << 1) |
                                    (bit<32>)hdr.grid.flags[3:3];
                    bit<32> op; bit<32> chunk; bit<32> bitmap; bit<32> count; bit<1> complete;
                    bit<8> exponent; bit<8> next_exponent; bit<8> flags; bit<1> header_only;
                    bit<1> arrived_header_only = hdr.payload.isValid() ? (bit<1>)0 : (bit<1>)1;
                    copy_op.read(op, index);
                    copy_chunk.read(chunk, index);
                    copy_bitmap.read(bitmap, index);
                    copy_count.read(count, index);
                    copy_complete.read(complete, index);
                    copy_exponent.read(exponent, index);
                    copy_next_exponent.read(next_exponent, index);
                    copy_flags.read(flags, index);
                    copy_header_only.read(header_only, index);

                    // (op_seq, chunk): op_seq in serial-number order, then chunk.
                    bit<32> op_delta = hdr.grid.op_seq - op;
                    bool newer = count == 0 || (op_delta != 0 && op_delta[31:31] == 0) ||
                                 (op_delta == 0 && hdr.grid.chunk > chunk);
                    bool older = !newer && op_delta != 0 ||
                                 (op_delta == 0 && hdr.grid.chunk < chunk);
                    bool added = false;
                    if (older) {
                        reason = DROP_STALE;
                    } else if (newer && count != 0 && complete == 0) {
                        reason = DROP_COLLISION;
                        signal = true;
                    } else if (newer) {
                        // The first contribution overwrites the copy.
                        op = hdr.grid.op_seq;
                        chunk = hdr.grid.chunk;
                        bitmap = meta.member_bit;
                        count = 1;
                        exponent = hdr.grid.exponent;
                        next_exponent = hdr.grid.next_exponent;
                        flags = hdr.grid.flags & GRID_KEPT_FLAGS;
                        header_only = arrived_header_only;
                        if (header_only == 0) {
#define WRITE_PAIR(i) v##i##_lo.write(index, hdr.payload.e##i##_lo); \
                      v##i##_hi.write(index, hdr.payload.e##i##_hi);
                            FOR_PAIRS(WRITE_PAIR)
                        }
                        added = true;
                    } else if (arrived_header_only != header_only) {
                        // The copy's first contribution decided its length.
                        reason = DROP_BAD_LENGTH;
                    } else if ((bitmap & meta.member_bit) != 0) {
                        if (complete == 1) {
                            // A retransmission into a complete copy: the
                            // partial again, naming the rank that asked.
                            if (header_only == 0) {
#define READ_PAIR(i) v##i##_lo.read(hdr.payload.e##i##_lo, index); \
                     v##i##_hi.read(hdr.payload.e##i##_hi, index);
                                FOR_PAIRS(READ_PAIR)
                            }
                            to_partial(hdr.grid.rank,
                                       (hdr.grid.flags & GRID_FLAG_COPY) | flags |
                                           GRID_FLAG_RETRANSMIT,
                                       exponent, next_exponent);
                        } else {
                            reason = DROP_DUPLICATE;
                        }
                    } else {
                        // Add (int32, wrapping); a wrap sets OVERFLOW. Signed
                        // a + b = s wraps when a and b share a sign s lacks.
                        bit<32> wrapped = 0;
#define ADD_ONE(reg, field) { bit<32> a; reg.read(a, index); \
                              bit<32> s = a + hdr.payload.field; \
                              wrapped = wrapped | ((a ^ s) & (hdr.payload.field ^ s)); \
                              hdr.payload.field = s; reg.write(index, s); }
#define ADD_PAIR(i) ADD_ONE(v##i##_lo, e##i##_lo) ADD_ONE(v##i##_hi, e##i##_hi)
                        if (header_only == 0) { FOR_PAIRS(ADD_PAIR) }
                        bitmap = bitmap | meta.member_bit;
                        count = count + 1;
                        if (hdr.grid.exponent > exponent) { exponent = hdr.grid.exponent; }
                        if (hdr.grid.next_exponent > next_exponent) {
                            next_exponent = hdr.grid.next_exponent;
                        }
                        flags = flags | (hdr.grid.flags & GRID_KEPT_FLAGS);
                        if (wrapped[31:31] == 1) { flags = flags | GRID_FLAG_OVERFLOW; }
                        added = true;
                    }
                    if (added) {
                        complete = count == (bit<32>)meta.fan_in ? (bit<1>)1 : (bit<1>)0;
                        copy_op.write(index, op);
                        copy_chunk.write(index, chunk);
                        copy_bitmap.write(index, bitmap);
                        copy_count.write(index, count);
                        copy_complete.write(index, complete);
                        copy_exponent.write(index, exponent);
                        copy_next_exponent.write(index, next_exponent);
                        copy_flags.write(index, flags);
                        copy_header_only.write(index, header_only);
                        if (complete == 1) {
                            // The payload holds the sums: it leaves as the partial.
                            to_partial(GRID_ALL_RANKS, (hdr.grid.flags & GRID_FLAG_COPY) | flags,
                                       exponent, next_exponent);
                        } else {
                            consumed = true;
                        }
                    }
                }
            }
        }

        if (reason != 0) { drops.count(reason); }
        if (signal) {
            // The colliding DATA returns to its sender as a SIGNAL (sw Signal).
            readdress_made(meta.member_ip, meta.member_mac, meta.member_port);
            hdr.ipv4.total_length = IPV4_UDP_GRID_BYTES;
            hdr.udp.length = UDP_GRID_BYTES;
            hdr.grid.type = GRID_TYPE_SIGNAL;
            hdr.grid.flags = GRID_FLAG_COLLISION | (hdr.grid.flags & GRID_FLAG_COPY);
            hdr.grid.job_token = meta.token;
            hdr.grid.agg_node = node_id;
            hdr.grid.path = meta.result_label;
            hdr.grid.next_path = 0;
            hdr.grid.exponent = 0;
            hdr.grid.next_exponent = 0;
            hdr.grid.num_elements = 0;
            hdr.payload.setInvalid();
        } else if (reason != 0 || consumed) {
            mark_to_drop(std);
        }
    }
}

control GridEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    bit<32> switch_ip = 0;
    bit<48> switch_mac = 0;
    bit<19> congestion_threshold = 64;

    action set_egress_identity(bit<32> ip, bit<48> mac, bit<19> threshold) {
        switch_ip = ip;
        switch_mac = mac;
        congestion_threshold = threshold;
    }
    table egress_identity {
        actions = { set_egress_identity; }
        default_action = set_egress_identity(0, 0, 64);
    }

    // A multicast replica of a RESULT, readdressed to the member that the
    // replication id (the member's bit) names.
    action set_replica(bit<16> rank, bit<32> ip, bit<48> mac, bit<16> label) {
        hdr.grid.rank = rank;
        hdr.grid.path = label;
        hdr.ipv4.src = switch_ip;
        hdr.ipv4.dst = ip;
        hdr.ipv4.ttl = FRESH_TTL;
        hdr.ethernet.src = switch_mac;
        hdr.ethernet.dst = mac;
    }
    table replica {
        key = { hdr.grid.job_id: exact; std.egress_rid: exact @name("standard_metadata.egress_rid"); }
        actions = { set_replica; NoAction; }
        default_action = NoAction();
    }

    apply {
        egress_identity.apply();
        if (hdr.grid.isValid()) {
            if (std.instance_type == REPLICATION) { replica.apply(); }
            if (hdr.grid.type != GRID_TYPE_SIGNAL && std.enq_qdepth > congestion_threshold) {
                hdr.grid.flags = hdr.grid.flags | GRID_FLAG_CONGESTION;
            }
            // A GRID frame is its IPv4 packet: Ethernet padding goes.
            truncate((bit<32>)hdr.ipv4.total_length + ETHERNET_BYTES);
        }
    }
}

control GridComputeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version_ihl, hdr.ipv4.tos, hdr.ipv4.total_length, hdr.ipv4.identification,
              hdr.ipv4.flags_fragment, hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.checksum, HashAlgorithm.csum16);
    }
}

control GridDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.grid);
        pkt.emit(hdr.payload);
    }
}

V1Switch(GridV1Parser(), GridVerify(), GridIngress(), GridEgress(), GridComputeChecksum(),
         GridDeparser()) main;
