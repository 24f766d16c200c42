# ctest install.example_<name>: install the build tree into a fresh prefix, then configure and
# build examples/<name> against the installed package (as someone outside the tree would), and
# run it with the given arguments; it must exit 0.
#   cmake -DBUILD_DIR=<attograd build> -DSOURCE_DIR=<attograd source> -DWORK=<scratch dir>
#         -DNAME=<example> "-DARGS=arg|arg" -P check_example.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK NAME)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_example.cmake: set -D${var}=...")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT status STREQUAL "0")
    message(FATAL_ERROR "failed (${status}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK}/prefix)
file(REMOVE_RECURSE ${WORK})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/${NAME} -B ${WORK}/build -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK}/build)
string(REPLACE "|" ";" args "${ARGS}")
run(${WORK}/build/${NAME} ${args})
message("${last_output}")
message(STATUS "PASS: examples/${NAME} built against the installed package and ran")
