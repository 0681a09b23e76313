# Every third-party dependency is found here, the standard way, so the build has
# one shape whatever part of the library is being worked on.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(absl REQUIRED CONFIG)
find_package(nlohmann_json 3.10 REQUIRED CONFIG)

# DPDK: its pkg-config file appends -march=corei7 (and other -m flags) to the
# compile options; we keep the include directories (as system headers) and the
# link line, and drop the machine flags so our own dispatch decides the ISA.
pkg_check_modules(DPDK REQUIRED IMPORTED_TARGET libdpdk>=22.11)
get_target_property(_grid_dpdk_opts PkgConfig::DPDK INTERFACE_COMPILE_OPTIONS)
if(_grid_dpdk_opts)
  list(FILTER _grid_dpdk_opts EXCLUDE REGEX "^-m")
  set_target_properties(PkgConfig::DPDK PROPERTIES INTERFACE_COMPILE_OPTIONS "${_grid_dpdk_opts}")
endif()
get_target_property(_grid_dpdk_inc PkgConfig::DPDK INTERFACE_INCLUDE_DIRECTORIES)
if(_grid_dpdk_inc)
  set_target_properties(PkgConfig::DPDK PROPERTIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${_grid_dpdk_inc}")
endif()

# COIN-OR Clp solves the GRIA LP relaxation (planner layer).
pkg_check_modules(CLP REQUIRED IMPORTED_TARGET clp>=1.17)

# libibverbs is optional: the verbs transport compiles only where it is present.
set(GRID_HAVE_VERBS OFF)
if(NOT GRID_WITH_VERBS STREQUAL "OFF")
  pkg_check_modules(IBVERBS IMPORTED_TARGET libibverbs)
  if(IBVERBS_FOUND)
    set(GRID_HAVE_VERBS ON)
  elseif(GRID_WITH_VERBS STREQUAL "ON")
    message(FATAL_ERROR "GRID_WITH_VERBS=ON but libibverbs was not found (apt-get install libibverbs-dev)")
  endif()
endif()
message(STATUS "GRID: DPDK ${DPDK_VERSION}, Clp ${CLP_VERSION}, verbs ${GRID_HAVE_VERBS}")

if(GRID_BUILD_TESTS OR GRID_FUZZ)
  find_package(GTest REQUIRED CONFIG)
endif()
if(GRID_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED CONFIG)
endif()
