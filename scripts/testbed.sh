#!/usr/bin/env bash
# The paper's testbed on one machine (docs/results.md, "Testbed"): three
# software switches in a triangle, 8 workers and the root, every process its
# own DPDK application, every link a memif pair rate-limited to its rate in
# the topology scaled down (so two cores are not the bottleneck). For each
# planner it runs a training-like loop: ITERATIONS iterations of an emulated
# compute phase, then an allreduce of a scaled-down VGG16 gradient, every
# element checked against the exact sum. Prints a markdown table (mean ± sd
# over REPEAT runs), then grid's reduction of communication time and its
# training throughput gain.
#
#   REGIME=paper|links REPEAT=N scripts/testbed.sh [TOOLS_DIR]
#
# Regimes (docs/results.md, "Two regimes", derives the numbers):
#   paper  the paper's condition: the PS ingress B = 64 Gbps and S2's and S3's
#          capacity C_s = 34.2 Gbps bind; S1 (the PS's ToR) has 3200, and the
#          fabric links (200 Gbps) have headroom. ATP runs best effort.
#   links  every switch port alike at 100 Gbps, C_s never binds: the regime
#          where path-aware routing matters.
# env: REGIME (paper), REPEAT (1), PLANNERS ("grid grid-paths atp switchml
#      geryon"), SCALE (emulated Gbps per topology Gbps, 0.0002: 100 Gbps is
#      20 Mbps), COUNT (gradient elements, 32768: VGG16 scaled down),
#      ITERATIONS (20), COMPUTE_RATIO (compute time over Geryon's predicted
#      communication time, 0.66: VGG16 in the paper, Fig. 7(b); 0: none),
#      TOPOLOGY (instead of the regime's; shaped as the regime shapes),
#      KEEP (a directory to copy every run's logs to), PLOT (a PNG of the
#      communication time per planner, mean and sd, drawn by gnuplot; the
#      numbers beside it in PLOT.dat).
set -uo pipefail
cd "$(dirname "$0")/.."
tools=${1:-build/release/tools}
regime=${REGIME:-paper}
repeat=${REPEAT:-1}
planners=${PLANNERS:-"grid grid-paths atp switchml geryon"}
scale=${SCALE:-0.0002}
count=${COUNT:-32768}
iterations=${ITERATIONS:-20}
compute_ratio=${COMPUTE_RATIO:-0.66}
case $regime in
  paper)
    topology="testbed:ps=64,fabric=200,cap.S2=34.2,cap.S3=34.2"
    shaping=(--emulation-scale="$scale")
    ;;
  links)
    topology="testbed"
    shaping=(--link-gbps="$(awk -v s="$scale" 'BEGIN { print 100 * s }')")
    ;;
  *)
    echo "testbed.sh: REGIME must be paper or links, not \"$regime\"" >&2
    exit 2
    ;;
esac
topology=${TOPOLOGY:-$topology}
. scripts/fabric.sh
trap 'fabric_kill' EXIT

# The compute phase: COMPUTE_RATIO times the communication time the flow
# model predicts for Geryon (every worker straight to the PS) in this
# regime. One float32 iteration sends ceil(COUNT/64) frames of 332 bytes.
geryon_gbps=$("$tools/grid-plan" --topology="$topology" --workers=8 --planner=geryon \
  --model=links | sed -n 's/^min rate *\([0-9.]*\) Gbps/\1/p')
compute_ms=$(awk -v r="$compute_ratio" -v n="$count" -v g="$geryon_gbps" -v s="$scale" \
  'BEGIN { printf "%d", r * int((n + 63) / 64) * 332 * 8 / (g * s * 1e9) * 1e3 + 0.5 }')

