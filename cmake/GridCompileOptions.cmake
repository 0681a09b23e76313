# Warnings are errors on our own code only: third-party headers come in as
# system headers (imported targets), so their warnings never stop the build.
add_library(grid_warnings INTERFACE)
target_compile_options(grid_warnings INTERFACE
  -Wall -Wextra -Werror -Wshadow -Wnon-virtual-dtor -Wimplicit-fallthrough)

if(GRID_SANITIZE)
  string(REPLACE "," ";" _grid_sanitizers "${GRID_SANITIZE}")
  foreach(_s IN LISTS _grid_sanitizers)
    if(NOT _s MATCHES "^(address|undefined|leak|thread)$")
      message(FATAL_ERROR "GRID_SANITIZE: unknown sanitizer '${_s}'")
    endif()
  endforeach()
  # -fno-sanitize-recover makes UBSan findings fail the test instead of printing.
  add_compile_options(-fsanitize=${GRID_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${GRID_SANITIZE})
endif()

if(GRID_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "GRID_FUZZ=ON needs clang (CXX=clang++)")
  endif()
  # Instrument everything for coverage; only the fuzz executables link the driver.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
