# attograd_layer(NAME [LAYERS below...] [FOLDERS folder...] [ALSO folder...] [EXCLUDE file...])
#
# One layer of attograd: the static library attograd_NAME (exported as attograd::NAME) built
# from every .cpp under its folders (FOLDERS, by default the folder NAME), linking PUBLIC the
# layers named in LAYERS. The layers below it are those and everything they link, and a file of
# the layer may include headers of its own folders and theirs only (ALSO: further folders it may
# include, such as bench/ for the program): cmake/check_layer_includes.cmake reads every .h and
# .cpp of the layer before the library compiles, and an include that reaches a higher layer is a
# build error naming the file, the line and what the layer may include.
#
# The folders that are layers: an include of any other folder ("toml++/", "nlohmann/") is not a
# layer's business.
set(ATTOGRAD_LAYER_FOLDERS reference base autograd nn optim distributed data models tuning train viz tensorboard cli bench
    CACHE INTERNAL "the folders of attograd's layers")

function(attograd_layer name)
  cmake_parse_arguments(L "" "" "LAYERS;FOLDERS;ALSO;EXCLUDE" ${ARGN})
  if(NOT L_FOLDERS)
    set(L_FOLDERS ${name})
  endif()
  set(sources)
  set(files)
  foreach(folder IN LISTS L_FOLDERS)
    file(GLOB_RECURSE s CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${folder}/*.cpp)
    file(GLOB_RECURSE h CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${folder}/*.h)
    list(APPEND sources ${s})
    list(APPEND files ${s} ${h})
  endforeach()
  foreach(x IN LISTS L_EXCLUDE)
    list(REMOVE_ITEM sources ${CMAKE_CURRENT_SOURCE_DIR}/${x})
  endforeach()
  # What this layer may include: its own folders, ALSO, and all its lower layers may.
  set(allowed ${L_FOLDERS} ${L_ALSO})
  foreach(below IN LISTS L_LAYERS)
    get_property(b GLOBAL PROPERTY ATTOGRAD_LAYER_ALLOWS_${below})
    if(NOT b)
      message(FATAL_ERROR "attograd_layer(${name}): layer '${below}' is not defined yet (define lower layers first)")
    endif()
    list(APPEND allowed ${b})
  endforeach()
  list(REMOVE_DUPLICATES allowed)
  set_property(GLOBAL PROPERTY ATTOGRAD_LAYER_ALLOWS_${name} ${allowed})

  set(stamp ${CMAKE_CURRENT_BINARY_DIR}/layers/${name}.checked)
  string(REPLACE ";" "," allowed_arg "${allowed}")
  string(REPLACE ";" "," layers_arg "${ATTOGRAD_LAYER_FOLDERS}")
  set(list_file ${CMAKE_CURRENT_BINARY_DIR}/layers/${name}.files)
  string(REPLACE ";" "\n" files_text "${files}")
  file(CONFIGURE OUTPUT ${list_file} CONTENT "${files_text}\n")
  add_custom_command(OUTPUT ${stamp}
                     COMMAND ${CMAKE_COMMAND} -DLAYER=${name} -DALLOWED=${allowed_arg} -DLAYERS=${layers_arg}
                             -DROOT=${CMAKE_CURRENT_SOURCE_DIR} -DFILES=${list_file} -DSTAMP=${stamp}
                             -P ${CMAKE_CURRENT_SOURCE_DIR}/cmake/check_layer_includes.cmake
                     DEPENDS ${files} ${list_file} ${CMAKE_CURRENT_SOURCE_DIR}/cmake/check_layer_includes.cmake
                     COMMENT "Checking that the ${name} layer includes only the layers below it")
  add_custom_target(attograd_${name}_includes DEPENDS ${stamp})
  if(L_LAYERS STREQUAL "" AND sources STREQUAL "")
    message(FATAL_ERROR "attograd_layer(${name}): no sources")
  endif()
  add_library(attograd_${name} STATIC ${sources})
  add_dependencies(attograd_${name} attograd_${name}_includes)
  foreach(below IN LISTS L_LAYERS)
    target_link_libraries(attograd_${name} PUBLIC attograd_${below})
  endforeach()
  set_target_properties(attograd_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME attograd_${name})
  add_library(attograd::${name} ALIAS attograd_${name})
  set_property(GLOBAL APPEND PROPERTY ATTOGRAD_LAYERS attograd_${name})
endfunction()