out=$(mktemp -d /tmp/grid-testbed-runs.XXXXXX)
echo "Testbed, regime \"$regime\": $topology, links and C_s scaled by $scale;"
echo "8 workers, 1 root; $iterations iterations of ${compute_ms} ms compute + an allreduce"
echo "of $count float32, per planner, $repeat run(s) each."
echo
job=$((100 + RANDOM % 800))
# Progress on a terminal only (stderr), erased when the table comes.
total=$((repeat * $(wc -w <<< "$planners"))) done_runs=0 started=$SECONDS
progress() {
  [ -t 2 ] && [ "${GRID_PROGRESS:-1}" != 0 ] || return 0
  if [ "$1" = done ]; then printf '\r\033[K' >&2; return 0; fi
  printf '\rtestbed: %s run %d/%d (%d of %d done, %d s)\033[K' "$1" "$2" "$repeat" \
    "$done_runs" "$total" $((SECONDS - started)) >&2
}
for run in $(seq 1 "$repeat"); do
  for planner in $planners; do
    progress "$planner" "$run"
    job=$((job + 1))
    work=$(mktemp -d /tmp/grid-testbed.XXXXXX)
    # The paper's Tofino frames (64 elements, a pool of 256), not the
    # controller's default (the widest frame memif takes).
    if ! fabric_start "$tools" "$work" --topology="$topology" --workers=8 --planner="$planner" \
        --elements=64 --slots=256 --job-id=$job --memif-dir="$work/sock" "${shaping[@]}" \
        --eal-memory-mb=64; then
      echo "$planner run $run: controller failed" >&2
      continue
    fi
    GRID_TIMEOUT_MS=120000 fabric_ranks 8 "$tools/grid-allreduce-check" \
      --iterations="$iterations" --count="$count" --types=float32 --compute-ms="$compute_ms" \
      --call-times
    status=0
    fabric_wait_ranks || status=1
    fabric_stop
    dir="$out/$planner/$run"
    mkdir -p "$dir"
    cp "$work"/rank-*.log "$work"/switch-*.log "$work/controller.log" "$dir/" 2>/dev/null
    [ -f "$work/root.log" ] && cp "$work/root.log" "$dir/"
    if [ $status -ne 0 ]; then
      echo "$planner run $run failed; logs in $work" >&2
      continue
    fi
    rm -rf "$work"
    done_runs=$((done_runs + 1))
  done
done
progress done

# The table: per planner, mean ± sd over the runs that completed. Exits 1
# if a run failed or a result was wrong.
/usr/bin/env python3 - "$out" "$regime" "$planners" "$repeat" "$scale" <<'EOF'
import os, re, statistics, sys
sys.path.insert(0, "scripts")  # run from the repository root
from grid_logs import last_json

out, regime, planners, repeat = sys.argv[1], sys.argv[2], sys.argv[3].split(), int(sys.argv[4])
scale = float(sys.argv[5])

def model_mbps(d):
    # The controller's own evaluation of the plan it published, in the
    # regime's model, scaled to the emulated links.
    try:
        for line in open(os.path.join(d, "controller.log")):
            m = re.match(r"grid-controller: model (\S+) predicts a min rate of ([0-9.]+) Gbps", line)
            if m and m.group(1) == regime:
                return float(m.group(2)) * scale * 1e3
    except OSError:
        pass
    return None

def ms(values, digits=1):
    if not values:
        return "—"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.{digits}f} ± {sd:.{digits}f}"

rows, comm, comm_sd, iteration, bad = [], {}, {}, {}, False
for p in planners:
    runs = sorted(os.listdir(os.path.join(out, p))) if os.path.isdir(os.path.join(out, p)) else []
    c, it, rate, wrong, worst, retrans, failed = [], [], [], 0, 0.0, [], 0
    model, of_model, needless, early = [], [], [], []
    aggregated, passed, proxied, root_passed, root_proxied = {}, [], [], [], []
    for run in runs:
        d = os.path.join(out, p, run)
        ranks = [last_json(os.path.join(d, f"rank-{r}.log")) for r in range(8)]
        if any(r is None or not r.get("ok") for r in ranks):
            failed += 1
            wrong += sum(r.get("wrong", 0) for r in ranks if r)
            continue
        c.append(max(r["comm_ms_per_iteration"] for r in ranks))
        it.append(max(r["iteration_ms"] for r in ranks))
        rate.append(sum(r["send_mbps"] for r in ranks) / 8)
        retrans.append(sum(r["retransmissions"] for r in ranks))
        early.append(sum(r.get("early_retransmissions", 0) for r in ranks))
        # First sends only: a resend adds to the bytes sent but not to the
        # rate the plan delivers.
        first = sum(r["send_mbps"] * (1 - r["retransmissions"] / max(r["packets_sent"], 1))
                    for r in ranks) / 8
        if (m := model_mbps(d)) is not None:
            model.append(m)
            of_model.append(100 * first / m)
        # Resends whose chunk was not lost: the aggregator already held the
        # rank's contribution (a duplicate in an incomplete copy), the copy
        # had moved on (stale), or the first result came back after all (a
        # duplicate result at the rank). The fabric never duplicates a
        # packet in these regimes, so each is a resend.
        run_needless = sum(r.get("duplicate_results", 0) for r in ranks)
        chunks = sum(r["packets_sent"] - r["retransmissions"] for r in ranks)
        worst = max(worst, max(r["worst_error_over_bound"] for r in ranks))
        run_passed = run_proxied = 0
        for f in sorted(os.listdir(d)):
            m = re.match(r"switch-(.*)\.log$", f)
            if not m:
                continue
            s = last_json(os.path.join(d, f))
            if not s:
                continue
            # A late resend of a chunk whose copy has moved on: every rank
            # had its result already.
            run_needless += s["counters"].get("drops", {}).get("stale", 0)
            for job in s["counters"]["jobs"].values():
                aggregated.setdefault(m.group(1), []).append(job["data"])
                run_needless += job.get("duplicates", 0)
                if job.get("proxied"):
                    aggregated.setdefault(m.group(1) + " as proxy", []).append(job["proxied"])
                run_passed += job.get("passed", 0)
        root = last_json(os.path.join(d, "root.log")) or {}
        run_needless += root.get("duplicates", 0) + root.get("stale", 0)
        needless.append(100 * run_needless / max(chunks, 1))
        passed.append(run_passed)
        root_passed.append(root.get("passed", 0))
        root_proxied.append(root.get("proxied", 0))
    bad = bad or wrong > 0 or failed > 0 or not c
    if c:
        comm[p], iteration[p] = statistics.mean(c), statistics.mean(it)
        comm_sd[p] = statistics.stdev(c) if len(c) > 1 else 0.0
    points = " ".join(f"{k}:{statistics.mean(v):.0f}" for k, v in sorted(aggregated.items())
                      if statistics.mean(v) > 0)
    if root_passed and statistics.mean(root_passed) > 0:
        points += f" PS:{statistics.mean(root_passed):.0f} passed"
    rows.append((p, ms(c), ms(it), ms([1000 / x for x in it], 2), ms(rate),
                 f"{statistics.mean(model):.2f}" if model else "—", ms(of_model),
                 ms(needless, 2),
                 points or "—", f"{statistics.mean(passed):.0f}" if passed else "—",
                 f"{statistics.mean(retrans):.0f} ({statistics.mean(early):.0f} by order)"
                 if retrans else "—", f"{worst:.3f}",
                 str(wrong) + (f" ({failed} runs failed)" if failed else "")))

