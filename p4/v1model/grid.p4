// GRID aggregation switch for BMv2 (v1model). The same tables, registers and
// decisions as the C++ reference pipeline (lib/switch/pipeline.cc); the
// mapping is in docs/switch.md, section "P4". Table entries come from
// grid-switch/1 files through sw::ConfigToP4Entries (P4Runtime-style JSON).
//
//   p4c --target bmv2 --arch v1model -I ../include -o build grid.p4
//
// Not compiled in this repository's CI: the build machines have no P4
// compiler. tests/switch/p4_header_test.cc keeps the header in step with
// include/grid/wire.h.
#include <core.p4>
#include <v1model.p4>

#include "constants.p4"
#include "headers.p4"
#include "parser.p4"

// Slot memory: 2 copies per slot.
#define GRID_COPIES 65536
// Applies M to every element pair index.
#define FOR_PAIRS(M) \
    M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15) \
    M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31)

// Drop reasons counted like the reference pipeline's (names in docs/switch.md).
const bit<32> DROP_MALFORMED   = 0;
const bit<32> DROP_UNKNOWN_JOB = 1;
const bit<32> DROP_BAD_TOKEN   = 2;
const bit<32> DROP_NOT_MEMBER  = 3;
const bit<32> DROP_BAD_SLOT    = 4;
const bit<32> DROP_BAD_FAN_IN  = 5;
const bit<32> DROP_BAD_LENGTH  = 6;
const bit<32> DROP_COLLISION   = 7;
const bit<32> DROP_DUPLICATE   = 8;
const bit<32> DROP_NO_ROUTE    = 9;
const bit<32> DROP_NOT_FOR_US  = 10;
const bit<32> DROP_STALE       = 11;

parser GridV1Parser(packet_in pkt, out headers_t hdr, inout grid_meta_t meta,
                    inout standard_metadata_t std) {
    GridParser() grid_parser;
    state start {
        grid_parser.apply(pkt, hdr, meta);
        transition accept;
    }
}

control GridVerify(inout headers_t hdr, inout grid_meta_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version_ihl, hdr.ipv4.tos, hdr.ipv4.total_length, hdr.ipv4.identification,
              hdr.ipv4.flags_fragment, hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.checksum, HashAlgorithm.csum16);
    }
}

