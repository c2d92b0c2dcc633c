# attnjit_embed_templates(DIR OUTPUT): generates OUTPUT, a C++ file defining
# attnjit::embedded_templates() with every file under DIR (paths relative to DIR).
function(attnjit_embed_templates dir output)
  file(GLOB_RECURSE files CONFIGURE_DEPENDS "${dir}/*.cuh" "${dir}/*.h")
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DDIR=${dir} -DOUTPUT=${output}
            -P ${PROJECT_SOURCE_DIR}/cmake/EmbedTemplatesScript.cmake
    DEPENDS ${files} ${PROJECT_SOURCE_DIR}/cmake/EmbedTemplatesScript.cmake
    COMMENT "Embedding kernel templates"
    VERBATIM)
endfunction()
