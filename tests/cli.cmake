# Tests of the `attograd` program, run as a user would run it. Included by CMakeLists.txt when
# the attograd target exists. All names start with "cli." (ctest -R '^cli\.').
#
# Most tests go through tests/cli/run.cmake, which checks the exit status exactly (a crash is
# never a pass) and matches stdout/stderr against regular expressions.

set(ATTOGRAD_CLI_SRC ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli)
set(ATTOGRAD_CLI_OUT ${CMAKE_CURRENT_BINARY_DIR}/cli-tests)  # files the tests write
set(ATTOGRAD_MHA_FIXTURES ${CMAKE_CURRENT_SOURCE_DIR}/tests/parity/fixtures/mha)
file(MAKE_DIRECTORY ${ATTOGRAD_CLI_OUT})
file(WRITE ${ATTOGRAD_CLI_OUT}/empty.safetensors "")

# Helpers: a comparer for result files, and the README's example program.
add_executable(compare_safetensors tests/cli/compare_safetensors.cpp)
target_link_libraries(compare_safetensors PRIVATE attograd_lib)
add_executable(readme_example tests/cli/readme_example.cpp)
target_link_libraries(readme_example PRIVATE attograd_lib)

# attograd_cli_test(<name> EXIT <status> [STDOUT <regex>] [STDERR <regex>] [NOT_OUTPUT <regex>]
#                   COMMAND <program> <args>...)
function(attograd_cli_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "EXIT;STDOUT;STDERR;NOT_OUTPUT" "COMMAND")
  set(defs -DEXPECT_EXIT=${arg_EXIT})
  if(DEFINED arg_STDOUT)
    list(APPEND defs "-DSTDOUT_MATCHES=${arg_STDOUT}")
  endif()
  if(DEFINED arg_STDERR)
    list(APPEND defs "-DSTDERR_MATCHES=${arg_STDERR}")
  endif()
  if(DEFINED arg_NOT_OUTPUT)
    list(APPEND defs "-DOUTPUT_NOT_MATCHES=${arg_NOT_OUTPUT}")
  endif()
  add_test(NAME ${name} COMMAND ${CMAKE_COMMAND} ${defs} -P ${ATTOGRAD_CLI_SRC}/run.cmake -- ${arg_COMMAND}
           WORKING_DIRECTORY ${ATTOGRAD_CLI_OUT})
  set_tests_properties(${name} PROPERTIES ENVIRONMENT "OPENBLAS_NUM_THREADS=1" TIMEOUT 120)
endfunction()

set(AG $<TARGET_FILE:attograd>)

# ---- usage ----------------------------------------------------------------------------------
attograd_cli_test(cli.usage.help EXIT 0 STDOUT "usage: attograd <command>.*attention .*gradcheck "
                  COMMAND ${AG} --help)
attograd_cli_test(cli.usage.no_command EXIT 2 STDERR "usage: attograd <command>" COMMAND ${AG})
attograd_cli_test(cli.usage.unknown_command EXIT 2 STDERR "attograd: error: unknown command 'frobnicate'"
                  COMMAND ${AG} frobnicate)
attograd_cli_test(cli.usage.unknown_command_did_you_mean EXIT 2 STDERR "unknown command 'trian'; did you mean 'train'\\?"
                  COMMAND ${AG} trian)
attograd_cli_test(cli.usage.unknown_command_no_guess EXIT 2 STDERR "unknown command 'zzzzzz'\n"
                  NOT_OUTPUT "did you mean" COMMAND ${AG} zzzzzz)
attograd_cli_test(cli.usage.version EXIT 0 STDOUT "^attograd [0-9]+\\.[0-9]+\\.[0-9]+ \\(commit [^)]+\\), OpenBLAS core [A-Za-z0-9]+\ngemm openblas: [^\n]+\ngemm onednn: [^\n]+\n$"
                  COMMAND ${AG} --version)
attograd_cli_test(cli.usage.help_command EXIT 0 STDOUT "attograd sample \\[OPTION...\\].*--num-samples"
                  COMMAND ${AG} help sample)
attograd_cli_test(cli.usage.help_unknown_command EXIT 2 STDERR "unknown command 'smaple'; did you mean 'sample'"
                  COMMAND ${AG} help smaple)
attograd_cli_test(cli.usage.unknown_flag_did_you_mean EXIT 2
                  STDERR "attograd train: error: unknown option 'iter'; did you mean '--iters'\\?"
                  COMMAND ${AG} train --iter 5)
attograd_cli_test(cli.usage.bad_value_names_flag EXIT 2 STDERR "attograd train: error: --iters: cannot parse 'abc'"
                  COMMAND ${AG} train --iters abc)
