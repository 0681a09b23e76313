-- Wireshark and tshark dissector for GRID wire protocol v1
-- (docs/wire-protocol.md; include/grid/wire.h is the executable spec).
--
--   wireshark -X lua_script:tools/wireshark/grid.lua capture.pcap
--   tshark -X lua_script:tools/wireshark/grid.lua -o udp.try_heuristic_first:TRUE \
--     -r capture.pcap -Y grid
--
-- GRID rides in UDP to destination ports 48640-48703 (wire::kUdpPortBase,
-- kUdpPortCount); the frames the P4 programs emit are the same format. Add
-- -o udp.try_heuristic_first:TRUE where a frame's source port belongs to
-- another protocol (below). The
-- header is 34 bytes in network byte order, then num_elements big-endian
-- int32 elements. tests/wireshark/dissector_test.sh checks every field
-- against the C++ codec's view of the same bytes.

local grid = Proto("grid", "GRID in-network aggregation")

local kUdpPortBase = 48640
local kUdpPortCount = 64
local kHeaderBytes = 34
local kVersion = 1
local kMaxElements = 1024
local kExponentBias = 127
local kNotFiniteExponent = 255
local kAllRanks = 0xffff

local types = { [1] = "DATA", [2] = "PARTIAL", [3] = "RESULT", [4] = "SIGNAL" }
local type_help = {
  [1] = "worker -> aggregation node: one chunk of a worker's tensor",
  [2] = "switch -> root: the sum of a switch's members for a chunk",
  [3] = "root -> switches -> workers: the completed sum",
  [4] = "switch -> worker: a slot collision",
}

local f = grid.fields
f.version = ProtoField.uint8("grid.version", "Version", base.DEC)
f.type = ProtoField.uint8("grid.type", "Type", base.DEC, types)
f.flags = ProtoField.uint8("grid.flags", "Flags", base.HEX)
-- The flag bits (wire::flags).
local flag_bits = {
  { "retransmit", "Retransmit", 0x01, "sent again by loss recovery" },
  { "congestion", "Congestion", 0x02, "a queue on the path passed its threshold" },
  { "overflow", "Overflow", 0x04, "an int32 sum saturated" },
  { "copy", "Copy", 0x08, "shadow copy of the slot: (chunk / pool) % 2" },
  { "collision", "Collision", 0x10, "the slot was busy with another chunk" },
  { "passed", "Passed on", 0x20, "DATA a best-effort aggregation point passed on unaggregated" },
}
for _, b in ipairs(flag_bits) do
  f["flag_" .. b[1]] = ProtoField.bool("grid.flags." .. b[1], b[2], 8, nil, b[3], b[4])
end
f.flag_unknown = ProtoField.uint8("grid.flags.unknown", "Unknown flag bits", base.HEX, nil, 0xc0)
f.reserved = ProtoField.uint8("grid.reserved", "Reserved", base.HEX)
f.job_id = ProtoField.uint16("grid.job_id", "Job", base.DEC)
f.job_token = ProtoField.uint32("grid.job_token", "Job token", base.HEX)
f.rank = ProtoField.uint16("grid.rank", "Rank", base.DEC, { [kAllRanks] = "all ranks" })
f.agg_node = ProtoField.uint16("grid.agg_node", "Aggregation node", base.DEC)
f.path = ProtoField.uint16("grid.path", "Path label", base.DEC)
f.next_path = ProtoField.uint16("grid.next_path", "Next path label", base.DEC)
f.fan_in = ProtoField.uint16("grid.fan_in", "Fan-in", base.DEC)
f.slot = ProtoField.uint16("grid.slot", "Slot", base.DEC)
f.op_seq = ProtoField.uint32("grid.op_seq", "Operation", base.DEC)
f.chunk = ProtoField.uint32("grid.chunk", "Chunk", base.DEC)
f.exponent = ProtoField.uint8("grid.exponent", "Exponent (biased)", base.DEC)
f.exponent_unbiased = ProtoField.int16("grid.exponent.unbiased", "Exponent", base.DEC)
f.next_exponent = ProtoField.uint8("grid.next_exponent", "Next exponent (biased)", base.DEC,
  { [kNotFiniteExponent] = "not finite" })
