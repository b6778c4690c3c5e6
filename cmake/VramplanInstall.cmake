include(CMakePackageConfigHelpers)

install(TARGETS vramplan EXPORT vramplanTargets)
install(DIRECTORY include/vramplan DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT vramplanTargets NAMESPACE vramplan:: DESTINATION ${CMAKE_INSTALL_DATADIR}/cmake/vramplan)
configure_package_config_file(cmake/vramplanConfig.cmake.in ${CMAKE_CURRENT_BINARY_DIR}/vramplanConfig.cmake
    INSTALL_DESTINATION ${CMAKE_INSTALL_DATADIR}/cmake/vramplan)
# Header-only: the version check must not reject a consumer built for another architecture.
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/vramplanConfigVersion.cmake
    COMPATIBILITY SameMinorVersion ARCH_INDEPENDENT)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/vramplanConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/vramplanConfigVersion.cmake
    DESTINATION ${CMAKE_INSTALL_DATADIR}/cmake/vramplan)
