# `cmake --install`: the CLI, the runtime (static and shared), the cpu
# backend with its stand-in headers and instrumentation plugin, headers, and
# the package config (find_package(mfagen), mfagen_add_kernels()).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(mfagen PROPERTIES EXPORT_NAME mfagen INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
install(TARGETS mfagen mfagen_runtime mfagen_runtime_shared mfagen_runtime_cpu mfagen_dispatch mfagen_cpu_backend
        EXPORT mfagenTargets
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
# The plugin clang-16 loads when compiling kernels for the cpu backend.
install(FILES $<TARGET_FILE:mfagen_instrument> DESTINATION ${CMAKE_INSTALL_LIBDIR}/mfagen)
install(DIRECTORY runtime/library/include/ runtime/dispatch/include/ runtime/backends/cpu/include/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY runtime/metal_standin/include/ DESTINATION ${CMAKE_INSTALL_DATADIR}/mfagen/metal_standin/include)
install(EXPORT mfagenTargets NAMESPACE mfagen:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mfagen)
configure_package_config_file(cmake/mfagenConfig.cmake.in ${CMAKE_BINARY_DIR}/mfagenConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mfagen)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/mfagenConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/mfagenConfig.cmake ${CMAKE_BINARY_DIR}/mfagenConfigVersion.cmake
              cmake/mfagen_add_kernels.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mfagen)
