#!/usr/bin/env bash
# Runs an allreduce_perf job (the command given, e.g. run_job.sh ...), prints
# its table, and fails unless the job passed and every row gives GRID's and
# every peer's CPU per operation as numbers: the ranks' mean (cpu(us)) and,
# with every node on this host, the switches' and root's (net(us)), the
# latter above zero for GRID, whose frames they carry.
#   perf_table_test.sh COMMAND [ARGS...]
set -uo pipefail
out=$("$@" 2>&1)
status=$?
printf '%s\n' "$out"
[ $status = 0 ] || { echo "perf_table_test: the job exited $status" >&2; exit 1; }
case " $* " in
  *" --plot="*) printf '%s\n' "$out" | grep -q "^# plot: " ||
    { echo "perf_table_test: --plot given, no plot drawn" >&2; exit 1; } ;;
esac
printf '%s\n' "$out" | awk '
  /^# net\(us\) not known/ { print "perf_table_test: " $0 > "/dev/stderr"; bad = 1 }
  /^#/ { next }
  $3 == "float" {
    rows++
    # GRID: cpu(us) and net(us) are fields 11 and 12; each peer adds
    # "| time algbw sent cpu net".
    if ($11 !~ /^[0-9.]+$/ || $12 !~ /^[0-9.]+$/ || $12 + 0 <= 0) {
      print "perf_table_test: GRID cpu/net not numbers in: " $0 > "/dev/stderr"; bad = 1
    }
    n = split($0, part, "|")
    for (i = 2; i < n; i++) {
      m = split(part[i], f, " ")
      if (m == 5 && (f[4] !~ /^[0-9.]+$/ || f[5] !~ /^[0-9.]+$/)) {
        print "perf_table_test: a peer cpu/net not numbers in: " $0 > "/dev/stderr"; bad = 1
      }
    }
  }
  END {
    if (rows == 0) { print "perf_table_test: no rows" > "/dev/stderr"; bad = 1 }
    exit bad
  }'
