# The example programs of examples/, each built against the installed package and run for a
# few steps (tests/examples/check_example.cmake).
function(attograd_example_test name)
  string(REPLACE ";" "|" args "${ARGN}")  # one argument of add_test: the script splits it again
  add_test(NAME install.example_${name}
           COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${CMAKE_CURRENT_BINARY_DIR} -DSOURCE_DIR=${CMAKE_CURRENT_SOURCE_DIR}
                   -DWORK=${CMAKE_CURRENT_BINARY_DIR}/example-${name} -DNAME=${name} "-DARGS=${args}"
                   -P ${CMAKE_CURRENT_SOURCE_DIR}/tests/examples/check_example.cmake)
  set_tests_properties(install.example_${name} PROPERTIES TIMEOUT 900 PASS_REGULAR_EXPRESSION "PASS: examples/${name}")
endfunction()

attograd_example_test(char_gpt ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli/small_corpus.txt 3)
attograd_example_test(mlp_gradient_penalty 60)
attograd_example_test(custom_function 8)
