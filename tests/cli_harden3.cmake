# Hardening, round three (issue 34). Each case of tests/cli/harden3.sh is one test; a case
# that needs what the machine lacks (a browser, root) exits 77 and shows as skipped, with its
# reason in the output. See docs/checkpoints.md, which names the test that holds each promise.
foreach(case ends_with_blas_threads supervisor non_utf8_names checks_on_garbage float32_sweep eval_iters_rule
             run_identity profile_limits)
  add_test(NAME cli.harden3.${case}
           COMMAND bash ${ATTOGRAD_CLI_SRC}/harden3.sh ${case} $<TARGET_FILE:attograd> ${ATTOGRAD_SMALL_CORPUS}
                   ${ATTOGRAD_CLI_OUT}/harden3)
  set_tests_properties(cli.harden3.${case} PROPERTIES PASS_REGULAR_EXPRESSION "PASS: ${case}" FAIL_REGULAR_EXPRESSION "FAIL:"
                       SKIP_RETURN_CODE 77 TIMEOUT 300 ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
endforeach()
