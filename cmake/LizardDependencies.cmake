# Finds the system libraries (Debian/Ubuntu packages) and wraps them in
# interface targets: lizard::deps_core, lizard::deps_net and lizard::deps_store.
find_package(Threads REQUIRED)
find_package(Boost 1.74 CONFIG REQUIRED)
# Boost.Context is linked by the CPU backend into compiled kernels at run time,
# not by lizard itself; its absence only matters for kernels with barriers.
find_package(Boost 1.74 CONFIG QUIET OPTIONAL_COMPONENTS context)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)
# OpenSSL (libssl-dev): SHA-256 for checksums from libcrypto, and TLS for the
# server's port and its clients from libssl (through Boost.Asio's ssl).
find_package(OpenSSL 1.1.1 REQUIRED)

if(TARGET yaml-cpp::yaml-cpp)
  set(LIZARD_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(LIZARD_YAML_TARGET yaml-cpp)
endif()

add_library(lizard_deps_core INTERFACE)
target_link_libraries(lizard_deps_core INTERFACE
  nlohmann_json::nlohmann_json ${LIZARD_YAML_TARGET} spdlog::spdlog Boost::headers
  OpenSSL::Crypto Threads::Threads ${CMAKE_DL_LIBS})
add_library(lizard::deps_core ALIAS lizard_deps_core)

add_library(lizard_deps_net INTERFACE)
target_link_libraries(lizard_deps_net INTERFACE Boost::headers CLI11::CLI11 OpenSSL::SSL
                      OpenSSL::Crypto Threads::Threads)
target_compile_definitions(lizard_deps_net INTERFACE BOOST_ASIO_NO_DEPRECATED)
# From Boost 1.81 Beast's string_view converts to and from std::string_view by
# itself, and the macro that made it std::string_view only prints a notice.
if(Boost_VERSION VERSION_LESS 1.81)
  target_compile_definitions(lizard_deps_net INTERFACE BOOST_BEAST_USE_STD_STRING_VIEW)
endif()
add_library(lizard::deps_net ALIAS lizard_deps_net)

# The server keeps its run records in SQLite when libsqlite3-dev is present and
# in JSON files otherwise (server/run_store.h); lizard::deps_store says which.
option(LIZARD_WITH_SQLITE "Keep run records in SQLite when it is found" ON)
add_library(lizard_deps_store INTERFACE)
if(LIZARD_WITH_SQLITE)
  find_package(SQLite3 QUIET)
endif()
if(SQLite3_FOUND)
  target_link_libraries(lizard_deps_store INTERFACE SQLite::SQLite3)
  target_compile_definitions(lizard_deps_store INTERFACE LIZARD_HAVE_SQLITE)
  message(STATUS "Run records: SQLite ${SQLite3_VERSION}")
else()
  message(STATUS "Run records: JSON files (SQLite3 not found or disabled; libsqlite3-dev enables it)")
endif()
add_library(lizard::deps_store ALIAS lizard_deps_store)

# The sandbox's system-call filter (src/sandbox/syscall_filter.h) uses
# libseccomp when libseccomp-dev is present; without it the sandbox applies
# its other pieces and says that this one is missing.
add_library(lizard_deps_sandbox INTERFACE)
find_path(LIZARD_SECCOMP_INCLUDE seccomp.h)
find_library(LIZARD_SECCOMP_LIBRARY seccomp)
if(LIZARD_SECCOMP_INCLUDE AND LIZARD_SECCOMP_LIBRARY)
  target_include_directories(lizard_deps_sandbox INTERFACE ${LIZARD_SECCOMP_INCLUDE})
  target_link_libraries(lizard_deps_sandbox INTERFACE ${LIZARD_SECCOMP_LIBRARY})
  target_compile_definitions(lizard_deps_sandbox INTERFACE LIZARD_HAVE_SECCOMP)
  message(STATUS "Sandbox: seccomp filter with ${LIZARD_SECCOMP_LIBRARY}")
else()
  message(STATUS "Sandbox: no seccomp filter (libseccomp-dev not found)")
endif()
add_library(lizard::deps_sandbox ALIAS lizard_deps_sandbox)
