// The GRID parser, shared by both architectures as a sub-parser: Ethernet,
// IPv4 without options and unfragmented, UDP to the GRID port range, the GRID
// header, and the 64-element payload when there is one. Anything else stops
// early and is forwarded by IPv4 routes (or dropped).
#ifndef GRID_P4_PARSER_
#define GRID_P4_PARSER_

parser GridParser(packet_in pkt, out headers_t hdr, inout grid_meta_t meta) {
    state start {
        meta.is_grid = 0;
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.version_ihl, hdr.ipv4.flags_fragment[13:0], hdr.ipv4.protocol) {
            (0x45, 0, IP_PROTO_UDP): parse_udp;
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
        meta.is_grid = 1;
        // A payload of exactly 64 elements is parsed into the PHV; other
        // sizes are left in the packet body (the job table only accepts
        // 64-element jobs for aggregation on this target).
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

#endif
