# ctest install.example_<name>: install the build tree into a fresh prefix, then configure and
# build examples/<name> against the installed package (as someone outside the tree would), and
# run it with the given arguments; it must exit 0.
#   cmake -DBUILD_DIR=<attograd build> -DSOURCE_DIR=<attograd source> -DWORK=<scratch dir>
#         -DNAME=<example> "-DARGS=arg|arg" -P check_example.cmake
set(EXTRA_VARS NAME)
include(${CMAKE_CURRENT_LIST_DIR}/../consumer/install_prefix.cmake)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/${NAME} -B ${WORK}/build -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK}/build)
string(REPLACE "|" ";" args "${ARGS}")
run(${WORK}/build/${NAME} ${args})
message("${last_output}")
message(STATUS "PASS: examples/${NAME} built against the installed package and ran")
