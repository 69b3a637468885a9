# tkcInstall.cmake - install rules beyond the tkc binary (included at the end of the top-level
# CMakeLists.txt): the man page and the CMake package, so that after
#   cmake --install build --prefix P
# a project finds tkc with find_package(tkc) and CMAKE_PREFIX_PATH=P:
#   P/bin/tkc                                  (installed by the top-level CMakeLists.txt)
#   P/share/man/man1/tkc.1
#   P/lib/cmake/tkc/tkcConfig.cmake, tkcConfigVersion.cmake, tkcKernel.cmake
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TKC_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/tkc" CACHE STRING
    "where the tkc CMake package goes, relative to the install prefix")
mark_as_advanced(TKC_INSTALL_CMAKEDIR)

install(FILES "${PROJECT_SOURCE_DIR}/docs/tkc.1" DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")

# the top-level install(TARGETS tkc RUNTIME DESTINATION bin) puts the binary here
set(TKC_INSTALL_BINDIR bin)
configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/tkcConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/cmake/tkcConfig.cmake"
  INSTALL_DESTINATION "${TKC_INSTALL_CMAKEDIR}"
  PATH_VARS TKC_INSTALL_BINDIR)
# 0.x: a minor release may change the language or the launchers, so only 0.1.y satisfies 0.1
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/cmake/tkcConfigVersion.cmake"
  VERSION "${PROJECT_VERSION}"
  COMPATIBILITY SameMinorVersion)
install(FILES
  "${PROJECT_BINARY_DIR}/cmake/tkcConfig.cmake"
  "${PROJECT_BINARY_DIR}/cmake/tkcConfigVersion.cmake"
  "${PROJECT_SOURCE_DIR}/cmake/tkcKernel.cmake"
  DESTINATION "${TKC_INSTALL_CMAKEDIR}")