control GridIngress(inout headers_t hdr, inout grid_meta_t meta, inout standard_metadata_t std) {
    counter(16, CounterType.packets) drops;

    // Per copy: chunk identity, contributor bitmap, count, state, exponents.
    register<bit<32>>(GRID_COPIES) copy_op;
    register<bit<32>>(GRID_COPIES) copy_chunk;
    register<bit<32>>(GRID_COPIES) copy_bitmap;
    register<bit<16>>(GRID_COPIES) copy_count;
    register<bit<1>>(GRID_COPIES)  copy_complete;
    register<bit<8>>(GRID_COPIES)  copy_exponent;
    register<bit<8>>(GRID_COPIES)  copy_next_exponent;
    register<bit<8>>(GRID_COPIES)  copy_flags;
#define VALUE_REGS(i) register<bit<32>>(GRID_COPIES) v##i##_lo; register<bit<32>>(GRID_COPIES) v##i##_hi;
    FOR_PAIRS(VALUE_REGS)

    bit<16> node_id = 0;
    bit<32> switch_ip = 0;
    bit<48> switch_mac = 0;
    bit<16> result_label = 0;
    bit<9>  member_port = 0;
    bit<32> member_ip = 0;
    bit<48> member_mac = 0;

    action drop_with(bit<32> reason) {
        drops.count(reason);
        mark_to_drop(std);
    }

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
    action no_route() { drop_with(DROP_NO_ROUTE); }
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
    action unknown_job() { drop_with(DROP_UNKNOWN_JOB); }
    table job {
        key = { hdr.grid.job_id: exact; }
        actions = { job_only; job_aggregate; unknown_job; }
        default_action = unknown_job();
    }

    // bit_index is bit_mask's position; the Tofino program indexes by it,
    // BMv2 needs only the mask.
    action set_member(bit<32> bit_mask, bit<8> bit_index, bit<9> port, bit<32> ip, bit<48> mac,
                      bit<16> label) {
        meta.member = 1;
        meta.member_bit = bit_mask;
        member_port = port;
        member_ip = ip;
        member_mac = mac;
        result_label = label;
    }
    action not_member() { meta.member = 0; }
    table member {
        key = { hdr.grid.job_id: exact; hdr.grid.rank: exact; }
        actions = { set_member; not_member; }
        default_action = not_member();
    }

    // The sums of the copy go out as a PARTIAL to the root.
    action to_partial(bit<16> requester) {
        hdr.grid.type = GRID_TYPE_PARTIAL;
        hdr.grid.rank = requester;
        hdr.grid.agg_node = meta.root_node;
        hdr.grid.path = meta.to_root_label;
        hdr.grid.next_path = 0;
        hdr.grid.fan_in = meta.root_fan_in;
        hdr.ipv4.src = switch_ip;
        hdr.ipv4.dst = meta.root_ip;
        hdr.ipv4.ttl = 64;
        hdr.ethernet.src = switch_mac;
        hdr.ethernet.dst = meta.root_mac;
        std.egress_spec = meta.root_port;
    }

    apply {
        identity.apply();
        if (!hdr.grid.isValid()) {
            // Not GRID: plain IPv4 forwarding, or nothing.
            if (hdr.ipv4.isValid()) { ip_route.apply(); } else { drop_with(DROP_NO_ROUTE); }
            return;
        }
        // The codec's field checks (wire.h ParseFrame).
        bool needs_payload = hdr.grid.type == GRID_TYPE_DATA || hdr.grid.type == GRID_TYPE_PARTIAL ||
                             hdr.grid.type == GRID_TYPE_RESULT;
        if (hdr.grid.version != GRID_VERSION || hdr.grid.reserved != 0 || hdr.grid.type == 0 ||
            hdr.grid.type > GRID_TYPE_CONTROL || (hdr.grid.flags & 0xE0) != 0 ||
            hdr.grid.num_elements > 1024 ||
            (needs_payload && (hdr.grid.num_elements == 0 || hdr.grid.fan_in == 0)) ||
            hdr.udp.length != 42 + (hdr.grid.num_elements << 2)) {
            drop_with(DROP_MALFORMED);
            return;
        }
        if (!job.apply().hit) { return; }
        if (hdr.grid.job_token != meta.token) { drop_with(DROP_BAD_TOKEN); return; }
        if (hdr.grid.agg_node != node_id) {
            label_route.apply();
            return;
        }
        if (meta.aggregate == 0 ||
            (hdr.grid.type != GRID_TYPE_DATA && hdr.grid.type != GRID_TYPE_RESULT)) {
            drop_with(DROP_NOT_FOR_US);
            return;
        }
        member.apply();
        if (hdr.grid.type == GRID_TYPE_RESULT) {
            // To every member through the job's multicast group (the egress
            // readdresses each replica), or to the one rank that asked.
            if (hdr.grid.rank == GRID_ALL_RANKS) {
                std.mcast_grp = meta.mcast_group;
            } else if (meta.member == 1) {
                hdr.ipv4.src = switch_ip;
                hdr.ipv4.dst = member_ip;
                hdr.ipv4.ttl = 64;
                hdr.ethernet.src = switch_mac;
                hdr.ethernet.dst = member_mac;
                hdr.grid.path = result_label;
                std.egress_spec = member_port;
            } else {
                drop_with(DROP_NOT_MEMBER);
            }
            return;
        }
        // DATA for this switch: aggregate.
        if (meta.member == 0) { drop_with(DROP_NOT_MEMBER); return; }
        if (hdr.grid.fan_in != meta.fan_in) { drop_with(DROP_BAD_FAN_IN); return; }
        if ((bit<32>)hdr.grid.slot >= meta.slots) { drop_with(DROP_BAD_SLOT); return; }
        if (hdr.grid.num_elements != GRID_ELEMENTS || !hdr.payload.isValid()) {
            drop_with(DROP_BAD_LENGTH);
            return;
        }
        bit<32> copy = (bit<32>)((hdr.grid.flags & GRID_FLAG_COPY) >> 3);
        meta.copy_index = ((meta.slot_base + (bit<32>)hdr.grid.slot) << 1) + copy;
        bit<32> op; bit<32> chunk; bit<32> bitmap; bit<16> count; bit<1> complete;
        bit<8> exponent; bit<8> next_exponent; bit<8> flags;
        copy_op.read(op, meta.copy_index);
        copy_chunk.read(chunk, meta.copy_index);
        copy_bitmap.read(bitmap, meta.copy_index);
        copy_count.read(count, meta.copy_index);
        copy_complete.read(complete, meta.copy_index);
        copy_exponent.read(exponent, meta.copy_index);
        copy_next_exponent.read(next_exponent, meta.copy_index);
        copy_flags.read(flags, meta.copy_index);

        // Serial-number order of (op_seq, chunk): newer, same or older.
        bit<32> op_delta = hdr.grid.op_seq - op;
        bool newer = count == 0 || (op_delta != 0 && op_delta[31:31] == 0) ||
                     (op_delta == 0 && hdr.grid.chunk > chunk);
        bool older = !newer && (op_delta[31:31] == 1 || (op_delta == 0 && hdr.grid.chunk < chunk));
        if (older) { drop_with(DROP_STALE); return; }
        if (newer && count != 0 && complete == 0) {
            // Collision: the copy is mid-aggregation with another chunk. The
            // packet turns into a SIGNAL back to its sender.
            drops.count(DROP_COLLISION);
            hdr.grid.type = GRID_TYPE_SIGNAL;
            hdr.grid.flags = GRID_FLAG_COLLISION | (hdr.grid.flags & GRID_FLAG_COPY);
            hdr.grid.agg_node = node_id;
            hdr.grid.path = result_label;
            hdr.grid.num_elements = 0;
            hdr.payload.setInvalid();
            hdr.udp.length = 42;
            hdr.ipv4.total_length = 62;
            hdr.ipv4.dst = hdr.ipv4.src;
            hdr.ipv4.src = switch_ip;
            hdr.ipv4.ttl = 64;
            hdr.ethernet.src = switch_mac;
            hdr.ethernet.dst = member_mac;
            std.egress_spec = member_port;
            return;
        }
        if (newer) {
            // The first contribution overwrites the copy.
            op = hdr.grid.op_seq;
            chunk = hdr.grid.chunk;
            bitmap = meta.member_bit;
            count = 1;
            exponent = hdr.grid.exponent;
            next_exponent = hdr.grid.next_exponent;
            flags = hdr.grid.flags & GRID_FLAG_CONGESTION;
#define WRITE_PAIR(i) v##i##_lo.write(meta.copy_index, hdr.payload.e##i##_lo); \
                      v##i##_hi.write(meta.copy_index, hdr.payload.e##i##_hi);
            FOR_PAIRS(WRITE_PAIR)
        } else if ((bitmap & meta.member_bit) != 0) {
            if (complete == 1) {
                // A retransmission into a complete copy: the partial again,
                // naming the rank that asked.
#define READ_PAIR(i) v##i##_lo.read(hdr.payload.e##i##_lo, meta.copy_index); \
                     v##i##_hi.read(hdr.payload.e##i##_hi, meta.copy_index);
                FOR_PAIRS(READ_PAIR)
                hdr.grid.flags = (hdr.grid.flags & GRID_FLAG_COPY) | flags | GRID_FLAG_RETRANSMIT;
                hdr.grid.exponent = exponent;
                hdr.grid.next_exponent = next_exponent;
                to_partial(hdr.grid.rank);
            } else {
                drop_with(DROP_DUPLICATE);
            }
            return;
        } else {
            // Add (int32, wrapping). Overflow detection is left to the
            // software switch on this target (see docs/switch.md).
#define ADD_PAIR(i) { bit<32> lo; bit<32> hi; v##i##_lo.read(lo, meta.copy_index); \
                      v##i##_hi.read(hi, meta.copy_index); \
                      hdr.payload.e##i##_lo = lo + hdr.payload.e##i##_lo; \
                      hdr.payload.e##i##_hi = hi + hdr.payload.e##i##_hi; \
                      v##i##_lo.write(meta.copy_index, hdr.payload.e##i##_lo); \
                      v##i##_hi.write(meta.copy_index, hdr.payload.e##i##_hi); }
            FOR_PAIRS(ADD_PAIR)
            bitmap = bitmap | meta.member_bit;
            count = count + 1;
            if (hdr.grid.exponent > exponent) { exponent = hdr.grid.exponent; }
            if (hdr.grid.next_exponent > next_exponent) { next_exponent = hdr.grid.next_exponent; }
            flags = flags | (hdr.grid.flags & GRID_FLAG_CONGESTION);
        }
        complete = count == meta.fan_in ? (bit<1>)1 : (bit<1>)0;
        copy_op.write(meta.copy_index, op);
        copy_chunk.write(meta.copy_index, chunk);
        copy_bitmap.write(meta.copy_index, bitmap);
        copy_count.write(meta.copy_index, count);
        copy_complete.write(meta.copy_index, complete);
        copy_exponent.write(meta.copy_index, exponent);
        copy_next_exponent.write(meta.copy_index, next_exponent);
        copy_flags.write(meta.copy_index, flags);
        if (complete == 1) {
            // The payload now holds the sums: it leaves as the partial.
            hdr.grid.flags = (hdr.grid.flags & GRID_FLAG_COPY) | flags;
            hdr.grid.exponent = exponent;
            hdr.grid.next_exponent = next_exponent;
            to_partial(GRID_ALL_RANKS);
        } else {
            mark_to_drop(std);  // consumed into the copy
        }
    }
}

control GridEgress(inout headers_t hdr, inout grid_meta_t meta, inout standard_metadata_t std) {
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
        hdr.ipv4.ttl = 64;
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
        if (std.instance_type == 5 /* replication */ && hdr.grid.isValid()) { replica.apply(); }
        if (hdr.grid.isValid() && std.enq_qdepth > congestion_threshold) {
            hdr.grid.flags = hdr.grid.flags | GRID_FLAG_CONGESTION;
        }
    }
}

control GridComputeChecksum(inout headers_t hdr, inout grid_meta_t meta) {
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
