# Warnings on our own code only: third-party headers come in as system
# headers (imported targets). They are errors only under GRID_WERROR, which CI
# turns on: a user's compiler may warn where ours does not, and that must not
# stop their build.
option(GRID_WERROR "Treat warnings in GRID's own code as errors (CI)" OFF)
add_library(grid_warnings INTERFACE)
target_compile_options(grid_warnings INTERFACE
  -Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wimplicit-fallthrough)
if(GRID_WERROR)
  target_compile_options(grid_warnings INTERFACE -Werror)
  # GCC 12 at -O3 reports memcpy/memcmp bounds inside libstdc++'s own string
  # code that cannot happen (GCC bugs 105329, 105651): warnings, not errors.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(grid_warnings INTERFACE -Wno-error=restrict
                           -Wno-error=stringop-overread -Wno-error=stringop-overflow)
  endif()
endif()

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
  # Instrument everything for coverage; only the fuzz executables link the
  # driver. Every other executable links clang's runtime for the coverage
  # callbacks (a sanitizer's runtime carries them too, but GRID_FUZZ must
  # build on its own).
  add_compile_options(-fsanitize=fuzzer-no-link)
  add_link_options(-fsanitize=fuzzer-no-link)
endif()
