# ctest layers.*: the layer check (cmake/check_layer_includes.cmake) refuses an include that
# reaches up, and passes the same layer without it.
#   cmake -DSOURCE_DIR=<attograd source> -DWORK=<scratch dir> -P check_reach_up.cmake
set(bad ${SOURCE_DIR}/tests/layers/reach_up/nn/module_with_a_run.h)
file(MAKE_DIRECTORY ${WORK})
function(check files expect_ok)
  file(WRITE ${WORK}/files "${files}\n")
  file(REMOVE ${WORK}/stamp)
  execute_process(COMMAND ${CMAKE_COMMAND} -DLAYER=nn -DALLOWED=nn,autograd,base
                          -DLAYERS=base,autograd,nn,optim,distributed,data,models,train,viz,tensorboard,cli,bench
                          -DROOT=${SOURCE_DIR} -DFILES=${WORK}/files -DSTAMP=${WORK}/stamp
                          -P ${SOURCE_DIR}/cmake/check_layer_includes.cmake
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(expect_ok AND (NOT rc EQUAL 0 OR NOT EXISTS ${WORK}/stamp))
    message(FATAL_ERROR "the nn layer's own files were refused:\n${err}")
  endif()
  if(NOT expect_ok)
    if(rc EQUAL 0 OR EXISTS ${WORK}/stamp)
      message(FATAL_ERROR "an include of train/ from nn/ passed the layer check")
    endif()
    if(NOT err MATCHES "the nn layer includes a layer above it" OR NOT err MATCHES "module_with_a_run.h: #include \"train/run.h\""
       OR NOT err MATCHES "nn may include only nn, autograd, base")
      message(FATAL_ERROR "the layer check's message does not name the file, the include and the rule:\n${err}")
    endif()
  endif()
endfunction()
check("${SOURCE_DIR}/nn/linear.h\n${SOURCE_DIR}/nn/linear.cpp" TRUE)
check("${SOURCE_DIR}/nn/linear.h\n${bad}" FALSE)
message(STATUS "PASS: the layer check refuses an include that reaches up")
