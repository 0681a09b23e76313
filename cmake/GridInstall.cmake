include(CMakePackageConfigHelpers)

install(TARGETS grid EXPORT gridTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY include/grid DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(GRID_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/grid)
install(EXPORT gridTargets NAMESPACE grid:: DESTINATION ${GRID_CMAKE_DIR})
configure_package_config_file(cmake/gridConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/gridConfig.cmake INSTALL_DESTINATION ${GRID_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/gridConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/gridConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/gridConfigVersion.cmake
        DESTINATION ${GRID_CMAKE_DIR})

# Relocatable: the prefix is found from where grid.pc sits, so installing with
# `cmake --install --prefix DIR` anywhere gives a working pkg-config file. It is
# staged out of the build directory's top, where its relative prefix would name
# the wrong lib/. libgrid is shared and no public header includes DPDK, so
# grid.pc does not require libdpdk: its Cflags (-include rte_config.h,
# -march=corei7) would otherwise reach every consumer's compile line.
file(RELATIVE_PATH GRID_PC_TO_PREFIX /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
configure_file(cmake/grid.pc.in ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig-install/grid.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/pkgconfig-install/grid.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# The build tree itself: pkg-config prefers grid-uninstalled.pc when it is on
# PKG_CONFIG_PATH, so PKG_CONFIG_PATH=<build dir> links this build's libgrid
# against the source tree's headers without installing. Its Libs carry an
# RPATH to this build's lib/, so a program linked that way runs without
# LD_LIBRARY_PATH (an installed libgrid is found where the system looks).
file(READ cmake/grid.pc.in _grid_pc)
string(REGEX REPLACE "prefix=[^\n]*\nlibdir=[^\n]*\nincludedir=[^\n]*\n"
       "libdir=$<TARGET_FILE_DIR:grid>\nincludedir=${PROJECT_SOURCE_DIR}/include\n"
       _grid_pc "${_grid_pc}")
string(REPLACE "Libs: -L\${libdir} -lgrid" "Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lgrid"
       _grid_pc "${_grid_pc}")
string(CONFIGURE "${_grid_pc}" _grid_pc @ONLY)
# Multi-config generators get one per configuration, in <build dir>/<config>/.
get_property(_grid_multi GLOBAL PROPERTY GENERATOR_IS_MULTI_CONFIG)
if(_grid_multi)
  set(_grid_pc_dir ${CMAKE_CURRENT_BINARY_DIR}/$<CONFIG>)
else()
  set(_grid_pc_dir ${CMAKE_CURRENT_BINARY_DIR})
endif()
file(GENERATE OUTPUT ${_grid_pc_dir}/grid-uninstalled.pc CONTENT "${_grid_pc}")