f.next_exponent_unbiased = ProtoField.int16("grid.next_exponent.unbiased", "Next exponent",
  base.DEC)
f.num_elements = ProtoField.uint16("grid.num_elements", "Elements", base.DEC)
f.probe = ProtoField.bool("grid.probe", "Exponent probe (header only)")
f.element = ProtoField.int32("grid.element", "Element", base.DEC)

-- Errors where the codec would refuse the frame (wire::WireError), notes
-- and warnings where loss recovery, congestion or a collision shows.
local e, experts = {}, {}
for _, x in ipairs({
  { "version", "grid.bad_version", "Not GRID version 1", "MALFORMED", "ERROR" },
  { "type", "grid.bad_type", "Unknown message type", "MALFORMED", "ERROR" },
  { "flags", "grid.bad_flags", "Unknown flag bits set", "MALFORMED", "ERROR" },
  { "reserved", "grid.bad_reserved", "Reserved byte is not zero", "MALFORMED", "ERROR" },
  { "elements", "grid.bad_num_elements", "More than 1024 elements", "MALFORMED", "ERROR" },
  { "fan_in", "grid.bad_fan_in", "Fan-in is zero", "MALFORMED", "ERROR" },
  { "payload", "grid.bad_payload_length", "Payload is not num_elements * 4 bytes", "MALFORMED",
    "ERROR" },
  { "truncated", "grid.truncated", "Shorter than the GRID header", "MALFORMED", "ERROR" },
  { "congestion", "grid.congestion", "Congestion marked", "SEQUENCE", "NOTE" },
  { "retransmit", "grid.retransmit", "Retransmission", "SEQUENCE", "NOTE" },
  { "collision", "grid.collision", "Slot collision", "SEQUENCE", "WARN" },
  { "overflow", "grid.overflow", "Sum saturated", "SEQUENCE", "WARN" },
  { "not_finite", "grid.not_finite", "A rank's block is not finite", "SEQUENCE", "WARN" },
}) do
  e[x[1]] = ProtoExpert.new(x[2], x[3], expert.group[x[4]], expert.severity[x[5]])
  experts[#experts + 1] = e[x[1]]
end
grid.experts = experts

function grid.dissector(tvb, pinfo, tree)
  local len = tvb:len()
  pinfo.cols.protocol = "GRID"
  local root = tree:add(grid, tvb(0, math.min(len, kHeaderBytes)))
  if len < kHeaderBytes then
    root:add_proto_expert_info(e.truncated)
    return 0
  end
  local version = tvb(0, 1):uint()
  local t = tvb(1, 1):uint()
  local flags = tvb(2, 1):uint()
  local n = tvb(32, 2):uint()

  local item = root:add(f.version, tvb(0, 1))
  if version ~= kVersion then item:add_proto_expert_info(e.version) end
  item = root:add(f.type, tvb(1, 1))
  if types[t] == nil then item:add_proto_expert_info(e.type) end
  if type_help[t] then item:append_text(" (" .. type_help[t] .. ")") end
  local ft = root:add(f.flags, tvb(2, 1))
  for _, b in ipairs(flag_bits) do ft:add(f["flag_" .. b[1]], tvb(2, 1)) end
  if bit.band(flags, 0xc0) ~= 0 then
    ft:add(f.flag_unknown, tvb(2, 1)):add_proto_expert_info(e.flags)
  end
  if bit.band(flags, 0x01) ~= 0 then ft:add_proto_expert_info(e.retransmit) end
  if bit.band(flags, 0x02) ~= 0 then ft:add_proto_expert_info(e.congestion) end
  if bit.band(flags, 0x04) ~= 0 then ft:add_proto_expert_info(e.overflow) end
  if bit.band(flags, 0x10) ~= 0 then ft:add_proto_expert_info(e.collision) end
  item = root:add(f.reserved, tvb(3, 1))
  if tvb(3, 1):uint() ~= 0 then item:add_proto_expert_info(e.reserved) end
  root:add(f.job_id, tvb(4, 2))
  root:add(f.job_token, tvb(6, 4))
  root:add(f.rank, tvb(10, 2))
  root:add(f.agg_node, tvb(12, 2))
  root:add(f.path, tvb(14, 2))
  root:add(f.next_path, tvb(16, 2))
  item = root:add(f.fan_in, tvb(18, 2))
  if tvb(18, 2):uint() == 0 then item:add_proto_expert_info(e.fan_in) end
  root:add(f.slot, tvb(20, 2))
  root:add(f.op_seq, tvb(22, 4))
  root:add(f.chunk, tvb(26, 4))
  local exponent = tvb(30, 1):uint()
  item = root:add(f.exponent, tvb(30, 1))
  item:add(f.exponent_unbiased, tvb(30, 1), exponent - kExponentBias):set_generated()
  local next_exponent = tvb(31, 1):uint()
  item = root:add(f.next_exponent, tvb(31, 1))
  if next_exponent == kNotFiniteExponent then
    item:add_proto_expert_info(e.not_finite)
  else
    item:add(f.next_exponent_unbiased, tvb(31, 1), next_exponent - kExponentBias):set_generated()
  end
  item = root:add(f.num_elements, tvb(32, 2))
  if n > kMaxElements then item:add_proto_expert_info(e.elements) end
  if n == 0 and t == 1 then root:add(f.probe, true):set_generated() end

  local payload = len - kHeaderBytes
  if payload ~= n * 4 then root:add_proto_expert_info(e.payload) end
  if payload > 0 then
    local elements = root:add(grid, tvb(kHeaderBytes, payload), "Payload")
    elements:set_text(string.format("Payload: %d int32 elements", math.floor(payload / 4)))
    for i = 0, math.floor(payload / 4) - 1 do
      elements:add(f.element, tvb(kHeaderBytes + 4 * i, 4))
    end
  end

  local name = types[t] or ("type " .. t)
  root:append_text(string.format(", %s, job %d, op %d, chunk %d, slot %d", name,
    tvb(4, 2):uint(), tvb(22, 4):uint(), tvb(26, 4):uint(), tvb(20, 2):uint()))
  pinfo.cols.info = string.format("%s job=%d rank=%d op=%d chunk=%d slot=%d n=%d%s%s%s", name,
    tvb(4, 2):uint(), tvb(10, 2):uint(), tvb(22, 4):uint(), tvb(26, 4):uint(), tvb(20, 2):uint(),
    n, bit.band(flags, 0x01) ~= 0 and " [retransmit]" or "",
    bit.band(flags, 0x02) ~= 0 and " [congestion]" or "",
    bit.band(flags, 0x20) ~= 0 and " [passed]" or "")
  return len
end

-- GRID is whatever goes to a GRID port, whatever the source port (the
-- codec's rule): a heuristic on the destination port, not the port table,
-- which would also claim frames from a GRID port and lose frames whose
-- source port has a dissector of its own (4500 is IPsec's) to it. Wireshark
-- tries heuristics after the ports' dissectors unless told otherwise:
-- -o udp.try_heuristic_first:TRUE makes every GRID frame GRID's.
local function heuristic(tvb, pinfo, tree)
  if pinfo.dst_port < kUdpPortBase or pinfo.dst_port >= kUdpPortBase + kUdpPortCount then
    return false
  end
  grid.dissector(tvb, pinfo, tree)
  return true
end
grid:register_heuristic("udp", heuristic)
DissectorTable.get("udp.port"):add_for_decode_as(grid)
