// GRID aggregation switch for Tofino 2 (T2NA, the Tofino Native Architecture
// of Tofino 2). The same tables, table entries and decisions as the C++
// reference pipeline (lib/switch/pipeline.cc, lib/aggregation/copy.cc) and
// p4/v1model/grid.p4, in a layout a Tofino pipeline can run; docs/switch.md,
// section "Tofino", has the stage plan, the resource plan and every way this
// program differs from the reference, with the reason.
//
//   bf-p4c --target tofino2 --arch t2na -I p4/include -o build/tna p4/tna/grid.p4
//
// Here only p4test (p4c's front and mid end) checks it (CTest label p4);
// resources (stages, SALUs, PHV) need Intel's bf-p4c.
//
// How it fits one pass:
// - 64 elements are 32 register pairs. A Tofino 2 stateful ALU updates both
//   32-bit halves of a pair cell and returns both, so one SALU sums two
//   elements and the 32 value SALUs return all 64 sums in the pass that
//   completes the copy.
// - The copy state is two SALUs: a per-(copy, member) "last chunk" register
//   that detects duplicates and late packets, and a per-copy {chunk tag,
//   remaining} pair that decides first / add / complete / collision. Then
//   one pair SALU for the two exponents and one for the flags.
// - 36 SALUs in all, in 15 of Tofino 2's 20 stages (4 SALUs per stage).
#include <core.p4>
#include <t2na.p4>

#include "constants.p4"
#include "drops.p4"
#include "headers.p4"

// Copies of slot memory (2 per slot, so 1024 slots: sw::kP4MaxSlots). The
// member register holds a 64-bit cell per copy and member and is the one that
// bounds this: 2048 copies x 32 x 64 bits = 4 Mbit, 32 of a stage's 128-Kbit
// RAMs.
#define GRID_COPIES 2048
#define GRID_MEMBER_WORDS 65536

#define FOR_PAIRS(M) \
    M(0) M(1) M(2) M(3) M(4) M(5) M(6) M(7) M(8) M(9) M(10) M(11) M(12) M(13) M(14) M(15) \
    M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31)

// The bytes of the frames a switch makes (wire.h: FrameBytes, WriteFrameHeaders).
const bit<16> IPV4_UDP_GRID_BYTES = 62;
const bit<16> UDP_GRID_BYTES = 42;
const bit<8>  FRESH_TTL = 64;
const bit<16> IPV4_DONT_FRAGMENT = 0x4000;
const bit<8>  IPV4_VERSION_IHL = 0x45;
const bit<8>  GRID_FLAGS_KNOWN = 0x3F;
// What a copy keeps of its contributions' flags (aggregation::Contribute).
const bit<8>  GRID_KEPT_FLAGS = GRID_FLAG_CONGESTION | GRID_FLAG_OVERFLOW | GRID_FLAG_RETRANSMIT;
const bit<16> GRID_MAX_ELEMENTS = 1024;

// What the member register says about the sender and this copy.
const bit<8> MEMBER_NEW  = 0;  // the sender has not contributed this chunk here
const bit<8> MEMBER_SEEN = 1;  // it has, or a later one: copy_peek tells which

// What the copy register decides (aggregation::Verdict).
const bit<8> COPY_FIRST     = 1;   // first contribution: overwrite
const bit<8> COPY_ADD       = 2;   // a further contribution: add
const bit<8> COPY_RESEND    = 3;   // a retransmission into a complete copy: read
const bit<8> COPY_WAIT      = 4;   // a retransmission into an incomplete copy
const bit<8> COPY_COLLISION = 5;   // another chunk is mid-aggregation here
const bit<8> COPY_STALE     = 6;   // the copy has moved past this chunk

struct pair32_t {
    bit<32> lo;
    bit<32> hi;
}

struct copy_state_t {
    bit<32> tag;         // op_seq[10:0] ++ chunk[19:0] ++ header-only of the chunk held
    bit<32> remaining;   // contributions still missing; 0 = idle or complete
}

