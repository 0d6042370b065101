# lizard_embed(OUT FILE...): generates OUT, a C++ file defining
#   lizard::embedded_file(name) -> std::string_view
# that returns the text of each FILE (by base name), so the binaries carry the
# headers they hand to compilers at run time.
# lizard_embed_as(OUT FUNCTION FILE...): the same with another function name,
# for a second set of files in the same binary.
function(lizard_embed out)
  lizard_embed_as(${out} embedded_file ${ARGN})
endfunction()

function(lizard_embed_as out function)
  set(deps "")
  foreach(f ${ARGN})
    list(APPEND deps ${f})
  endforeach()
  string(REPLACE ";" "|" joined "${ARGN}")
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} "-DFILES=${joined}" -DFUNCTION=${function}
            -P ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/LizardEmbedRun.cmake
    DEPENDS ${deps} ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/LizardEmbedRun.cmake
    COMMENT "Embedding files for ${function}()"
    VERBATIM)
endfunction()
