#!/usr/bin/env bash
# The Wireshark dissector (tools/wireshark/grid.lua) against the C++ codec:
# dissector_frames writes the P4 differential test's traffic and the C++
# switch's output for it into a capture with the codec's view of every
# frame; tshark reads the capture through the dissector, and
# compare_dissector.py holds every field, flag bit and payload element of
# every valid frame (at least 1,000 of each message type) and the error of
# every refused one to the codec's. Skips (77) without tshark.
#   dissector_test.sh DISSECTOR_FRAMES GRID_LUA
set -uo pipefail
frames_tool=$1
lua=$2
command -v tshark >/dev/null || { echo "skipped: no tshark (apt-get install tshark)"; exit 77; }
work=$(mktemp -d /tmp/grid-dissector.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$frames_tool" "$work" --min-per-type=1000 || exit 1
fields=(frame.number grid.version grid.type grid.flags grid.flags.retransmit
        grid.flags.congestion grid.flags.overflow grid.flags.copy grid.flags.collision
        grid.flags.passed grid.reserved grid.job_id grid.job_token grid.rank grid.agg_node
        grid.path grid.next_path grid.fan_in grid.slot grid.op_seq grid.chunk grid.exponent
        grid.next_exponent grid.num_elements grid.element _ws.expert.message)
# Wireshark 4.2 and later (Debian 13 has 4.4) run no Lua script as root:
# there tshark runs as nobody, on copies it can read.
as=()
if [ "$(id -u)" = 0 ]; then
  command -v setpriv > /dev/null || { echo "skipped: root, and no setpriv to run tshark as nobody"; exit 77; }
  cp "$lua" "$work/grid.lua"
  lua=$work/grid.lua
  chmod -R a+rX "$work"
  as=(setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME="$work")
fi
# Lua errors go to stderr and leave the fields empty: kept for the message.
"${as[@]}" tshark -r "$work/frames.pcap" -X lua_script:"$lua" -o udp.try_heuristic_first:TRUE \
  -T fields -E separator=/t \
  $(printf -- '-e %s ' "${fields[@]}") > "$work/tshark.tsv" 2> "$work/tshark.err" ||
  { cat "$work/tshark.err"; exit 1; }
if grep -q -i "lua" "$work/tshark.err"; then cat "$work/tshark.err"; exit 1; fi
python3 "$(dirname "$0")/compare_dissector.py" "$work/expected.tsv" "$work/tshark.tsv" 1000
