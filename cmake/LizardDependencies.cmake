# Finds the system libraries (Debian/Ubuntu packages) and wraps them in two
# interface targets: lizard::deps_core and lizard::deps_net.
find_package(Threads REQUIRED)
find_package(Boost 1.74 CONFIG REQUIRED)
# Boost.Context is linked by the CPU backend into compiled kernels at run time,
# not by lizard itself; its absence only matters for kernels with barriers.
find_package(Boost 1.74 CONFIG QUIET OPTIONAL_COMPONENTS context)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(yaml-cpp REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 REQUIRED)

if(TARGET yaml-cpp::yaml-cpp)
  set(LIZARD_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(LIZARD_YAML_TARGET yaml-cpp)
endif()

add_library(lizard_deps_core INTERFACE)
target_link_libraries(lizard_deps_core INTERFACE
  nlohmann_json::nlohmann_json ${LIZARD_YAML_TARGET} spdlog::spdlog Boost::headers
  Threads::Threads ${CMAKE_DL_LIBS})
add_library(lizard::deps_core ALIAS lizard_deps_core)

add_library(lizard_deps_net INTERFACE)
target_link_libraries(lizard_deps_net INTERFACE Boost::headers CLI11::CLI11 Threads::Threads)
target_compile_definitions(lizard_deps_net INTERFACE BOOST_BEAST_USE_STD_STRING_VIEW
                                                     BOOST_ASIO_NO_DEPRECATED)
add_library(lizard::deps_net ALIAS lizard_deps_net)
