# Hostile files, flags and signals against the program (issue: hardening). Each case of
# tests/cli/harden.sh is one test; cli.harden.memory_capped runs the hostile inputs under
# `ulimit -v` to show that nothing allocates without bound. See docs/checkpoints.md.
foreach(case memory_capped threads run_folder sample)
  add_test(NAME cli.harden.${case}
           COMMAND bash ${ATTOGRAD_CLI_SRC}/harden.sh ${case} $<TARGET_FILE:attograd> ${ATTOGRAD_SMALL_CORPUS}
                   ${ATTOGRAD_CLI_OUT}/harden)
  set_tests_properties(cli.harden.${case} PROPERTIES PASS_REGULAR_EXPRESSION "PASS: ${case}" FAIL_REGULAR_EXPRESSION "FAIL:"
                       TIMEOUT 180 ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
endforeach()

# One-line errors for usage mistakes in every command, with the --help hint and status 2.
attograd_cli_test(cli.harden.train_range_is_usage EXIT 2 STDERR "--batch must be positive\nTry 'attograd train --help'"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out bad_run --batch 0)
attograd_cli_test(cli.harden.eval_directory EXIT 1 STDERR "is a directory"
                  COMMAND ${AG} eval --checkpoint small_run --text-file ${ATTOGRAD_CLI_SRC})
set_tests_properties(cli.harden.eval_directory PROPERTIES FIXTURES_REQUIRED small_run)
