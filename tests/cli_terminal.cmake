# `attograd train` in a real terminal: an 80-column tmux (see tests/cli/check_progress_tmux.py;
# skipped without tmux or script).
find_program(ATTOGRAD_PYTHON3 python3)
if(ATTOGRAD_PYTHON3)
  add_test(NAME cli.train.progress_fits_80_columns
           COMMAND ${ATTOGRAD_PYTHON3} ${ATTOGRAD_CLI_SRC}/check_progress_tmux.py ${AG} ${ATTOGRAD_SMALL_CORPUS}
                   ${ATTOGRAD_CLI_OUT}/progress_tmux)
  set_tests_properties(cli.train.progress_fits_80_columns PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120
                       ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
endif()
