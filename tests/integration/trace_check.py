#!/usr/bin/env python3
"""Checks a GRID_TRACE directory against Chrome's trace-event format, as
Perfetto's JSON importer reads it (docs/observability.md):

- every file is a JSON object with traceEvents (a list) and GRID's otherData
  (grid_trace, process, role, dropped_events);
- every event has a name, a phase GRID writes (M B E i C b e), a numeric ts
  (except metadata), integer pid and tid, a category (except metadata),
  numeric args (C needs at least one), an instant scope, an async id;
- per thread, B and E nest: each E closes the innermost open B of its name,
  in time order, and nothing is open at the end; per process, each async
  slice (cat, name, id) opens with b before it closes with e, once;
- the roles expected are there, with the events each role must record.

  trace_check.py DIR --ranks N --switches N --roots N

Exit 1 names the file, the event and the rule it breaks.
"""
import argparse
import collections
import json
import numbers
import os
import sys

PHASES = set("MBEiCbe")
MUST_HAVE = {  # role: (phase, name) that a run's trace must hold
    "rank": [("b", "allreduce"), ("e", "allreduce"), ("C", "chunks"), ("B", "results wait")],
    "switch": [("C", "copies busy"), ("C", "queue depth"), ("C", "aggregated"), ("C", "drops")],
    "root": [("C", "chunks"), ("C", "copies busy")],
}


class Bad(Exception):
    pass


def check_event(e, where):
    for key, kind in (("name", str), ("ph", str), ("pid", int), ("tid", int)):
        if not isinstance(e.get(key), kind) or isinstance(e.get(key), bool):
            raise Bad(f"{where}: field {key} missing or not {kind.__name__}: {e}")
    ph = e["ph"]
    if ph not in PHASES:
        raise Bad(f"{where}: phase {ph!r} is none of {''.join(sorted(PHASES))}")
    if ph == "M":
        if e["name"] not in ("process_name", "thread_name") or "name" not in e.get("args", {}):
            raise Bad(f"{where}: metadata without a name: {e}")
        return
    if not isinstance(e.get("ts"), numbers.Real) or e["ts"] < 0:
        raise Bad(f"{where}: ts missing or negative: {e}")
    if not isinstance(e.get("cat"), str) or not e["cat"]:
        raise Bad(f"{where}: no category: {e}")
    args = e.get("args", {})
    if not isinstance(args, dict) or not all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) for v in args.values()):
        raise Bad(f"{where}: args not numeric: {e}")
    if ph == "C" and not args:
        raise Bad(f"{where}: a counter without values: {e}")
    if ph == "i" and e.get("s") not in ("t", "p", "g"):
        raise Bad(f"{where}: instant without scope t/p/g: {e}")
    if ph in "be" and not isinstance(e.get("id"), str):
        raise Bad(f"{where}: async event without an id: {e}")


def check_nesting(events, path):
    stacks = collections.defaultdict(list)
    open_async = {}
    # Perfetto orders by time; events of one time keep their file order.
    timed = sorted((e for e in events if e["ph"] != "M"), key=lambda e: e["ts"])
    for e in timed:
        where = f"{path}: {e['ph']} {e['name']!r} at ts {e['ts']}"
        track = (e["pid"], e["tid"])
        if e["ph"] == "B":
            stacks[track].append(e["name"])
        elif e["ph"] == "E":
            if not stacks[track] or stacks[track][-1] != e["name"]:
                raise Bad(f"{where}: E closes no open B of that name (open: {stacks[track]})")
            stacks[track].pop()
        elif e["ph"] in "be":
            key = (e["pid"], e["cat"], e["name"], e["id"])
            if e["ph"] == "b":
                if key in open_async:
                    raise Bad(f"{where}: async slice {key} opened twice")
                open_async[key] = e["ts"]
            elif open_async.pop(key, None) is None:
                raise Bad(f"{where}: e closes no open async slice {key}")
    for track, stack in stacks.items():
        if stack:
            raise Bad(f"{path}: thread {track} ends with slices open: {stack}")
    if open_async:
        raise Bad(f"{path}: async slices never closed: {sorted(open_async)[:3]}")


def check_file(path):
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise Bad(f"{path}: not an object with a traceEvents list")
    other = doc.get("otherData", {})
    for key in ("grid_trace", "process", "role", "dropped_events"):
        if key not in other:
            raise Bad(f"{path}: otherData has no {key}")
    events = doc["traceEvents"]
    for i, e in enumerate(events):
        check_event(e, f"{path}: event {i}")
    check_nesting(events, path)
    have = {(e["ph"], e["name"]) for e in events}
    for need in MUST_HAVE.get(other["role"], []):
        if need not in have:
            raise Bad(f"{path}: a {other['role']}'s trace without {need[0]} {need[1]!r}")
    return other["role"], len(events), other["dropped_events"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("dir")
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--switches", type=int, required=True)
    p.add_argument("--roots", type=int, default=1)
    a = p.parse_args()
    roles = collections.Counter()
    total = 0
    try:
        for name in sorted(os.listdir(a.dir)):
            if not name.endswith(".json"):
                continue
            role, n, dropped = check_file(os.path.join(a.dir, name))
            roles[role] += 1
            total += n
            print(f"{name}: {role}, {n} events, {dropped} dropped")
        want = {"rank": a.ranks, "switch": a.switches, "root": a.roots}
        if dict(roles) != {k: v for k, v in want.items() if v}:
            raise Bad(f"{a.dir}: traces by role {dict(roles)}, expected {want}")
    except (Bad, ValueError) as e:
        print(f"FAIL: {e}")
        return 1
    print(f"trace_check: {sum(roles.values())} files, {total} events: fields, phases and "
          "nesting hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
