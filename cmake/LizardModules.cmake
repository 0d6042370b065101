# lizard_module(NAME [DIRS dir...] [FLAT_DIRS dir...] [DEPS target...] [EXTRA file...])
# defines the static library lizard_NAME from the .cpp files under each of
# DIRS (recursively) and directly in each of FLAT_DIRS, leaving out the
# *_test.cpp files (their module's test binary, tests/CMakeLists.txt, has
# them), linked PUBLIC to DEPS.  EXTRA: generated sources that belong to it.
# Each module also gets a layer check (lizard_layer_check below).
function(lizard_module name)
  cmake_parse_arguments(M "" "" "DIRS;FLAT_DIRS;DEPS;EXTRA" ${ARGN})
  set(sources "")
  foreach(dir ${M_DIRS})
    file(GLOB_RECURSE found CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.cpp)
    list(APPEND sources ${found})
  endforeach()
  foreach(dir ${M_FLAT_DIRS})
    file(GLOB found CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/${dir}/*.cpp)
    list(APPEND sources ${found})
  endforeach()
  list(FILTER sources EXCLUDE REGEX ".*_test\\.cpp$")
  add_library(lizard_${name} STATIC ${sources} ${M_EXTRA})
  target_link_libraries(lizard_${name} PUBLIC ${M_DEPS})
  lizard_warnings(lizard_${name})
  lizard_layer_check(${name} ${M_DEPS})
endfunction()

# lizard_layer_check(NAME DEPS...): links every object of lizard_NAME into a
# shared library with the modules it declares and nothing else, allowing no
# undefined symbol: a module that calls one above it (or one it does not
# declare) fails the build here.  Sanitizer builds leave it out (their
# runtimes are undefined in a shared library by design).
function(lizard_layer_check name)
  if(LIZARD_SANITIZE OR LIZARD_FUZZ)
    return()
  endif()
  add_library(lizard_${name}_layer_check SHARED ${PROJECT_SOURCE_DIR}/cmake/layer_check.cpp)
  target_link_libraries(lizard_${name}_layer_check
                        PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,lizard_${name}>" ${ARGN})
  target_link_options(lizard_${name}_layer_check PRIVATE "LINKER:--no-undefined")
endfunction()