// Ingress tells egress which packets are multicast replicas to readdress.
header bridge_h {
    bit<7> pad;
    bit<1> replica;
}

// member_last's cell: registers start zeroed, so `seen` tells a member that
// never contributed here from one whose last tag happens to be 0.
struct member_cell_t {
    bit<32> tag;
    bit<32> seen;
}

struct pair8_t {
    bit<8> lo;
    bit<8> hi;
}

struct tna_meta_t {
    bit<1>  checksum_error;  // the IPv4 header checksum did not verify (parser)
    bit<32> token;
    bit<1>  aggregate;       // this switch aggregates the job
    bit<16> fan_in;
    bit<32> slot_base;
    bit<32> slots;
    bit<32> root_ip;
    bit<48> root_mac;
    PortId_t root_port;
    bit<16> root_node;
    bit<16> root_fan_in;
    bit<16> to_root_label;
    bit<16> mcast_group;
    bit<1>  member;          // the rank is a member here
    bit<5>  bit_index;
    bit<32> tag;
    bit<32> slot_abs;        // slot_base + slot
    bit<32> copy_index;      // 2 * slot_abs + copy
    bit<32> member_index;    // (copy index << 5) | member bit
    bit<32> fan_in_minus_1;
    bit<32> slot_room;       // slots - slot - 1: negative when slot >= slots
    bit<16> payload_bytes;   // total_length - 62
    bit<16> udp_expected;    // total_length - 20
    bit<8>  member_state;
    bit<8>  copy_decision;
    bit<8>  remaining;       // at most 31: fan_in <= 32 here
    bit<1>  edge;            // the packet came in on a port that faces a host
    bit<32> edge_ip;         // that host's address
    bit<32> reason;          // a drop reason (drops.p4), or 0
    bit<1>  drop;
    bridge_h bridge;
}

// Egress parses the headers only: the payload passes through unparsed and
// costs no egress PHV.
struct egress_headers_t {
    bridge_h   bridge;
    ethernet_h ethernet;
    ipv4_h     ipv4;
    udp_h      udp;
    grid_h     grid;
}

struct egress_meta_t {}

// ---------------------------------------------------------------- ingress

// The shared GridParser's states (p4/include/parser.p4), with the IPv4
// checksum fed to the parser's checksum engine as the header is extracted.
parser GridIngressParser(packet_in pkt, out headers_t hdr, out tna_meta_t meta,
                         out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_checksum;
    state start {
        meta = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                0, 0, 0, 0, {0, 0}};
        meta.bridge.setInvalid();
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        ipv4_checksum.add(hdr.ipv4);
        meta.checksum_error = (bit<1>)!ipv4_checksum.verify();
        transition select(hdr.ipv4.protocol) {
            IP_PROTO_UDP: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            GRID_UDP_PORT_BASE &&& GRID_UDP_PORT_MASK: parse_grid;
            default: accept;
        }
    }
    state parse_grid {
        pkt.extract(hdr.grid);
        transition select(hdr.grid.num_elements) {
            GRID_ELEMENTS: parse_payload;
            default: accept;
        }
    }
    state parse_payload {
        pkt.extract(hdr.payload);
        transition accept;
    }
}

