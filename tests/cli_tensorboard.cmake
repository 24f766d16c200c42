# `attograd train --tensorboard` (see tests/cli.cmake for attograd_cli_test; small_run is the
# run tests/cli_train.cmake trains, with the same flags but without --tensorboard).
find_program(ATTOGRAD_PYTHON3 python3)

# A fresh folder each time: a second run would add a second event file.
add_test(NAME cli.train.tensorboard_clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${ATTOGRAD_CLI_OUT}/tb_run)
set_tests_properties(cli.train.tensorboard_clean PROPERTIES FIXTURES_SETUP tb_clean)
attograd_cli_test(cli.train.tensorboard EXIT 0
                  STDOUT "tensorboard: tb_run/tb/events\\.out\\.tfevents\\.[0-9]+\\.[^ ]+; view it with: tensorboard --logdir tb_run/tb\neval  iter     0.*done: 40 iters"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out tb_run --overwrite --iters 40
                          --eval-every 20 --log-every 20 --sample-tokens 40 ${TINY_MODEL} --tensorboard)
set_tests_properties(cli.train.tensorboard PROPERTIES FIXTURES_REQUIRED tb_clean FIXTURES_SETUP tb_run)

# Logging observes the run without changing it: the same weights as small_run's, bit for bit.
add_test(NAME cli.train.tensorboard_same_model
         COMMAND compare_safetensors ${ATTOGRAD_CLI_OUT}/tb_run/model.safetensors ${ATTOGRAD_CLI_OUT}/small_run/model.safetensors)
set_tests_properties(cli.train.tensorboard_same_model PROPERTIES FIXTURES_REQUIRED "small_run;tb_run")

# pip's tensorboard reads every tag back (skipped without a Python that has tensorboard).
if(ATTOGRAD_PYTHON3)
  add_test(NAME cli.train.tensorboard_reads_back
           COMMAND ${ATTOGRAD_PYTHON3} ${ATTOGRAD_CLI_SRC}/check_tensorboard.py ${ATTOGRAD_CLI_OUT}/tb_run)
  set_tests_properties(cli.train.tensorboard_reads_back PROPERTIES FIXTURES_REQUIRED tb_run SKIP_RETURN_CODE 77
                       TIMEOUT 120)
endif()
