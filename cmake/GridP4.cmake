# The P4 toolchain is optional. Where p4c (p4c-bm2-ss, p4test) and BMv2
# (simple_switch, simple_switch_CLI) are found, on PATH or through these
# variables, the tests labelled "p4" compile both programs and run the
# v1model one in simple_switch; where they are not, those tests report that
# they were skipped and why. ../shared/p4tools holds a build of both from
# p4lang's sources (README.md, "P4 toolchain").
find_program(GRID_P4C p4c-bm2-ss DOC "p4c for BMv2 (v1model)")
find_program(GRID_P4TEST p4test DOC "p4c's front and mid end (checks the T2NA program)")
find_program(GRID_SIMPLE_SWITCH simple_switch DOC "BMv2's v1model switch")
find_program(GRID_SIMPLE_SWITCH_CLI simple_switch_CLI DOC "BMv2's Thrift command line")
find_program(GRID_SIMPLE_SWITCH_GRPC simple_switch_grpc DOC "BMv2's v1model switch with a P4Runtime server")
foreach(_tool GRID_P4C GRID_P4TEST GRID_SIMPLE_SWITCH GRID_SIMPLE_SWITCH_CLI GRID_SIMPLE_SWITCH_GRPC)
  if(${_tool})
    set(${_tool}_OR_EMPTY "${${_tool}}")
  else()
    set(${_tool}_OR_EMPTY "")
  endif()
endforeach()
message(STATUS "GRID: P4 compiler '${GRID_P4C_OR_EMPTY}', BMv2 '${GRID_SIMPLE_SWITCH_OR_EMPTY}'")
