# The common start of the installed-package tests (check_install.cmake, check_example.cmake):
# checks -DBUILD_DIR, -DSOURCE_DIR, -DWORK (and the names in EXTRA_VARS), defines run(), and
# installs the build tree into the fresh prefix ${WORK}/prefix (`prefix`).
foreach(var BUILD_DIR SOURCE_DIR WORK ${EXTRA_VARS})
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "${CMAKE_SCRIPT_MODE_FILE}: set -D${var}=...")
  endif()
endforeach()

# Runs a command; a non-zero exit fails the test with its output. last_output: its stdout.
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