control GridIngress(inout headers_t hdr, inout tna_meta_t meta,
                    in ingress_intrinsic_metadata_t ig_intr_md,
                    in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Counter<bit<64>, bit<32>>(GRID_DROP_REASONS, CounterType_t.PACKETS) drops;

    bit<16> node_id = 0;
    bit<32> switch_ip = 0;
    bit<48> switch_mac = 0;
    bit<16> result_label = 0;
    PortId_t member_port = 0;
    bit<32> member_ip = 0;
    bit<48> member_mac = 0;

    action set_identity(bit<16> id, bit<32> ip, bit<48> mac) {
        node_id = id;
        switch_ip = ip;
        switch_mac = mac;
    }
    table identity {
        actions = { set_identity; }
        default_action = set_identity(0, 0, 0);
    }

    action set_nhop(PortId_t port, bit<48> mac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.src = switch_mac;
        hdr.ethernet.dst = mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    action no_route() {}
    table label_route {
        key = { hdr.grid.path: exact; }
        actions = { set_nhop; no_route; }
        default_action = no_route();
        size = 65536;
    }
    table ip_route {
        key = { hdr.ipv4.dst: exact; }
        actions = { set_nhop; no_route; }
        default_action = no_route();
        size = 65536;
    }

    // Ports that face a host: the only source address they take (BCP 38).
    action set_edge(bit<32> ip) {
        meta.edge = 1;
        meta.edge_ip = ip;
    }
    table edge {
        key = { ig_intr_md.ingress_port: exact @name("standard_metadata.ingress_port"); }
        actions = { set_edge; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    action job_only(bit<32> token) {
        meta.token = token;
        meta.aggregate = 0;
    }
    action job_aggregate(bit<32> token, bit<16> fan_in, bit<32> slot_base, bit<32> slots,
                         PortId_t root_port, bit<32> root_ip, bit<48> root_mac,
                         bit<16> root_node, bit<16> root_fan_in, bit<16> to_root_label,
                         bit<16> mcast_group) {
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
        meta.fan_in_minus_1 = (bit<32>)fan_in - 1;
    }
    action unknown_job() {}
    table job {
        key = { hdr.grid.job_id: exact; }
        actions = { job_only; job_aggregate; unknown_job; }
        default_action = unknown_job();
        size = 4096;
    }

    action set_member(bit<8> bit_index, PortId_t port, bit<32> ip, bit<48> mac, bit<16> label) {
        meta.member = 1;
        meta.bit_index = bit_index[4:0];
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
        size = 65536;
    }

    // ---- Stage 3: has this member contributed this chunk to this copy?
    // One cell per (copy, member): the tag of the last chunk the member
    // added here. Serial-number order (RFC 1982) on the 32-bit tag. A packet
    // that is not newer is a retransmission or a late packet; copy_peek
    // tells them apart by the copy's own tag.
    Register<member_cell_t, bit<32>>(GRID_MEMBER_WORDS, {0, 0}) member_last;
    RegisterAction<member_cell_t, bit<32>, bit<8>>(member_last) member_check = {
        void apply(inout member_cell_t value, out bit<8> rv) {
            if (value.seen == 0 || (int<32>)(meta.tag - value.tag) > 0) {
                value.tag = meta.tag;
                value.seen = 1;
                rv = MEMBER_NEW;
            } else {
                rv = MEMBER_SEEN;
            }
        }
    };

    // ---- Stage 4: the copy's chunk and how many contributions are missing.
    // `remaining` starts at fan_in - 1 on the first contribution, so 0 means
    // idle or complete and a copy completes when it reaches 0. A new member's
    // packet never meets its own chunk complete (completion needed it), so a
    // free copy always takes it as the first contribution, whatever the tag:
    // zeroed registers need no initialization.
    Register<copy_state_t, bit<32>>(GRID_COPIES, {0, 0}) copy_state;
    // A contribution the member register found new.
    RegisterAction<copy_state_t, bit<32>, bit<8>>(copy_state) copy_contribute = {
        void apply(inout copy_state_t value, out bit<8> decision, out bit<8> remaining) {
            if (value.remaining == 0) {
                value.tag = meta.tag;
                value.remaining = meta.fan_in_minus_1;
                decision = COPY_FIRST;
            } else if (value.tag == meta.tag) {
                value.remaining = value.remaining - 1;
                decision = COPY_ADD;
            } else {
                decision = COPY_COLLISION;
            }
            remaining = (bit<8>)value.remaining;
        }
    };
    // A retransmission (the member register found it already counted), or a
    // late packet of a chunk the copy has moved past.
    RegisterAction<copy_state_t, bit<32>, bit<8>>(copy_state) copy_peek = {
        void apply(inout copy_state_t value, out bit<8> decision, out bit<8> remaining) {
            if (value.tag == meta.tag && value.remaining == 0) {
                decision = COPY_RESEND;
            } else if (value.tag == meta.tag) {
                decision = COPY_WAIT;
            } else {
                decision = COPY_STALE;
            }
            remaining = (bit<8>)value.remaining;
        }
    };

    // ---- Stages 5-12: the values, 4 pair SALUs per stage. Each returns
    // both halves: the packet's own values on the first contribution, the
    // running sums after an add, the stored sums for a resend.
#define VALUE_REGS(i) \
    Register<pair32_t, bit<32>>(GRID_COPIES) v##i; \
    RegisterAction<pair32_t, bit<32>, bit<32>>(v##i) v##i##_write = { \
        void apply(inout pair32_t value, out bit<32> lo, out bit<32> hi) { \
            value.lo = hdr.payload.e##i##_lo; value.hi = hdr.payload.e##i##_hi; \
            lo = value.lo; hi = value.hi; } }; \
    RegisterAction<pair32_t, bit<32>, bit<32>>(v##i) v##i##_add = { \
        void apply(inout pair32_t value, out bit<32> lo, out bit<32> hi) { \
            value.lo = value.lo + hdr.payload.e##i##_lo; \
            value.hi = value.hi + hdr.payload.e##i##_hi; \
            lo = value.lo; hi = value.hi; } }; \
    RegisterAction<pair32_t, bit<32>, bit<32>>(v##i) v##i##_read = { \
        void apply(inout pair32_t value, out bit<32> lo, out bit<32> hi) { \
            lo = value.lo; hi = value.hi; } }; \
    action v##i##_do_write() { \
        hdr.payload.e##i##_lo = v##i##_write.execute(meta.copy_index, hdr.payload.e##i##_hi); } \
    action v##i##_do_add() { \
        hdr.payload.e##i##_lo = v##i##_add.execute(meta.copy_index, hdr.payload.e##i##_hi); } \
    action v##i##_do_read() { \
        hdr.payload.e##i##_lo = v##i##_read.execute(meta.copy_index, hdr.payload.e##i##_hi); } \
    table v##i##_table { \
        key = { meta.copy_decision: exact; } \
        actions = { v##i##_do_write; v##i##_do_add; v##i##_do_read; NoAction; } \
        const entries = { \
            COPY_FIRST: v##i##_do_write(); \
            COPY_ADD: v##i##_do_add(); \
            COPY_RESEND: v##i##_do_read(); \
        } \
        default_action = NoAction(); \
        size = 4; \
    }
    FOR_PAIRS(VALUE_REGS)

    // ---- Stage 13: the exponents (max) and flags (or) of the copy.
    Register<pair8_t, bit<32>>(GRID_COPIES) copy_exponents;
    RegisterAction<pair8_t, bit<32>, bit<8>>(copy_exponents) exponents_first = {
        void apply(inout pair8_t value, out bit<8> exponent, out bit<8> next_exponent) {
            value.lo = hdr.grid.exponent;
            value.hi = hdr.grid.next_exponent;
            exponent = value.lo;
            next_exponent = value.hi;
        }
    };
    RegisterAction<pair8_t, bit<32>, bit<8>>(copy_exponents) exponents_max = {
        void apply(inout pair8_t value, out bit<8> exponent, out bit<8> next_exponent) {
            value.lo = max(value.lo, hdr.grid.exponent);
            value.hi = max(value.hi, hdr.grid.next_exponent);
            exponent = value.lo;
            next_exponent = value.hi;
        }
    };
    RegisterAction<pair8_t, bit<32>, bit<8>>(copy_exponents) exponents_read = {
        void apply(inout pair8_t value, out bit<8> exponent, out bit<8> next_exponent) {
            exponent = value.lo;
            next_exponent = value.hi;
        }
    };
    Register<bit<8>, bit<32>>(GRID_COPIES) copy_flags;
    RegisterAction<bit<8>, bit<32>, bit<8>>(copy_flags) flags_first = {
        void apply(inout bit<8> value, out bit<8> rv) {
            value = hdr.grid.flags & GRID_KEPT_FLAGS;
            rv = value;
        }
    };
    RegisterAction<bit<8>, bit<32>, bit<8>>(copy_flags) flags_or = {
        void apply(inout bit<8> value, out bit<8> rv) {
            value = value | (hdr.grid.flags & GRID_KEPT_FLAGS);
            rv = value;
        }
    };
    RegisterAction<bit<8>, bit<32>, bit<8>>(copy_flags) flags_read = {
        void apply(inout bit<8> value, out bit<8> rv) {
            rv = value;
        }
    };
    bit<8> copy_flag_bits = 0;

    // The addressing of a packet the switch makes (wire.h WriteFrameHeaders):
    // fresh IPv4 fields, GRID's source port, no UDP checksum.
    action readdress_made(bit<32> dst_ip, bit<48> dst_mac, PortId_t port) {
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
        ig_tm_md.ucast_egress_port = port;
    }

    // The sums of the copy go out as a PARTIAL to the root (sw EmitPartial).
    action to_partial(bit<16> requester, bit<8> flags) {
        readdress_made(meta.root_ip, meta.root_mac, meta.root_port);
        hdr.grid.type = GRID_TYPE_PARTIAL;
        hdr.grid.flags = flags;
        hdr.grid.rank = requester;
        hdr.grid.agg_node = meta.root_node;
        hdr.grid.path = meta.to_root_label;
        hdr.grid.next_path = 0;
        hdr.grid.fan_in = meta.root_fan_in;
        hdr.grid.job_token = meta.token;
    }

    // The colliding DATA returns to its sender as a SIGNAL (sw Signal).
    action to_signal() {
        readdress_made(member_ip, member_mac, member_port);
        hdr.ipv4.total_length = IPV4_UDP_GRID_BYTES;
        hdr.udp.length = UDP_GRID_BYTES;
        hdr.grid.type = GRID_TYPE_SIGNAL;
        hdr.grid.flags = GRID_FLAG_COLLISION | (hdr.grid.flags & GRID_FLAG_COPY);
        hdr.grid.job_token = meta.token;
        hdr.grid.agg_node = node_id;
        hdr.grid.path = result_label;
        hdr.grid.next_path = 0;
        hdr.grid.exponent = 0;
        hdr.grid.next_exponent = 0;
        hdr.grid.num_elements = 0;
        hdr.payload.setInvalid();
    }

    // The codec's checks, in wire::ParseFrame's order (where Tofino can see
    // the field: a frame shorter than its headers fails in the parser).
    action check_frame() {
        meta.payload_bytes = hdr.ipv4.total_length - IPV4_UDP_GRID_BYTES;
        meta.udp_expected = hdr.ipv4.total_length - 20;
    }

    apply {
        meta.bridge.setValid();
        meta.bridge.pad = 0;
        meta.bridge.replica = 0;
        identity.apply();
        edge.apply();
        check_frame();
        bool spoofed = meta.edge == 1 && hdr.ipv4.isValid() && hdr.ipv4.src != meta.edge_ip;
        bool is_chunk = hdr.grid.type == GRID_TYPE_DATA ||
                        hdr.grid.type == GRID_TYPE_PARTIAL ||
                        hdr.grid.type == GRID_TYPE_RESULT;
        if (!hdr.ipv4.isValid()) {
            meta.reason = DROP_NO_ROUTE;
        } else if (!hdr.udp.isValid() ||
                   (hdr.udp.dst_port & GRID_UDP_PORT_MASK) != GRID_UDP_PORT_BASE) {
            // Not GRID: a router's checks, then plain IPv4 forwarding.
            if (hdr.ipv4.version_ihl[7:4] != 4) {
                meta.reason = DROP_IPV4_VERSION;
            } else if (hdr.ipv4.version_ihl != IPV4_VERSION_IHL) {
                meta.reason = DROP_IPV4_IHL;
            } else if (meta.checksum_error == 1) {
                meta.reason = DROP_IPV4_CHECKSUM;
            } else if (spoofed) {
                meta.reason = DROP_BAD_SOURCE;
            } else if (hdr.ipv4.ttl <= 1) {
                meta.reason = DROP_TTL_EXPIRED;
            } else if (!ip_route.apply().hit) {
                meta.reason = DROP_NO_ROUTE;
            }
        } else if (!hdr.grid.isValid()) {
            meta.reason = DROP_FRAME_LENGTH;
        } else if (hdr.ipv4.version_ihl[7:4] != 4) {
            meta.reason = DROP_IPV4_VERSION;
        } else if (hdr.ipv4.version_ihl != IPV4_VERSION_IHL) {
            meta.reason = DROP_IPV4_IHL;
        } else if (hdr.ipv4.total_length < IPV4_UDP_GRID_BYTES) {
            meta.reason = DROP_IPV4_TOTAL_LENGTH;
        } else if (hdr.ipv4.flags_fragment[13:0] != 0) {
            meta.reason = DROP_IPV4_FLAGS_FRAGMENT;
        } else if (meta.checksum_error == 1) {
            meta.reason = DROP_IPV4_CHECKSUM;
        } else if (hdr.udp.length != meta.udp_expected) {
            meta.reason = DROP_UDP_LENGTH;
        } else if (hdr.grid.version != GRID_VERSION) {
            meta.reason = DROP_GRID_VERSION;
        } else if (hdr.grid.reserved != 0) {
            meta.reason = DROP_GRID_RESERVED;
        } else if (hdr.grid.type < GRID_TYPE_DATA || hdr.grid.type > GRID_TYPE_SIGNAL) {
            meta.reason = DROP_GRID_TYPE;
        } else if ((hdr.grid.flags & ~GRID_FLAGS_KNOWN) != 0) {
            meta.reason = DROP_GRID_FLAGS;
        } else if (hdr.grid.num_elements > GRID_MAX_ELEMENTS) {
            meta.reason = DROP_GRID_NUM_ELEMENTS;
        } else if (hdr.grid.fan_in == 0 && is_chunk) {
            meta.reason = DROP_GRID_FAN_IN;
        } else if (meta.payload_bytes != hdr.grid.num_elements << 2) {
            meta.reason = DROP_GRID_PAYLOAD;
        } else if (spoofed) {
            meta.reason = DROP_BAD_SOURCE;
        } else if (!job.apply().hit) {
            meta.reason = DROP_UNKNOWN_JOB;
        } else {
            // ---- Stages 0-2: admission, then the addresses of the copy.
            member.apply();
            // A header-only chunk (an exponent probe) is tagged apart from
            // the same chunk with elements: the two never share a copy.
            bit<1> header_only = hdr.payload.isValid() ? (bit<1>)0 : (bit<1>)1;
            meta.tag = hdr.grid.op_seq[10:0] ++ hdr.grid.chunk[19:0] ++ header_only;
            meta.slot_room = meta.slots - (bit<32>)hdr.grid.slot - 1;
            if (hdr.grid.job_token != meta.token) {
                meta.reason = DROP_BAD_TOKEN;
            } else if (hdr.grid.agg_node != node_id) {
                // Passing through: forward along the plan's path.
                if (hdr.ipv4.ttl <= 1) {
                    meta.reason = DROP_TTL_EXPIRED;
                } else if (!label_route.apply().hit) {
                    meta.reason = DROP_NO_ROUTE;
                } else {
                    hdr.udp.checksum = 0;
                }
            } else if (meta.aggregate == 0 ||
                       (hdr.grid.type != GRID_TYPE_DATA && hdr.grid.type != GRID_TYPE_RESULT)) {
                meta.reason = DROP_NOT_FOR_US;
            } else if (hdr.grid.type == GRID_TYPE_RESULT) {
                // Results come from the root, on the path from it.
                if (ig_intr_md.ingress_port != meta.root_port) {
                    meta.reason = DROP_BAD_INGRESS;
                } else if (hdr.ipv4.src != meta.root_ip) {
                    meta.reason = DROP_BAD_SOURCE;
                } else if (hdr.grid.rank == GRID_ALL_RANKS) {
                    ig_tm_md.mcast_grp_a = meta.mcast_group;
                    meta.bridge.replica = 1;
                    hdr.udp.checksum = 0;
                } else if (meta.member == 1) {
                    hdr.ethernet.src = switch_mac;
                    hdr.ethernet.dst = member_mac;
                    hdr.ipv4.ttl = FRESH_TTL;
                    hdr.ipv4.src = switch_ip;
                    hdr.ipv4.dst = member_ip;
                    hdr.udp.checksum = 0;
                    hdr.grid.path = result_label;
                    ig_tm_md.ucast_egress_port = member_port;
                } else {
                    meta.reason = DROP_NOT_MEMBER;
                }
            } else if (meta.member == 0) {
                meta.reason = DROP_NOT_MEMBER;
            } else if (ig_intr_md.ingress_port != member_port) {
                // A rank's chunks come from its host, on the plan's path.
                meta.reason = DROP_BAD_INGRESS;
            } else if (hdr.ipv4.src != member_ip) {
                meta.reason = DROP_BAD_SOURCE;
            } else if (hdr.grid.fan_in != meta.fan_in) {
                meta.reason = DROP_BAD_FAN_IN;
            } else if (meta.slot_room[31:31] == 1) {
                meta.reason = DROP_BAD_SLOT;
            } else if (!hdr.payload.isValid() && hdr.grid.num_elements != 0) {
                // Every chunk carries the job's GRID_ELEMENTS elements, or
                // none (an exponent probe).
                meta.reason = DROP_BAD_LENGTH;
            } else {
                meta.slot_abs = meta.slot_base + (bit<32>)hdr.grid.slot;
                meta.copy_index = meta.slot_abs[30:0] ++ hdr.grid.flags[3:3];
                meta.member_index = meta.slot_abs[25:0] ++ hdr.grid.flags[3:3] ++ meta.bit_index;

                // ---- Stages 3-4: duplicate / late check, then the copy's decision.
                meta.member_state = member_check.execute(meta.member_index);
                if (meta.member_state == MEMBER_NEW) {
                    meta.copy_decision = copy_contribute.execute(meta.copy_index,
                                                                 meta.remaining);
                } else {
                    meta.copy_decision = copy_peek.execute(meta.copy_index, meta.remaining);
                }

                // ---- Stages 5-12: values, which a probe has none of.
#define APPLY_VALUE(i) v##i##_table.apply();
                if (hdr.payload.isValid()) { FOR_PAIRS(APPLY_VALUE) }

                // ---- Stage 13: exponents and flags.
                if (meta.copy_decision == COPY_FIRST) {
                    hdr.grid.exponent = exponents_first.execute(meta.copy_index,
                                                                hdr.grid.next_exponent);
                    copy_flag_bits = flags_first.execute(meta.copy_index);
                } else if (meta.copy_decision == COPY_ADD) {
                    hdr.grid.exponent = exponents_max.execute(meta.copy_index,
                                                              hdr.grid.next_exponent);
                    copy_flag_bits = flags_or.execute(meta.copy_index);
                } else if (meta.copy_decision == COPY_RESEND) {
                    hdr.grid.exponent = exponents_read.execute(meta.copy_index,
                                                               hdr.grid.next_exponent);
                    copy_flag_bits = flags_read.execute(meta.copy_index);
                }

                // ---- Stage 14: what leaves.
                if ((meta.copy_decision == COPY_FIRST || meta.copy_decision == COPY_ADD) &&
                    meta.remaining == 0) {
                    // Complete: the payload holds the sums and leaves as the partial.
                    to_partial(GRID_ALL_RANKS, (hdr.grid.flags & GRID_FLAG_COPY) | copy_flag_bits);
                } else if (meta.copy_decision == COPY_FIRST || meta.copy_decision == COPY_ADD) {
                    meta.drop = 1;   // consumed into the copy
                } else if (meta.copy_decision == COPY_RESEND) {
                    to_partial(hdr.grid.rank, (hdr.grid.flags & GRID_FLAG_COPY) | copy_flag_bits |
                                              GRID_FLAG_RETRANSMIT);
                } else if (meta.copy_decision == COPY_WAIT) {
                    meta.reason = DROP_DUPLICATE;
                } else if (meta.copy_decision == COPY_STALE) {
                    meta.reason = DROP_STALE;
                } else {
                    meta.reason = DROP_COLLISION;
                    to_signal();
                }
            }
        }
        if (meta.reason != 0) {
            drops.count(meta.reason);
            // A collision is counted, and its SIGNAL still leaves.
            if (meta.reason != DROP_COLLISION) { meta.drop = 1; }
        }
        if (meta.drop == 1) { ig_dprsr_md.drop_ctl = 1; }
    }
}

control GridIngressDeparser(packet_out pkt, inout headers_t hdr, in tna_meta_t meta,
                            in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_checksum;
    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.checksum = ipv4_checksum.update({
                hdr.ipv4.version_ihl, hdr.ipv4.tos, hdr.ipv4.total_length,
                hdr.ipv4.identification, hdr.ipv4.flags_fragment, hdr.ipv4.ttl,
                hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst });
        }
        pkt.emit(meta.bridge);
        pkt.emit(hdr);
    }
}

// ---------------------------------------------------------------- egress

parser GridEgressParser(packet_in pkt, out egress_headers_t hdr, out egress_meta_t meta,
                        out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.bridge);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            IP_PROTO_UDP: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            GRID_UDP_PORT_BASE &&& GRID_UDP_PORT_MASK: parse_grid;
            default: accept;
        }
    }
    state parse_grid {
        pkt.extract(hdr.grid);
        transition accept;
    }
}

