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
# `cmake --install --prefix DIR` anywhere gives a working pkg-config file.
file(RELATIVE_PATH GRID_PC_TO_PREFIX /root/${CMAKE_INSTALL_LIBDIR}/pkgconfig /root)
configure_file(cmake/grid.pc.in ${CMAKE_CURRENT_BINARY_DIR}/grid.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/grid.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
