#!/usr/bin/env bash
# Compiles one of the P4 programs and fails on any error or warning.
#
#   compile_test.sh v1model|tna SOURCE_DIR OUT_DIR COMPILER
#
# v1model: p4c-bm2-ss, which also writes the BMv2 JSON and the P4Info that the
# BMv2 tests load. tna: p4test (p4c's front and mid end) against the T2NA
# include files shipped next to it (../tofino-p4include).
#
# One kind of line is not counted, and only that kind: p4c 1.2.5.8 reports
# a constant that the program uses only inside expressions as
# "[--Wwarn=unused] warning: 'NAME' is unused", because it inlines constants
# before the unused check (../shared/p4tools/README.md). Such a line is
# skipped when its file and line declare `const ... NAME` and NAME appears
# again in the preprocessed program, i.e. it is used. Unused warnings about
# the architecture's own include files (not this project's code) are skipped
# too. Exit 77 (CTest: skipped) when the compiler is missing.
set -uo pipefail
target=$1 src=$2 out=$3 compiler=${4:-}
if [ -z "$compiler" ] || ! command -v "$compiler" >/dev/null 2>&1; then
  echo "SKIPPED: no P4 compiler for $target (put ../shared/p4tools/bin on PATH, or set" \
       "GRID_P4C / GRID_P4TEST; README.md, 'P4 toolchain')"
  exit 77
fi
compiler=$(command -v "$compiler")
tools=$(cd "$(dirname "$compiler")/.." && pwd)
mkdir -p "$out"
defines=()
case $target in
  v1model)
    program=$src/p4/v1model/grid.p4
    arch_include=$tools/p4include
    cmd=("$compiler" -I "$src/p4/include" -o "$out/grid.json"
         --p4runtime-files "$out/grid.p4info.txtpb" "$program")
    ;;
  tna)
    program=$src/p4/tna/grid.p4
    arch_include=$tools/tofino-p4include
    [ -d "$arch_include" ] || { echo "SKIPPED: no T2NA includes at $arch_include"; exit 77; }
    defines=(-D__TARGET_TOFINO__=2)
    cmd=("$compiler" -I "$arch_include" -I "$src/p4/include" "${defines[@]}" "$program")
    ;;
  *) echo "usage: $0 v1model|tna SOURCE_DIR OUT_DIR COMPILER" >&2; exit 2 ;;
esac

log=$out/$target.log
"${cmd[@]}" > "$log" 2>&1
status=$?
# The program as the compiler saw it, to tell a used constant from an unused one.
expanded=$(cpp -P -I "$src/p4/include" -I "$arch_include" -I "$tools/p4include" "${defines[@]}" "$program" 2>/dev/null)

counted=0 skipped=0
while IFS= read -r line; do
  if [[ $line =~ ^(.+)\(([0-9]+)\):\ \[--Wwarn=unused\]\ warning:\ \'([A-Za-z_0-9]+)\'\ is\ unused$ ]]; then
    file=${BASH_REMATCH[1]} num=${BASH_REMATCH[2]} name=${BASH_REMATCH[3]}
    case $file in
      "$arch_include"/*|*/p4include/*|*/tofino-p4include/*) skipped=$((skipped + 1)); continue ;;
    esac
    declared=$(sed -n "${num}p" "$file" 2>/dev/null)
    uses=$(grep -ow -- "$name" <<< "$expanded" | wc -l)
    if [[ $declared =~ ^[[:space:]]*const[[:space:]].*[[:space:]]$name[[:space:]]*= ]] && [ "$uses" -ge 2 ]; then
      skipped=$((skipped + 1))
      continue
    fi
  fi
  echo "$line"
  counted=$((counted + 1))
done < <(grep -E '(warning|error)' "$log" | grep -E '^[^ ].*\([0-9]+\): |^error|: error')

echo "$target: compiler exit $status, $counted errors/warnings, $skipped inlined-constant notes skipped"
[ "$status" -eq 0 ] && [ "$counted" -eq 0 ]
