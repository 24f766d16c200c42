# Hostile files, flags and signals against the program (issue: hardening). Each case of
# tests/cli/harden.sh is one test; cli.harden.memory_capped runs the hostile inputs under
# `ulimit -v` to show that nothing allocates without bound. Round two (issue 23): inputs,
# toml_deep, links, writes, signals, address_space, dead_end, exit_codes, plot_extremes. See
# docs/checkpoints.md, which names the test that holds each promise.
foreach(case memory_capped threads run_folder sample
             inputs toml_deep links writes signals address_space dead_end exit_codes plot_extremes)
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

# Round two, 7: ranks started with different configurations refuse at once, naming the fields
# (they used to wait for each other forever). Needs MPI (tests/cli_mpi.cmake sets the mpirun line).
if(ATTOGRAD_MPI AND MPI_CXX_FOUND AND ATTOGRAD_MPIRUN)
  foreach(scenario iters layers seed agree)
    add_test(NAME mpi.harden.ranks_differ_${scenario}
             COMMAND bash ${ATTOGRAD_CLI_SRC}/mpi_agree.sh ${scenario} $<TARGET_FILE:attograd> ${ATTOGRAD_SMALL_CORPUS}
                     ${ATTOGRAD_CLI_OUT}/mpi_agree_${scenario} ${ATTOGRAD_MPIRUN})
    set_tests_properties(mpi.harden.ranks_differ_${scenario} PROPERTIES PASS_REGULAR_EXPRESSION "PASS: "
                         FAIL_REGULAR_EXPRESSION "FAIL:" TIMEOUT 120 PROCESSORS 2 RUN_SERIAL TRUE)
  endforeach()
endif()
