# Installs the build tree into a scratch prefix, runs an installed tool from
# there, then builds and runs the consumer project against it twice: through
# find_package(grid) and through pkg-config (grid.pc).
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

# pkg-config: compile and link with nothing but what grid.pc says.
find_program(PKG_CONFIG pkg-config REQUIRED)
file(GLOB_RECURSE pc_file ${prefix}/grid.pc)
get_filename_component(pc_dir "${pc_file}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} ${pc_dir})
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs grid OUTPUT_VARIABLE pc_flags
                RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "pkg-config --cflags --libs grid failed")
endif()
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
separate_arguments(san_flags UNIX_COMMAND "${flags}")
run(${GRID_CXX_COMPILER} ${san_flags} ${GRID_CONSUMER_DIR}/main.cc -o ${GRID_WORK_DIR}/consumer_pc
    ${pc_flags} -Wl,-rpath,${prefix}/lib)
run(${GRID_WORK_DIR}/consumer_pc)
