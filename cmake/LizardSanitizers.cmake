# Sanitizer and fuzzing builds.  Included from the top-level CMakeLists.txt
# before any target is defined, so the flags reach every target.
#
#   LIZARD_SANITIZE=address,undefined   any -fsanitize= list (gcc or clang); adds
#       -fsanitize=<list> -fno-omit-frame-pointer to compile and link flags and,
#       with `undefined`, -fno-sanitize-recover=undefined so UB fails tests.
#   LIZARD_FUZZ=ON                      clang only: builds the libFuzzer targets
#       in tests/fuzz/; every target is compiled with -fsanitize=fuzzer-no-link
#       plus LIZARD_SANITIZE (default address,undefined).
#
# The presets wrap both: `cmake --preset asan` (build-asan/) and
# `cmake --preset fuzz` (build-fuzz/); scripts/test-sanitizers and
# scripts/fuzz-smoke use them.  Kernels that the CPU backend compiles at run
# time are not sanitized; ASan processes load them as plain shared objects.

set(LIZARD_SANITIZE "" CACHE STRING "Sanitizers for every target (-fsanitize= list, e.g. address,undefined)")
option(LIZARD_FUZZ "Build the libFuzzer targets in tests/fuzz (needs clang)" OFF)

if(LIZARD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR
      "LIZARD_FUZZ=ON needs clang (libFuzzer), but the C++ compiler is "
      "${CMAKE_CXX_COMPILER_ID} (${CMAKE_CXX_COMPILER}).  Use `cmake --preset fuzz` or "
      "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ in a fresh build directory.")
  endif()
  if(LIZARD_SANITIZE STREQUAL "")
    set(LIZARD_SANITIZE "address,undefined")
  endif()
endif()

if(NOT LIZARD_SANITIZE STREQUAL "")
  set(lizard_san_flags "-fsanitize=${LIZARD_SANITIZE}" -fno-omit-frame-pointer)
  if(LIZARD_SANITIZE MATCHES "(^|,)undefined(,|$)")
    list(APPEND lizard_san_flags -fno-sanitize-recover=undefined)
  endif()
  if(LIZARD_FUZZ)
    set(lizard_fuzz_compile -fsanitize=fuzzer-no-link)
  else()
    set(lizard_fuzz_compile "")
  endif()

  include(CheckCXXSourceCompiles)
  set(CMAKE_REQUIRED_FLAGS "${lizard_san_flags}")
  string(REPLACE ";" " " CMAKE_REQUIRED_FLAGS "${CMAKE_REQUIRED_FLAGS}")
  set(CMAKE_REQUIRED_LINK_OPTIONS ${lizard_san_flags})
  # Result variables name the flags, so a changed LIZARD_SANITIZE is checked again.
  string(MAKE_C_IDENTIFIER "LIZARD_SANITIZE_LINKS_${LIZARD_SANITIZE}" lizard_san_ok)
  check_cxx_source_compiles("int main() { return 0; }" ${lizard_san_ok})
  if(LIZARD_FUZZ)
    set(CMAKE_REQUIRED_LINK_OPTIONS ${lizard_san_flags} -fsanitize=fuzzer)
    check_cxx_source_compiles(
      "#include <cstddef>\n#include <cstdint>\nextern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }"
      LIZARD_LIBFUZZER_LINKS)
  endif()
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(NOT ${lizard_san_ok})
    message(FATAL_ERROR "The compiler cannot build with -fsanitize=${LIZARD_SANITIZE} "
                        "(Debian: apt-get install libclang-rt-14-dev for clang; gcc ships its runtimes)")
  endif()
  if(LIZARD_FUZZ AND NOT LIZARD_LIBFUZZER_LINKS)
    message(FATAL_ERROR "clang cannot link -fsanitize=fuzzer (Debian: apt-get install libclang-rt-14-dev)")
  endif()

  add_compile_options(${lizard_san_flags} ${lizard_fuzz_compile})
  add_link_options(${lizard_san_flags})
  string(REPLACE ";" " " lizard_san_text "${lizard_san_flags};${lizard_fuzz_compile}")
  message(STATUS "lizard: building every target with ${lizard_san_text}")
endif()
