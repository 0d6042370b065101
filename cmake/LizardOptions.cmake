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

function(lizard_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(LIZARD_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