attograd_cli_test(cli.usage.bad_value_names_flag_equals EXIT 2 STDERR "attograd sample: error: --top-k: cannot parse 'x'"
                  COMMAND ${AG} sample --top-k=x)
# Each default shown once: cxxopts prints "(default: V)" itself, so no description repeats it.
attograd_cli_test(cli.sample.help_defaults_once EXIT 0 STDOUT "--prompt arg +text to continue \\(default: a newline\\)\n"
                  NOT_OUTPUT "\\(default:[^)]*\\)[^\n]*\\(default:" COMMAND ${AG} sample --help)
attograd_cli_test(cli.attention.help EXIT 0 STDOUT "--in CASE.*--out RESULT.*RESULT tensors"
                  COMMAND ${AG} attention --help)
attograd_cli_test(cli.gradcheck.help EXIT 0 STDOUT "attention\\|ops.*--seed.*--heads H.*--mask KIND"
                  COMMAND ${AG} gradcheck --help)
attograd_cli_test(cli.attention.unknown_option EXIT 2
                  STDERR "attograd attention: error: .*frob.*\nTry 'attograd attention --help'"
                  COMMAND ${AG} attention --frob)
attograd_cli_test(cli.attention.missing_out EXIT 2 STDERR "--out RESULT.safetensors is required"
                  COMMAND ${AG} attention --in ${ATTOGRAD_MHA_FIXTURES}/padding_f64.case.safetensors)
attograd_cli_test(cli.attention.stray_argument EXIT 2 STDERR "unexpected argument 'extra'"
                  COMMAND ${AG} attention extra)

# ---- attention on PyTorch's fixtures: run, then compare with torch's expected result ----------
# The tolerances of tests/nn/test_attention_parity.cpp: max|attograd - torch| <= tol * max|torch|.
foreach(case causal_padding_f64 unbatched_causal_per_head_f64 bool_mask_3d_f32 no_bias_f32)
  if(case MATCHES "_f64$")
    set(tol 1e-10)
  else()
    set(tol 1e-5)
  endif()
  set(result ${ATTOGRAD_CLI_OUT}/${case}.result.safetensors)
  attograd_cli_test(cli.attention.run.${case} EXIT 0 STDOUT "output .* sum .*grads +grad.query .*wrote +"
                    COMMAND ${AG} attention --in ${ATTOGRAD_MHA_FIXTURES}/${case}.case.safetensors --out ${result})
  set_tests_properties(cli.attention.run.${case} PROPERTIES FIXTURES_SETUP cli_result_${case})
  add_test(NAME cli.attention.matches_torch.${case}
           COMMAND compare_safetensors --rtol ${tol} ${result} ${ATTOGRAD_MHA_FIXTURES}/${case}.expected.safetensors)
  set_tests_properties(cli.attention.matches_torch.${case} PROPERTIES FIXTURES_REQUIRED cli_result_${case})
endforeach()

# The comparer itself: a file equals itself exactly, and two different cases differ.
attograd_cli_test(cli.compare_safetensors.same EXIT 0 STDOUT "\nsame\n"
                  COMMAND $<TARGET_FILE:compare_safetensors> ${ATTOGRAD_MHA_FIXTURES}/padding_f64.expected.safetensors
                          ${ATTOGRAD_MHA_FIXTURES}/padding_f64.expected.safetensors)
attograd_cli_test(cli.compare_safetensors.different EXIT 1 STDOUT "output +DIFF.*\ndifferent\n"
                  COMMAND $<TARGET_FILE:compare_safetensors> --rtol 1e-5
                          ${ATTOGRAD_MHA_FIXTURES}/causal_self_f64.expected.safetensors
                          ${ATTOGRAD_MHA_FIXTURES}/causal_float_mask_f64.expected.safetensors)

# ---- attention on bad input: exit 1 and a message that names the file -------------------------
attograd_cli_test(cli.attention.missing_file EXIT 1
                  STDERR "^attograd attention: error: [^\n]*no_such\\.safetensors: cannot open file"
                  COMMAND ${AG} attention --in no_such.safetensors --out never.safetensors)
attograd_cli_test(cli.attention.empty_file EXIT 1
                  STDERR "^attograd attention: error: [^\n]*empty\\.safetensors: file is truncated or empty"
                  COMMAND ${AG} attention --in ${ATTOGRAD_CLI_OUT}/empty.safetensors --out never.safetensors)
attograd_cli_test(cli.attention.truncated_file EXIT 1
                  STDERR "^attograd attention: error: [^\n]*truncated\\.case\\.safetensors: .*file truncated"
                  COMMAND ${AG} attention --in ${ATTOGRAD_CLI_SRC}/truncated.case.safetensors --out never.safetensors)
