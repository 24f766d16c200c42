# Tests of training over MPI (distributed/comm.h): two ranks over loopback. Included by
# CMakeLists.txt when MPI and mpirun were found. All names start with "mpi.".
# OMPI_ALLOW_RUN_AS_ROOT* are set in the tests only (CI runs as root), never for the user.
set(ATTOGRAD_MPI_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1)
set(ATTOGRAD_MPIRUN_LO ${ATTOGRAD_MPIRUN} --oversubscribe --bind-to none --mca btl self,tcp
    --mca btl_tcp_if_include lo --mca oob_tcp_if_include lo)

# The communicator and reducer unit tests, on two real ranks.
add_test(NAME mpi.unit_tests
         COMMAND ${ATTOGRAD_MPIRUN_LO} -np 2 $<TARGET_FILE:attograd_tests> --gtest_filter=Distributed.*)
set_tests_properties(mpi.unit_tests PROPERTIES ENVIRONMENT "${ATTOGRAD_MPI_ENV}" TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "PASSED.*6 tests.*PASSED.*6 tests" FAIL_REGULAR_EXPRESSION "FAILED")

foreach(scenario equivalence sigterm_mpirun sigint_group interrupt signal_one_rank rank_dies hung_peer)
  add_test(NAME mpi.train.${scenario}
           COMMAND bash ${ATTOGRAD_CLI_SRC}/mpi_train.sh ${scenario} $<TARGET_FILE:attograd> ${ATTOGRAD_SMALL_CORPUS}
                   ${ATTOGRAD_CLI_OUT}/mpi_${scenario} $<TARGET_FILE:compare_safetensors> ${ATTOGRAD_MPIRUN})
  set_tests_properties(mpi.train.${scenario} PROPERTIES PASS_REGULAR_EXPRESSION "PASS: " TIMEOUT 120
                       PROCESSORS 2 RUN_SERIAL TRUE)
endforeach()

# --batch must split evenly over ranks × micro-batches; the error comes from rank 0, once.
add_test(NAME mpi.train.batch_not_divisible
         COMMAND ${ATTOGRAD_MPIRUN_LO} -np 2 $<TARGET_FILE:attograd> train --data ${ATTOGRAD_SMALL_CORPUS}
                 --out ${ATTOGRAD_CLI_OUT}/mpi_bad --batch 6 --grad-accum 2 --iters 1 --no-progress)
set_tests_properties(mpi.train.batch_not_divisible PROPERTIES ENVIRONMENT "${ATTOGRAD_MPI_ENV}" TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "rank 0 \\(pid [0-9]+ on [^)]+\\): train: --batch 6 must be divisible by ranks × --grad-accum = 2 × 2 = 4")
# ranks × --grad-accum in checked arithmetic: 2 × (2^63 − 1) wrapped to −2, which divided the
# batch of 12, and the run went on with micro-batches of no rows.
add_test(NAME mpi.train.grad_accum_overflow
         COMMAND ${ATTOGRAD_MPIRUN_LO} -np 2 $<TARGET_FILE:attograd> train --data ${ATTOGRAD_SMALL_CORPUS}
                 --out ${ATTOGRAD_CLI_OUT}/mpi_overflow --grad-accum 9223372036854775807 --iters 1 --no-progress)
set_tests_properties(mpi.train.grad_accum_overflow PROPERTIES ENVIRONMENT "${ATTOGRAD_MPI_ENV}" TIMEOUT 60
                     PASS_REGULAR_EXPRESSION "rank 0 \\(pid [0-9]+ on [^)]+\\): train: --batch 12 must be divisible by ranks × --grad-accum = 2 × 9223372036854775807, which does not fit 64 bits")
