# Installs the build tree into a scratch prefix, runs an installed tool from
# there, then builds and runs the consumer project against it: through
# find_package(grid), through pkg-config (grid.pc), and through the build
# tree's grid-uninstalled.pc.
set(prefix ${GRID_WORK_DIR}/prefix)
file(REMOVE_RECURSE ${GRID_WORK_DIR})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()

set(flags "")
if(GRID_SANITIZE)
  set(flags "-fsanitize=${GRID_SANITIZE}")
endif()

run(${CMAKE_COMMAND} --install ${GRID_BUILD_DIR} --prefix ${prefix})

# An installed tool runs from the prefix with no LD_LIBRARY_PATH: its install
# RPATH ($ORIGIN/../lib) finds libgrid.
unset(ENV{LD_LIBRARY_PATH})
execute_process(COMMAND ${prefix}/bin/grid-plan --help RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "grid-plan")
  message(FATAL_ERROR "installed ${prefix}/bin/grid-plan --help failed (${rc}):\n${out}\n${err}")
endif()
run(${CMAKE_COMMAND} -S ${GRID_CONSUMER_DIR} -B ${GRID_WORK_DIR}/build -G ${GRID_GENERATOR}
    -DCMAKE_CXX_COMPILER=${GRID_CXX_COMPILER} -DCMAKE_PREFIX_PATH=${prefix}
    "-DCMAKE_CXX_FLAGS=${flags}" "-DCMAKE_EXE_LINKER_FLAGS=${flags}"
    -DCMAKE_BUILD_RPATH=${prefix}/lib)
run(${CMAKE_COMMAND} --build ${GRID_WORK_DIR}/build)
run(${GRID_WORK_DIR}/build/consumer)

# pkg-config: compile and link with nothing but what grid.pc says, first the
# installed file, then the build tree's grid-uninstalled.pc (no install).
find_program(PKG_CONFIG pkg-config REQUIRED)
separate_arguments(san_flags UNIX_COMMAND "${flags}")
function(build_with_pkg_config pc_dir name rpath)
  set(ENV{PKG_CONFIG_PATH} ${pc_dir})
  execute_process(COMMAND ${PKG_CONFIG} --cflags --libs grid OUTPUT_VARIABLE pc_flags
                  RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs grid failed in ${pc_dir}")
  endif()
  # A dependency's machine or forced-include flags (DPDK's -march=corei7 and
  # -include rte_config.h) are not the consumer's business.
  if(pc_flags MATCHES "(^| )(-march|-mtune|-include|-I[^ ]*dpdk)")
    message(FATAL_ERROR "grid.pc in ${pc_dir} passes a dependency's flags to consumers: ${pc_flags}")
  endif()
  separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
  set(rpath_flag "")
  if(rpath)
    set(rpath_flag -Wl,-rpath,${rpath})
  endif()
  run(${GRID_CXX_COMPILER} ${san_flags} ${GRID_CONSUMER_DIR}/main.cc -o ${GRID_WORK_DIR}/${name}
      ${pc_flags} ${rpath_flag})
  run(${GRID_WORK_DIR}/${name})
endfunction()
file(GLOB_RECURSE pc_file ${prefix}/grid.pc)
get_filename_component(pc_dir "${pc_file}" DIRECTORY)
build_with_pkg_config(${pc_dir} consumer_pc ${prefix}/lib)
if(NOT EXISTS ${GRID_BUILD_DIR}/grid-uninstalled.pc)
  message(FATAL_ERROR "the build tree has no grid-uninstalled.pc")
endif()
# With no RPATH of its own and no LD_LIBRARY_PATH: grid-uninstalled.pc's
# Libs must carry it.
unset(ENV{LD_LIBRARY_PATH})
build_with_pkg_config(${GRID_BUILD_DIR} consumer_uninstalled "")