attograd_cli_test(cli.attention.directory EXIT 1 STDERR "fixtures/mha: is a directory, not a regular file"
                  COMMAND ${AG} attention --in ${ATTOGRAD_MHA_FIXTURES} --out never.safetensors)
attograd_cli_test(cli.attention.not_a_case EXIT 1
                  STDERR "padding_f64\\.expected\\.safetensors: unknown tensor 'attn_weights' in the case"
                  COMMAND ${AG} attention --in ${ATTOGRAD_MHA_FIXTURES}/padding_f64.expected.safetensors
                          --out never.safetensors)
attograd_cli_test(cli.attention.bad_grad_output EXIT 1
                  STDERR "bad_grad_output\\.case\\.safetensors: grad_output \\[1, 2\\] must be shaped like the output"
                  COMMAND ${AG} attention --in ${ATTOGRAD_CLI_SRC}/bad_grad_output.case.safetensors --out never.safetensors)
attograd_cli_test(cli.attention.unwritable_out EXIT 1 STDERR "no/such/folder/r\\.safetensors: cannot save"
                  COMMAND ${AG} attention --in ${ATTOGRAD_MHA_FIXTURES}/padding_f64.case.safetensors
                          --out ${ATTOGRAD_CLI_OUT}/no/such/folder/r.safetensors)

# ---- gradcheck ------------------------------------------------------------------------------
# Every one of the seven rows must say PASS, and the verdict too.
set(all_pass "")
foreach(row query key value in_proj_weight in_proj_bias out_proj\\.weight out_proj\\.bias)
  string(APPEND all_pass "\n${row} [^\n]* PASS")
endforeach()
set(row_pass "${all_pass}")  # the seven rows alone
string(APPEND all_pass "\n\nPASS\n$")
foreach(mask none causal padding both)
  attograd_cli_test(cli.gradcheck.attention.${mask} EXIT 0 STDOUT "mask ${mask}.*${all_pass}" NOT_OUTPUT "FAIL"
                    COMMAND ${AG} gradcheck attention --mask ${mask})
endforeach()
attograd_cli_test(cli.gradcheck.attention.cross_batch_first_per_head EXIT 0 STDOUT "${all_pass}" NOT_OUTPUT "FAIL"
                  COMMAND ${AG} gradcheck attention --heads 4 --embed 8 --len 3 --src-len 5 --batch 3
                          --batch-first --per-head --seed 7)
attograd_cli_test(cli.gradcheck.attention.fully_masked_row EXIT 0 STDOUT "sees no key.*${all_pass}"
                  NOT_OUTPUT "FAIL" COMMAND ${AG} gradcheck attention --mask both --pad-all)
# Zero tolerances must fail (the errors are ~1e-10, not 0): a FAIL row gives exit status 1.
attograd_cli_test(cli.gradcheck.attention.fails_with_zero_tolerance EXIT 1 STDOUT "FAIL\n\nFAIL\n$"
                  COMMAND ${AG} gradcheck attention --atol 0 --rtol 0)
attograd_cli_test(cli.gradcheck.attention.heads_must_divide_embed EXIT 2
                  STDERR "--embed 8 must be divisible by --heads 3" COMMAND ${AG} gradcheck attention --heads 3 --embed 8)
attograd_cli_test(cli.gradcheck.attention.unknown_mask EXIT 2 STDERR "--mask must be none, causal, padding or both"
                  COMMAND ${AG} gradcheck attention --mask diagonal)
attograd_cli_test(cli.gradcheck.attention.zero_length EXIT 2 STDERR "--len must be positive"
                  COMMAND ${AG} gradcheck attention --len 0)
attograd_cli_test(cli.gradcheck.attention.too_large EXIT 2 STDERR "the Jacobian would have"
                  COMMAND ${AG} gradcheck attention --len 1000)
attograd_cli_test(cli.gradcheck.ops EXIT 0 STDOUT "\nslice_backward \\([^\n]*\\) grad [^\n]* PASS\n\nPASS\n$"
                  NOT_OUTPUT "FAIL" COMMAND ${AG} gradcheck ops)
# Order 2: the same report, with one more row per check for the upstream gradient.
attograd_cli_test(cli.gradcheck.ops.order2 EXIT 0
                  STDOUT "order 2.*\nslice_backward \\([^\n]*\\) grad_output [^\n]* PASS\n\nPASS\n$" NOT_OUTPUT "FAIL"
                  COMMAND ${AG} gradcheck ops --order 2)