control GridEgress(inout egress_headers_t hdr, inout egress_meta_t meta,
                   in egress_intrinsic_metadata_t eg_intr_md,
                   in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                   inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                   inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    bit<32> switch_ip = 0;
    bit<48> switch_mac = 0;
    // In queue cells, not packets: grid-tables --p4 --queue-cell-bytes=N
    // converts the table file's threshold (docs/switch.md, "Tofino").
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
    // replication id (the member's bit) names. The key keeps v1model's name
    // so one entry file feeds both programs.
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
        key = {
            hdr.grid.job_id: exact;
            eg_intr_md.egress_rid: exact @name("standard_metadata.egress_rid");
        }
        actions = { set_replica; NoAction; }
        default_action = NoAction();
        size = 65536;
    }

    apply {
        egress_identity.apply();
        if (hdr.grid.isValid()) {
            if (hdr.bridge.replica == 1) { replica.apply(); }
            if (hdr.grid.type != GRID_TYPE_SIGNAL && eg_intr_md.enq_qdepth > congestion_threshold) {
                hdr.grid.flags = hdr.grid.flags | GRID_FLAG_CONGESTION;
            }
        }
    }
}

control GridEgressDeparser(packet_out pkt, inout egress_headers_t hdr, in egress_meta_t meta,
                           in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;
    apply {
        if (hdr.ipv4.isValid()) {
            hdr.ipv4.checksum = ipv4_checksum.update({
                hdr.ipv4.version_ihl, hdr.ipv4.tos, hdr.ipv4.total_length,
                hdr.ipv4.identification, hdr.ipv4.flags_fragment, hdr.ipv4.ttl,
                hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst });
        }
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.grid);
    }
}

Pipeline(GridIngressParser(), GridIngress(), GridIngressDeparser(),
         GridEgressParser(), GridEgress(), GridEgressDeparser()) pipe;

Switch(pipe) main;
