# Holds libgrid.so's exported symbols to an allow-list (include/grid/export.h):
# every defined dynamic symbol, demangled, must match one of the patterns in
# exported_symbols.txt, and every pattern must match at least one symbol, so
# the list says exactly what the library offers. (Patterns hold no square
# brackets: CMake lists would take them for nesting.)
#
#   cmake -DGRID_LIBRARY=libgrid.so -DGRID_ALLOW_LIST=exported_symbols.txt -P exports.cmake
cmake_minimum_required(VERSION 3.25)
find_program(NM nm REQUIRED)
execute_process(COMMAND ${NM} -D --defined-only --demangle ${GRID_LIBRARY}
                OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "nm -D ${GRID_LIBRARY} failed")
endif()
file(STRINGS ${GRID_ALLOW_LIST} lines)
set(patterns "")
set(optional "")
foreach(line IN LISTS lines)
  if(line MATCHES "^#" OR line STREQUAL "")
    continue()
  endif()
  # "? PATTERN": allowed, but a build may export nothing it matches.
  if(line MATCHES "^\\? (.*)$")
    list(APPEND optional "${CMAKE_MATCH_1}")
    list(APPEND patterns "${CMAKE_MATCH_1}")
  else()
    list(APPEND patterns "${line}")
  endif()
endforeach()

string(REPLACE "\n" ";" symbols "${out}")
set(count 0)
set(unlisted "")
set(used "")
foreach(entry IN LISTS symbols)
  # "ADDRESS TYPE NAME": the name may hold spaces.
  if(NOT entry MATCHES "^[0-9a-f]+ [A-Za-z] (.*)$")
    continue()
  endif()
  set(name "${CMAKE_MATCH_1}")
  # Symbols of the ELF version nodes the linker adds are not code.
  if(name MATCHES "^(_init|_fini)$")
    continue()
  endif()
  string(REGEX REPLACE "^(typeinfo for |typeinfo name for |vtable for |non-virtual thunk to )" ""
         bare "${name}")
  # GCC's ABI tag on functions returning std::string is not part of the name.
  string(REPLACE "[abi:cxx11]" "" bare "${bare}")
  math(EXPR count "${count} + 1")
  set(found FALSE)
  foreach(p IN LISTS patterns)
    if(bare MATCHES "${p}")
      set(found TRUE)
      list(APPEND used "${p}")
      break()
    endif()
  endforeach()
  if(NOT found)
    list(APPEND unlisted "${name}")
  endif()
endforeach()

set(stale "")
foreach(p IN LISTS patterns)
  if(NOT p IN_LIST used AND NOT p IN_LIST optional)
    list(APPEND stale "${p}")
  endif()
endforeach()
if(unlisted OR stale)
  list(JOIN unlisted "\n  " unlisted_text)
  list(JOIN stale "\n  " stale_text)
  message(FATAL_ERROR "libgrid.so exports symbols outside the allow-list:\n  ${unlisted_text}\n"
                      "allow-list patterns that match nothing:\n  ${stale_text}")
endif()
message(STATUS "libgrid.so: ${count} exported symbols, every one on the allow-list")