foreach(mask none causal padding both)
  attograd_cli_test(cli.gradcheck.attention.order2.${mask} EXIT 0
                    STDOUT "mask ${mask}.*order 2.*${row_pass}\ngrad_output [^\n]* PASS\n\nPASS\n$" NOT_OUTPUT "FAIL"
                    COMMAND ${AG} gradcheck attention --order 2 --mask ${mask})
endforeach()
attograd_cli_test(cli.gradcheck.attention.order2_fails_with_zero_tolerance EXIT 1 STDOUT "FAIL\n\nFAIL\n$"
                  COMMAND ${AG} gradcheck attention --order 2 --atol 0 --rtol 0)
attograd_cli_test(cli.gradcheck.bad_order EXIT 2 STDERR "--order must be 1 or 2, got 3"
                  COMMAND ${AG} gradcheck ops --order 3)
attograd_cli_test(cli.gradcheck.nothing_to_check EXIT 2 STDERR "say what to check" COMMAND ${AG} gradcheck)

# ---- the README stays true ------------------------------------------------------------------
add_test(NAME cli.readme_example
         COMMAND ${CMAKE_COMMAND} -DREADME=${CMAKE_CURRENT_SOURCE_DIR}/README.md
                 -DSOURCE=${ATTOGRAD_CLI_SRC}/readme_example.cpp -DEXAMPLE=$<TARGET_FILE:readme_example>
                 -P ${ATTOGRAD_CLI_SRC}/check_readme.cmake)

add_test(NAME cli.readme_links COMMAND ${CMAKE_COMMAND} -DROOT=${CMAKE_CURRENT_SOURCE_DIR}
         -P ${ATTOGRAD_CLI_SRC}/check_links.cmake)
set_tests_properties(cli.readme_links PROPERTIES PASS_REGULAR_EXPRESSION "PASS: [0-9]+ links")

# Every command of the README's ```sh blocks runs as written, in a folder laid out like a
# checkout after `make train` (tests/cli/readme_commands.py says which two it leaves out and why).
find_program(ATTOGRAD_PYTHON3 python3)
if(ATTOGRAD_PYTHON3)
  if(ATTOGRAD_MPI AND MPI_CXX_FOUND AND ATTOGRAD_MPIRUN)  # as for tests/cli_mpi.cmake
    set(readme_mpi ON)
  else()
    set(readme_mpi OFF)
  endif()
  add_test(NAME cli.readme_commands
           COMMAND ${ATTOGRAD_PYTHON3} ${ATTOGRAD_CLI_SRC}/readme_commands.py ${CMAKE_CURRENT_SOURCE_DIR}/README.md
                   ${CMAKE_CURRENT_BINARY_DIR} ${CMAKE_CURRENT_SOURCE_DIR} ${ATTOGRAD_CLI_OUT}/readme_commands ${readme_mpi})
  set_tests_properties(cli.readme_commands PROPERTIES PASS_REGULAR_EXPRESSION "PASS: [0-9]+ README commands"
                       TIMEOUT 900 PROCESSORS 2)
endif()

# The README's PyTorch round trip, where a Python with torch is at hand (checked once, cached).
set(ATTOGRAD_TORCH_PYTHON /usr/bin/python3 CACHE FILEPATH "A Python with torch and numpy, for the round-trip test")
if(NOT DEFINED ATTOGRAD_HAVE_TORCH)
  execute_process(COMMAND ${ATTOGRAD_TORCH_PYTHON} -c "import torch, numpy" RESULT_VARIABLE torch_status
                  OUTPUT_QUIET ERROR_QUIET)
  if(torch_status STREQUAL "0")
    set(ATTOGRAD_HAVE_TORCH ON CACHE BOOL "ATTOGRAD_TORCH_PYTHON can import torch")
  else()
    set(ATTOGRAD_HAVE_TORCH OFF CACHE BOOL "ATTOGRAD_TORCH_PYTHON can import torch")
  endif()
endif()
if(ATTOGRAD_HAVE_TORCH)
  attograd_cli_test(cli.probe_roundtrip EXIT 0 STDOUT "all tensors agree"
                    COMMAND ${ATTOGRAD_TORCH_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/tests/parity/probe_roundtrip.py
                            --attograd ${AG} --workdir ${ATTOGRAD_CLI_OUT})
endif()

# ---- a moved or copied checkout: make reconfigures instead of stopping on CMake's cache error --
add_test(NAME cli.moved_checkout COMMAND sh ${ATTOGRAD_CLI_SRC}/moved_checkout.sh ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME cli.make_train_run_exists COMMAND sh ${ATTOGRAD_CLI_SRC}/run_exists.sh ${CMAKE_CURRENT_SOURCE_DIR})
