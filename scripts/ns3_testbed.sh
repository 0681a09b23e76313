#!/usr/bin/env bash
# The paper's testbed three ways (docs/simulation.md, "Validation"): runs
# scripts/testbed.sh in both regimes, its ranks printing each AllReduce's
# entry and exit (--call-times), then grid-ns3 on the same topology scaled
# as the testbed scales it (100 Gbps is 20 Mbps), per planner twice:
#   lags     every rank starting as late as it entered on the testbed, on
#            average, behind the first rank (slow=R@T): the testbed's own
#            measure, the slowest rank's time inside AllReduce, compares;
#   at once  every rank starting together: compares with the testbed's time
#            from the last rank's entry to the last rank's exit.
# Also the bytes each rank sent per allreduce, from both sides' counters.
# Writes OUT/testbed.md (the tables) and OUT/testbed-<regime>.md (testbed.sh's
# own output).
#
#   scripts/ns3_testbed.sh [BUILD_DIR] [OUT_DIR]
#   env: REPEAT (3 testbed runs per planner and regime), REGIMES ("paper links"),
#        PLANNERS ("grid grid-paths atp switchml geryon"), ITERATIONS (20),
#        RUNS (a directory of earlier runs' logs: no testbed runs, the tables again)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
out=${2:-docs/results/ns3}
regimes=${REGIMES:-"paper links"}
planners=${PLANNERS:-"grid grid-paths atp switchml geryon"}
ns3="$build/sim/grid-ns3"
[ -x "$ns3" ] || { echo "ns3_testbed: $ns3 not built (needs libns3-dev)" >&2; exit 1; }
mkdir -p "$out"

runs=${RUNS:-}
if [ -z "$runs" ]; then
  runs=$(mktemp -d /tmp/grid-ns3-testbed.XXXXXX)
  for regime in $regimes; do
    # testbed.sh exits nonzero when a run failed: the tables say which.
    REGIME=$regime REPEAT=${REPEAT:-3} PLANNERS="$planners" ITERATIONS=${ITERATIONS:-20} \
      KEEP="$runs/$regime" scripts/testbed.sh "$build/tools" | tee "$out/testbed-$regime.md" || true
  done
fi

/usr/bin/env python3 - "$runs" "$ns3" "$regimes" "$planners" > "$out/testbed.md" <<'EOF'
import csv, os, statistics, subprocess, sys, tempfile
sys.path.insert(0, "scripts")  # run from the repository root
from grid_logs import last_json

runs_dir, ns3, regimes, planners = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
# The testbed's topologies (testbed.sh) with its emulation's scale applied.
topology = {
    "paper": "testbed:link=0.02,ps=0.0128,fabric=0.04,cap=fixed:0.64,cap.S2=0.00684,cap.S3=0.00684",
    "links": "testbed:link=0.02",
}

def testbed(regime, planner):
    """The testbed's runs of one planner: its measure, the time after the
    last entry, each rank's mean lag and the bytes per allreduce."""
    base = os.path.join(runs_dir, regime, planner)
    measure, after_last, spread, lags, bytes_per_op = [], [], [], [[] for _ in range(8)], []
    for run in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        ranks = [last_json(os.path.join(base, run, f"rank-{r}.log")) for r in range(8)]
        if any(r is None or not r.get("ok") or "calls" not in r for r in ranks):
            continue
        measure.append(max(r["comm_ms_per_iteration"] for r in ranks))
        # Per checked allreduce: the communicator's one-element check at
        # start-up (an operation of its own, a frame or two) is in bytes_sent.
        bytes_per_op.append(statistics.mean(r["bytes_sent"] / len(r["calls"]) for r in ranks))
        for k in range(min(len(r["calls"]) for r in ranks)):
            enter = [r["calls"][k][0] for r in ranks]
            leave = [r["calls"][k][1] for r in ranks]
            after_last.append((max(leave) - max(enter)) / 1e3)
            spread.append((max(enter) - min(enter)) / 1e3)
            for r in range(8):
                lags[r].append(enter[r] - min(enter))
    if not measure:
        return None
    return {
        "measure": statistics.mean(measure),
        "after_last": statistics.mean(after_last),
        "spread": statistics.mean(spread),
        "lags_us": [round(statistics.mean(l)) for l in lags],
        "bytes": statistics.mean(bytes_per_op),
        "runs": len(measure),
    }

def ns3_run(regime, planner, lags_us):
    with tempfile.NamedTemporaryFile(suffix=".csv") as f:
        args = [ns3, f"--topology={topology[regime]}", f"--planners={planner}", "--workers=8",
                "--elements=32768", "--type=float32", "--frame=64", "--slots=256", f"--csv={f.name}"]
        if lags_us:
            args.append("--faults=" + ";".join(f"slow={r}@{l}us" for r, l in enumerate(lags_us) if l))
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
        row = next(csv.DictReader(open(f.name)))
        if row["exact"] != "1":
            sys.exit(f"ns3_testbed: {planner} in {regime}: not exact")
        return float(row["slowest_rank_ms"]), float(row["bytes_per_rank"])

print("| regime | planner | testbed runs | testbed (ms) | ns-3, testbed's lags (ms) | ratio "
      "| mean spread of entries (ms) | testbed after last entry (ms) | ns-3 at once (ms) | ratio "
      "| bytes / allreduce: testbed | ns-3 |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for regime in regimes:
    for p in planners:
        t = testbed(regime, p)
        if t is None:
            print(f"| {regime} | {p} | 0 | | | | | | | | | |")
            continue
        lagged, _ = ns3_run(regime, p, t["lags_us"])
        at_once, ns3_bytes = ns3_run(regime, p, None)
        print(f"| {regime} | {p} | {t['runs']} | {t['measure']:.1f} | {lagged:.1f} | "
              f"{lagged / t['measure']:.2f} | {t['spread']:.1f} | {t['after_last']:.1f} | {at_once:.1f} | "
              f"{at_once / t['after_last']:.2f} | {t['bytes']:.0f} | {ns3_bytes:.0f} |")
EOF
cat "$out/testbed.md"
