# Training across hosts on the multi-host test bed (tests/multihost/testbed.sh: network
# namespaces on a bridge, tc-shaped links, mpirun on a login host through an rsh agent).
# Included by CMakeLists.txt with MPI; all names start with "multihost.". As root with `ip netns`
# they run; otherwise each is skipped (status 77) and says why.
function(attograd_multihost_test name scenario)
  add_test(NAME multihost.${name}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/multihost/multihost_train.sh ${scenario}
                   $<TARGET_FILE:attograd> ${ATTOGRAD_SMALL_CORPUS} ${ATTOGRAD_CLI_OUT}/multihost_${name}
                   $<TARGET_FILE:compare_safetensors> ${ARGN})
  # Serial: the faults are judged against wall-clock limits (--comm-timeout + 10 s).
  set_tests_properties(multihost.${name} PROPERTIES PASS_REGULAR_EXPRESSION "PASS: " SKIP_RETURN_CODE 77
                       TIMEOUT 300 PROCESSORS 2 RUN_SERIAL TRUE)
endfunction()

attograd_multihost_test(equivalence_2hosts_10gbit equivalence 2 10gbit)
attograd_multihost_test(equivalence_4hosts_1gbit equivalence 4 1gbit)
attograd_multihost_test(ctrl_c ctrl_c)
attograd_multihost_test(partition partition)
attograd_multihost_test(blackhole blackhole)
attograd_multihost_test(hung_peer hung_peer)
attograd_multihost_test(elastic elastic)
