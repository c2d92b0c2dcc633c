# What `cmake --install build --prefix P` puts under P: the public headers, libattnjit.so with
# its SONAME links, bin/attnjit (tools/cli), a CMake package exporting attnjit::attnjit and a
# pkg-config file. Tests, fuzzers and the stage archives are never installed.
#
# Note: no static archive. It would carry every stage plus fmt/spdlog/xxhash/NVRTC link
# requirements into the consumer's link (and the package would have to find them all), and would
# expose the internal C++ symbols that the shared library keeps hidden; NVRTC is a shared library
# either way.
include(CMakePackageConfigHelpers)

set(ATTNJIT_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/attnjit)

install(TARGETS attnjit EXPORT attnjitTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
# attnjit.h includes only the C standard library; attnjit.hpp adds <memory>, <stdexcept>, <string>.
install(FILES ${PROJECT_SOURCE_DIR}/include/attnjit/attnjit.h
              ${PROJECT_SOURCE_DIR}/include/attnjit/attnjit.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attnjit)
install(EXPORT attnjitTargets NAMESPACE attnjit:: DESTINATION ${ATTNJIT_CMAKE_DIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/attnjitConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/attnjitConfig.cmake
                              INSTALL_DESTINATION ${ATTNJIT_CMAKE_DIR})
# Compatible as the SONAME is (src/capi): the same major.minor before 1.0, the same major after.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(ATTNJIT_COMPATIBILITY SameMinorVersion)
else()
  set(ATTNJIT_COMPATIBILITY SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/attnjitConfigVersion.cmake
                                 COMPATIBILITY ${ATTNJIT_COMPATIBILITY})
install(FILES ${PROJECT_BINARY_DIR}/attnjitConfig.cmake
              ${PROJECT_BINARY_DIR}/attnjitConfigVersion.cmake
        DESTINATION ${ATTNJIT_CMAKE_DIR})

file(RELATIVE_PATH ATTNJIT_PC_TO_PREFIX ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig
     ${CMAKE_INSTALL_PREFIX})
string(REGEX REPLACE "/$" "" ATTNJIT_PC_TO_PREFIX "${ATTNJIT_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/attnjit.pc.in ${PROJECT_BINARY_DIR}/attnjit.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/attnjit.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
