# Build options and compiler settings shared by every target.
# Tests and benchmarks are off unless asked for: scripts/test, the presets and
# scripts/gpu-check turn them on, so that a plain build makes only the product.
option(LIZARD_BUILD_TESTS "Build the tests" OFF)
option(LIZARD_BUILD_BENCH "Build the benchmarks" OFF)
option(LIZARD_WERROR "Treat warnings as errors" OFF)

find_program(LIZARD_CCACHE ccache)
if(LIZARD_CCACHE)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${LIZARD_CCACHE})
  set(CMAKE_C_COMPILER_LAUNCHER ${LIZARD_CCACHE})
endif()

# Test code (the test binaries' own sources, not the modules they link) is
# compiled without optimisation in optimised builds: about a third less
# compile time per file, and the modules under test keep the build's flags.
# In sanitized builds the test code itself is not instrumented: the
# modules under test are, and so are the daemons the e2e tests start, while
# compiling the test files with the sanitizers took twice as long (13.2 s
# against 6.4 s for client/run_session_test.cpp).
function(lizard_test_code target)
  if(CMAKE_BUILD_TYPE MATCHES "^(RelWithDebInfo|Release|MinSizeRel)$")
    target_compile_options(${target} PRIVATE -O0)
  endif()
  if(NOT LIZARD_SANITIZE STREQUAL "" AND NOT LIZARD_FUZZ)
    target_compile_options(${target} PRIVATE -fno-sanitize=all)
  endif()
endfunction()

function(lizard_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(LIZARD_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
