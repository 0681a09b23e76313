"""Compares tshark's view of GRID frames, through tools/wireshark/grid.lua,
with the C++ codec's view of the same bytes (dissector_frames' expected.tsv).

    compare_dissector.py EXPECTED.tsv TSHARK_FIELDS.tsv MIN_PER_TYPE

Every frame the codec accepts must show every header field, flag bit and
payload element as the codec read them; every frame the codec refuses for a
GRID field must carry the dissector's error for that field; a frame refused
for its UDP port must not be dissected as GRID at all. Exit 1 with the first
differences otherwise."""
import sys

# The tshark fields asked for, in dissector_test.sh's order.
FIELDS = ["frame.number", "grid.version", "grid.type", "grid.flags", "grid.flags.retransmit",
          "grid.flags.congestion", "grid.flags.overflow", "grid.flags.copy",
          "grid.flags.collision", "grid.flags.passed", "grid.reserved", "grid.job_id",
          "grid.job_token", "grid.rank", "grid.agg_node", "grid.path", "grid.next_path",
          "grid.fan_in", "grid.slot", "grid.op_seq", "grid.chunk", "grid.exponent",
          "grid.next_exponent", "grid.num_elements", "grid.element", "_ws.expert.message"]
# The codec's columns after "valid", in dissector_frames' order.
CODEC = ["grid.type", "grid.flags", "grid.job_id", "grid.job_token", "grid.rank",
         "grid.agg_node", "grid.path", "grid.next_path", "grid.fan_in", "grid.slot",
         "grid.op_seq", "grid.chunk", "grid.exponent", "grid.next_exponent",
         "grid.num_elements"]
FLAG_BITS = {"grid.flags.retransmit": 0x01, "grid.flags.congestion": 0x02,
             "grid.flags.overflow": 0x04, "grid.flags.copy": 0x08,
             "grid.flags.collision": 0x10, "grid.flags.passed": 0x20}
# The dissector's error for each GRID field the codec names (wire::WireErrorName).
ERRORS = {"grid.version": "Not GRID version 1", "grid.type": "Unknown message type",
          "grid.flags": "Unknown flag bits set", "grid.reserved": "Reserved byte is not zero",
          "grid.num_elements": "More than 1024 elements", "grid.fan_in": "Fan-in is zero",
          "grid.payload": "Payload is not num_elements * 4 bytes"}
TYPES = {1: "DATA", 2: "PARTIAL", 3: "RESULT", 4: "SIGNAL"}


def main():
    expected_path, tshark_path, min_per_type = sys.argv[1], sys.argv[2], int(sys.argv[3])
    seen = {}
    for line in open(tshark_path):
        cols = line.rstrip("\n").split("\t")
        if len(cols) != len(FIELDS):
            sys.exit(f"tshark gave {len(cols)} columns, not {len(FIELDS)}: {line[:200]}")
        seen[int(cols[0])] = dict(zip(FIELDS, cols))
    problems, checked, by_type, refused = [], 0, {}, 0
    for line in open(expected_path):
        cols = line.rstrip("\n").split("\t")
        number, verdict = int(cols[0]), cols[1]
        got = seen.get(number)
        if got is None:
            problems.append(f"frame {number}: not in tshark's output")
            continue
        if verdict == "invalid":
            reason = cols[2]
            if reason in ERRORS:
                refused += 1
                if ERRORS[reason] not in got["_ws.expert.message"]:
                    problems.append(f"frame {number}: the codec refuses {reason}, the dissector "
                                    f"says {got['_ws.expert.message']!r}")
            elif reason == "udp.dst_port" and got["grid.version"] != "":
                problems.append(f"frame {number}: not a GRID port, dissected as GRID")
            continue
        want = dict(zip(CODEC, (int(c) for c in cols[2:2 + len(CODEC)])))
        want["grid.version"], want["grid.reserved"] = 1, 0
        elements = cols[2 + len(CODEC)] if len(cols) > 2 + len(CODEC) else ""
        for field, value in want.items():
            text = got[field]
            if text == "" or int(text, 0) != value:
                problems.append(f"frame {number}: {field} is {text!r}, the codec read {value}")
        for field, bit in FLAG_BITS.items():
            # tshark before 4.2 prints a flag as 1/0, later as True/False.
            flag = {"1": 1, "0": 0, "True": 1, "False": 0}.get(got[field], -1)
            if flag != int(bool(want["grid.flags"] & bit)):
                problems.append(f"frame {number}: {field} is {got[field]!r}, flags "
                                f"0x{want['grid.flags']:02x}")
        if got["grid.element"] != elements:
            problems.append(f"frame {number}: elements differ: {got['grid.element'][:80]!r} "
                            f"against the codec's {elements[:80]!r}")
        checked += 1
        by_type[want["grid.type"]] = by_type.get(want["grid.type"], 0) + 1
    summary = ", ".join(f"{TYPES[t]} {by_type.get(t, 0)}" for t in sorted(TYPES))
    print(f"{checked} valid frames compared field by field ({summary}); {refused} refused "
          f"for a GRID field, each flagged")
    short = [TYPES[t] for t in TYPES if by_type.get(t, 0) < min_per_type]
    if short:
        problems.append(f"fewer than {min_per_type} valid frames of {', '.join(short)}")
    if problems:
        print(f"{len(problems)} differences; the first:", *problems[:10], sep="\n  ")
        sys.exit(1)


if __name__ == "__main__":
    main()
