# Install rules and the Debian package (CPack).
#
#   cmake --install build --prefix /opt/lizard     # a tree under any prefix
#   scripts/package                                # build/lizard_<version>_amd64.deb
#
# What goes where, under the prefix:
#   bin/                        lizard, load_program, lizard-slurm
#   include/lizard/             the device library (lizard_device*.h) and the CPU
#                               backend's CUDA layer (cuda_cpu*.h), for compiling
#                               and checking kernels by hand; the binaries carry
#                               their own copy, so nothing reads these at run time
#   share/doc/lizard/           README, docs/*.md, examples/
#   share/lizard/systemd/       the settings templates of the two services
#   lib/systemd/system/         lizard-server.service, lizard-client.service
# The units name the binaries under the prefix the tree is installed to.
include(GNUInstallDirs)

install(TARGETS lizard load_program RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS ${PROJECT_SOURCE_DIR}/packaging/slurm/lizard-slurm
        DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${LIZARD_DEVICE_HEADERS} ${LIZARD_CUDA_CPU_HEADERS}
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lizard)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME copyright)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}
        FILES_MATCHING PATTERN "*.md")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/packaging/systemd/lizard-server.env
              ${PROJECT_SOURCE_DIR}/packaging/systemd/lizard-client.env
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lizard/systemd)

# The units are written at install time, when the final prefix is known
# (cpack installs with prefix /usr; `cmake --install --prefix` with another).
set(LIZARD_UNIT_SOURCE_DIR ${PROJECT_SOURCE_DIR}/packaging/systemd)
install(CODE "
  set(prefix \"\${CMAKE_INSTALL_PREFIX}\")
  set(LIZARD_BIN_DIR \"\${prefix}/${CMAKE_INSTALL_BINDIR}\")
  set(LIZARD_DOC_DIR \"\${prefix}/${CMAKE_INSTALL_DOCDIR}\")
  if(prefix STREQUAL \"/usr\")
    set(LIZARD_ENV_DIR /etc/default)
  else()
    # Outside /usr the settings sit under the prefix too (the package's
    # postinst writes /etc/default instead).
    set(LIZARD_ENV_DIR \"\${prefix}/etc/default\")
    foreach(env lizard-server lizard-client)
      set(out \"\$ENV{DESTDIR}\${LIZARD_ENV_DIR}/\${env}\")
      if(NOT EXISTS \"\${out}\")
        message(STATUS \"Installing: \${out}\")
        configure_file(\"${PROJECT_SOURCE_DIR}/packaging/systemd/\${env}.env\" \"\${out}\" COPYONLY)
      endif()
    endforeach()
  endif()
  foreach(unit lizard-server lizard-client)
    set(out \"\$ENV{DESTDIR}\${prefix}/lib/systemd/system/\${unit}.service\")
    message(STATUS \"Installing: \${out}\")
    configure_file(\"${LIZARD_UNIT_SOURCE_DIR}/\${unit}.service.in\" \"\${out}\" @ONLY)
  endforeach()
")

# --- lizard_<version>_amd64.deb ---------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME lizard)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR lizard)
set(CPACK_PACKAGE_CONTACT "lizard maintainers <lizard@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "run CUDA programs across a cluster of GPU machines")
set(CPACK_PACKAGE_DESCRIPTION
    "lizard compiles a user's CUDA kernels on every node (NVRTC, or a CPU backend\n"
    "where there is no GPU), splits the dataset across the cluster, runs the\n"
    "iterations and folds the results.  This package holds the head node and\n"
    "worker daemons (lizard), the program loader, the Slurm launcher and the\n"
    "systemd units lizard-server and lizard-client.")
string(JOIN "" CPACK_PACKAGE_DESCRIPTION ${CPACK_PACKAGE_DESCRIPTION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
# A C++ compiler builds host.cpp hooks on the server and kernels on CPU
# workers; curl is what lizard-slurm waits for the workers with.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "g++, curl")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "slurm-client")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/postinst ${PROJECT_SOURCE_DIR}/packaging/debian/prerm
    ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
