# attnjit_embed_templates(DIR OUTPUT): generates OUTPUT, a C++ file defining
# attnjit::embedded_templates() with every file under DIR (paths relative to DIR).
# Note: a custom command's rule only reaches targets of its own directory, so the target
# attnjit_embedded_templates carries it; stages in other directories that compile OUTPUT add a
# dependency on it (src/compile does).
function(attnjit_embed_templates dir output)
  file(GLOB_RECURSE files CONFIGURE_DEPENDS "${dir}/*.cuh" "${dir}/*.h")
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DDIR=${dir} -DOUTPUT=${output}
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedTemplatesScript.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/EmbedTemplatesScript.cmake
    COMMENT "Embedding kernel templates"
    VERBATIM)
  add_custom_target(attnjit_embedded_templates DEPENDS ${output})
endfunction()

# attnjit_embed_file(INPUT OUTPUT NAMESPACE FUNCTION): generates OUTPUT, a C++ file defining
# `std::string_view NAMESPACE::FUNCTION()` with the contents of INPUT.
function(attnjit_embed_file input output namespace function)
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DOUTPUT=${output} -DNAMESPACE=${namespace}
            -DFUNCTION=${function} -P ${PROJECT_SOURCE_DIR}/cmake/EmbedTemplatesFile.cmake
    DEPENDS ${input} ${PROJECT_SOURCE_DIR}/cmake/EmbedTemplatesFile.cmake
    COMMENT "Embedding ${input}"
    VERBATIM)
endfunction()
