#!/usr/bin/env python3
"""Merges a GRID_TRACE directory into one Chrome trace-event file, so a
run's ranks, switches and root show on one timeline in Perfetto
(ui.perfetto.dev) or chrome://tracing, which open one file at a time. Every
file's events keep their times (all are Unix time); each file becomes a
process of its own (pids renumbered, as processes on different hosts may
share one).

  scripts/trace_merge.py DIR OUT.json
"""
import json
import os
import sys


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = sys.argv[1], sys.argv[2]
    events, dropped = [], 0
    names = sorted(n for n in os.listdir(src) if n.endswith(".json"))
    for pid, name in enumerate(names, start=1):
        with open(os.path.join(src, name), encoding="utf-8") as f:
            doc = json.load(f)
        dropped += doc.get("otherData", {}).get("dropped_events", 0)
        for e in doc["traceEvents"]:
            e["pid"] = pid
            events.append(e)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"displayTimeUnit": "ns", "otherData": {"grid_trace": 1, "files": names,
                                                          "dropped_events": dropped},
                   "traceEvents": events}, f)
    print(f"{out}: {len(names)} processes, {len(events)} events")


if __name__ == "__main__":
    main()
