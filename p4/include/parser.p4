// The GRID parser, shared by both architectures as a sub-parser. It
// classifies as the reference pipeline does (lib/switch/pipeline.cc): an
// IPv4 packet whose protocol is UDP and whose destination port, where an
// option-less header puts it, is in the GRID range is GRID, whatever else
// its headers say. The ingress then checks those headers in the codec's
// order and drops with the codec's reason. A 64-element payload is parsed
// into the PHV; any other size stays in the packet body.
#ifndef GRID_P4_PARSER_
#define GRID_P4_PARSER_

parser GridParser(packet_in pkt, out headers_t hdr) {
    state start {
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
