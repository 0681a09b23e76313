# Every third-party dependency is found here, the standard way, so the build has
# one shape whatever part of the library is being worked on.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
find_package(absl REQUIRED CONFIG)
find_package(nlohmann_json 3.10 REQUIRED CONFIG)

# DPDK is optional (GRID_WITH_DPDK): without it the library, the tools and
# the backend build with the kernel UDP transport, and a dpdk: transport or
# grid-switch's DPDK ports say the build lacks them. Its pkg-config file
# appends -march=corei7 (and other -m flags) to the compile options; we keep
# the include directories (as system headers) and the link line, and drop
# the machine flags so our own dispatch decides the ISA.
set(GRID_HAVE_DPDK OFF)
if(NOT GRID_WITH_DPDK STREQUAL "OFF")
  pkg_check_modules(DPDK IMPORTED_TARGET libdpdk>=22.11)
  if(DPDK_FOUND)
    set(GRID_HAVE_DPDK ON)
  elseif(GRID_WITH_DPDK STREQUAL "ON")
    message(FATAL_ERROR "GRID_WITH_DPDK=ON but libdpdk >= 22.11 was not found (apt-get install libdpdk-dev)")
  endif()
endif()
if(GRID_HAVE_DPDK)
  get_target_property(_grid_dpdk_opts PkgConfig::DPDK INTERFACE_COMPILE_OPTIONS)
  if(_grid_dpdk_opts)
    list(FILTER _grid_dpdk_opts EXCLUDE REGEX "^-m")
    set_target_properties(PkgConfig::DPDK PROPERTIES INTERFACE_COMPILE_OPTIONS "${_grid_dpdk_opts}")
  endif()
  get_target_property(_grid_dpdk_inc PkgConfig::DPDK INTERFACE_INCLUDE_DIRECTORIES)
  if(_grid_dpdk_inc)
    set_target_properties(PkgConfig::DPDK PROPERTIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${_grid_dpdk_inc}")
  endif()
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
if(GRID_HAVE_DPDK)
  set(_grid_dpdk_what "DPDK ${DPDK_VERSION}")
else()
  set(_grid_dpdk_what "no DPDK (GRID_WITH_DPDK=${GRID_WITH_DPDK}): kernel UDP transports only")
endif()
message(STATUS "GRID: ${_grid_dpdk_what}, Clp ${CLP_VERSION}, verbs ${GRID_HAVE_VERBS}")

if(GRID_BUILD_TESTS OR GRID_FUZZ)
  find_package(GTest REQUIRED CONFIG)
endif()
if(GRID_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED CONFIG)
  # Gloo (Debian's libgloo-dev) is optional: where it is found,
  # bench/allreduce_perf can run Gloo's ring beside GRID (--gloo).
  find_package(Gloo CONFIG QUIET)
  message(STATUS "GRID: Gloo for allreduce_perf: ${Gloo_FOUND}")
  # MPI (Debian's libopenmpi-dev) likewise: MPI_Allreduce beside GRID (--mpi).
  find_package(MPI COMPONENTS C QUIET)
  message(STATUS "GRID: MPI for allreduce_perf: ${MPI_C_FOUND}")
endif()

# Says whether optional feature GRID_HAVE_<NAME> is built: `what` when it
# is; else `why` not, and a configure error where GRID_WITH_<NAME>=ON asked
# for it.
function(grid_report_optional name what feature why)
  if(GRID_HAVE_${name})
    message(STATUS "GRID: ${what}")
  elseif(GRID_WITH_${name} STREQUAL "ON")
    message(FATAL_ERROR "GRID_WITH_${name}=ON but: ${why}")
  elseif(GRID_WITH_${name} STREQUAL "OFF")
    message(STATUS "GRID: no ${feature}: GRID_WITH_${name}=OFF")
  else()
    message(STATUS "GRID: no ${feature}: ${why}")
  endif()
endfunction()

# PyTorch (Debian's python3-torch and libtorch-dev) for the torch.distributed
# backend in bindings/torch. Python loads it, so it is built for the Python
# whose torch it extends, and not in sanitizer builds (an unsanitized
# interpreter cannot load them).
set(GRID_WITH_TORCH "AUTO" CACHE STRING "PyTorch backend (bindings/torch): AUTO, ON or OFF")
set_property(CACHE GRID_WITH_TORCH PROPERTY STRINGS AUTO ON OFF)
set(GRID_TORCH_PYTHON "/usr/bin/python3" CACHE FILEPATH "The Python whose torch bindings/torch extends")
set(GRID_HAVE_TORCH OFF)
set(_grid_torch_why "")
if(GRID_WITH_TORCH STREQUAL "OFF")
  set(_grid_torch_why "GRID_WITH_TORCH=OFF")
elseif(GRID_SANITIZE)
  set(_grid_torch_why "a sanitizer build")
else()
  execute_process(COMMAND ${GRID_TORCH_PYTHON} -c
                          "import torch.distributed as d; assert d.is_available() and d.is_gloo_available()"
                  RESULT_VARIABLE _grid_torch_py OUTPUT_QUIET ERROR_QUIET)
  if(NOT _grid_torch_py EQUAL 0)
    set(_grid_torch_why "${GRID_TORCH_PYTHON} cannot import torch.distributed with Gloo (apt-get install python3-torch)")
  else()
    # Where the Python keeps torch's CMake package: under /usr for Debian's
    # libtorch-dev, inside the Python package for a torch installed with pip.
    execute_process(COMMAND ${GRID_TORCH_PYTHON} -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                    OUTPUT_VARIABLE _grid_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    find_package(Torch CONFIG QUIET HINTS ${_grid_torch_prefix})
    set(Python_EXECUTABLE ${GRID_TORCH_PYTHON})
    find_package(Python COMPONENTS Interpreter Development.Module QUIET)
    # The extension must use the pybind11 torch was built with (its types
    # are torch's base classes): the copy a pip torch bundles in its
    # include directory, or Debian's pybind11-dev that Debian's torch uses.
    set(GRID_TORCH_PYBIND11 "")
    if(Torch_FOUND AND EXISTS "${TORCH_INSTALL_PREFIX}/include/pybind11/pybind11.h")
      set(GRID_TORCH_PYBIND11 "${TORCH_INSTALL_PREFIX}/include")
    else()
      find_package(pybind11 CONFIG QUIET)
      if(pybind11_FOUND)
        set(GRID_TORCH_PYBIND11 "${pybind11_INCLUDE_DIRS}")
      endif()
    endif()
    find_library(GRID_TORCH_PYTHON_LIB torch_python HINTS "${TORCH_INSTALL_PREFIX}/lib")
    if(NOT Torch_FOUND OR NOT GRID_TORCH_PYBIND11 OR NOT Python_Development.Module_FOUND OR NOT GRID_TORCH_PYTHON_LIB)
      set(_grid_torch_why "libtorch-dev, pybind11-dev or python3-dev missing")
    else()
      set(GRID_HAVE_TORCH ON)
    endif()
  endif()
endif()
grid_report_optional(TORCH "PyTorch backend for torch ${Torch_VERSION} (${GRID_TORCH_PYTHON})"
                     "PyTorch backend" "${_grid_torch_why}")

# ns-3 (Debian's libns3-dev 3.37) for grid-ns3, the packet-level simulator
# in sim/ (docs/simulation.md). Where it is missing, grid-ns3 and its tests
# are left out.
set(GRID_WITH_NS3 "AUTO" CACHE STRING "grid-ns3 (sim/): AUTO, ON or OFF")
set_property(CACHE GRID_WITH_NS3 PROPERTY STRINGS AUTO ON OFF)
set(GRID_HAVE_NS3 OFF)
if(NOT GRID_WITH_NS3 STREQUAL "OFF")
  # Not find_package(ns3): Debian's ns3Targets.cmake names an executable of
  # another package (raw-sock-creator) and fails the configure where that is
  # not installed. The headers and five shared libraries are all grid-ns3
  # needs; each library names its own dependencies.
  find_path(GRID_NS3_INCLUDE_DIR ns3/simulator.h)
  find_library(GRID_NS3_CORE ns3-core)
  find_library(GRID_NS3_NETWORK ns3-network)
  find_library(GRID_NS3_P2P ns3-point-to-point)
  find_library(GRID_NS3_INTERNET ns3-internet)  # the TCP ring baseline
  find_library(GRID_NS3_NIX ns3-nix-vector-routing)  # and its routes
  if(GRID_NS3_INCLUDE_DIR AND GRID_NS3_CORE AND GRID_NS3_NETWORK AND GRID_NS3_P2P
     AND GRID_NS3_INTERNET AND GRID_NS3_NIX)
    set(GRID_HAVE_NS3 ON)
    add_library(grid_ns3_deps INTERFACE)
    target_include_directories(grid_ns3_deps SYSTEM INTERFACE ${GRID_NS3_INCLUDE_DIR})
    target_link_libraries(grid_ns3_deps INTERFACE ${GRID_NS3_NIX} ${GRID_NS3_INTERNET} ${GRID_NS3_P2P}
                                                  ${GRID_NS3_NETWORK} ${GRID_NS3_CORE})
  endif()
endif()
grid_report_optional(NS3 "grid-ns3 with ${GRID_NS3_CORE}" "grid-ns3"
                     "ns-3 not found (apt-get install libns3-dev)")

# P4Runtime (grid-controller --switch=p4runtime, p4runtime/): gRPC and
# protobuf from Debian (libgrpc++-dev, libprotobuf-dev, protobuf-compiler-grpc)
# and P4Runtime's .proto files, by default those ../shared/p4tools/proto holds
# (the p4runtime revision its simple_switch_grpc was built with). Where any is
# missing, the feature is left out and its tests say why.
set(GRID_WITH_P4RUNTIME "AUTO" CACHE STRING "grid-controller's P4Runtime client: AUTO, ON or OFF")
set_property(CACHE GRID_WITH_P4RUNTIME PROPERTY STRINGS AUTO ON OFF)
set(GRID_P4RUNTIME_PROTO_DIR "${PROJECT_SOURCE_DIR}/../shared/p4tools/proto"
    CACHE PATH "P4Runtime's .proto files (p4/v1, p4/config/v1, google/rpc)")
set(GRID_HAVE_P4RUNTIME OFF)
set(_grid_p4rt_why "")
if(NOT GRID_WITH_P4RUNTIME STREQUAL "OFF")
  find_program(GRID_PROTOC protoc)
  find_program(GRID_GRPC_CPP_PLUGIN grpc_cpp_plugin)
  pkg_check_modules(GRPCPP IMPORTED_TARGET grpc++ protobuf)
  if(NOT GRID_PROTOC OR NOT GRID_GRPC_CPP_PLUGIN OR NOT GRPCPP_FOUND)
    set(_grid_p4rt_why
        "gRPC or protobuf not found (apt-get install libgrpc++-dev libprotobuf-dev protobuf-compiler-grpc)")
  elseif(NOT EXISTS "${GRID_P4RUNTIME_PROTO_DIR}/p4/v1/p4runtime.proto")
    set(_grid_p4rt_why "no P4Runtime protos in GRID_P4RUNTIME_PROTO_DIR (${GRID_P4RUNTIME_PROTO_DIR})")
  else()
    set(GRID_HAVE_P4RUNTIME ON)
  endif()
endif()
grid_report_optional(P4RUNTIME "P4Runtime client, gRPC ${GRPCPP_VERSION}, protos in ${GRID_P4RUNTIME_PROTO_DIR}"
                     "P4Runtime client" "${_grid_p4rt_why}")