print("| planner | comm. time / iteration (ms) | iteration time (ms) | throughput (iterations/s) "
      "| sending rate (Mbps) | model (Mbps) | first sends / model (%) | needless resends (%) "
      "| DATA aggregated, by switch | passed on | retransmissions | largest error / bound | wrong |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
print()
paper = {"atp": (38.4, 17.4), "switchml": (41.2, 25.5), "geryon": (60.1, 52.7)}
for g in ("grid", "grid-paths"):
    if g not in comm:
        continue
    red = [f"{b} {100 * (comm[b] - comm[g]) / comm[b]:.1f}%" for b in paper if b in comm]
    gain = [f"{b} {100 * (iteration[b] / iteration[g] - 1):.1f}%" for b in paper if b in iteration]
    print(f"{g} reduces communication time by: {', '.join(red)}"
          "  (paper, Fig. 6(b): atp 38.4%, switchml 41.2%, geryon 60.1%)")
    print(f"{g} raises training throughput by: {', '.join(gain)}"
          "  (paper, Fig. 8(b): atp 17.4%, switchml 25.5%, geryon 52.7%)")
plot = os.environ.get("PLOT")
if plot and comm:
    # Bars of the communication time per iteration, mean and sd over the
    # runs, with the numbers in PLOT.dat.
    import subprocess
    with open(plot + ".dat", "w") as f:
        f.write("# planner comm_ms_mean comm_ms_sd\n")
        for p in planners:
            if p in comm:
                f.write(f"{p} {comm[p]:.3f} {comm_sd[p]:.3f}\n")
    script = (f"set terminal pngcairo size 800,500\nset output '{plot}'\n"
              f"set title 'testbed, regime {regime}: communication time per iteration "
              f"({repeat} runs)' noenhanced\nset style fill solid 0.6 border -1\n"
              f"set boxwidth 0.6 absolute\nset xrange [-0.6:{len(comm) - 0.4}]\n"
              "set yrange [0:*]\nset ylabel 'ms'\nset grid ytics\n"
              "unset key\nset style data boxerrorbars\n"
              f"plot '{plot}.dat' using 0:2:3:xtic(1) lc rgb '#4477aa'\n")
    r = subprocess.run(["gnuplot"], input=script, text=True, capture_output=True)
    if r.returncode != 0:
        print(f"PLOT: gnuplot failed ({r.returncode}): {r.stderr.strip()}", file=sys.stderr)
        bad = True
    else:
        print(f"plot: {plot} (numbers in {plot}.dat)")
sys.exit(1 if bad else 0)
EOF
status=$?
[ -n "${KEEP:-}" ] && cp -r "$out" "$KEEP"
rm -rf "$out"
exit $status
