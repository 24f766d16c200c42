# Training across hosts on the multi-host test bed (tests/multihost/testbed.sh: network
# namespaces on a bridge, tc-shaped links, mpirun on a login host through an rsh agent).
# Included by CMakeLists.txt with MPI; all names start with "multihost.". As root with `ip netns`
# they run; otherwise each is skipped (status 77) and says why.
set(ATTOGRAD_MULTIHOST ${CMAKE_CURRENT_SOURCE_DIR}/tests/multihost/multihost_train.sh)
foreach(spec "equivalence_2hosts_10gbit;equivalence 2 10gbit" "equivalence_4hosts_1gbit;equivalence 4 1gbit"
             "ctrl_c;ctrl_c" "partition;partition" "blackhole;blackhole" "hung_peer;hung_peer" "elastic;elastic")
  list(GET spec 0 name)
  list(GET spec 1 args)
  separate_arguments(args)
  list(GET args 0 scenario)
  list(SUBLIST args 1 -1 extra)
  add_test(NAME multihost.${name}
           COMMAND bash ${ATTOGRAD_MULTIHOST} ${scenario} $<TARGET_FILE:attograd> ${ATTOGRAD_SMALL_CORPUS}
                   ${ATTOGRAD_CLI_OUT}/multihost_${name} $<TARGET_FILE:compare_safetensors> ${extra})
  # Serial: the faults are judged against wall-clock limits (--comm-timeout + 10 s).
  set_tests_properties(multihost.${name} PROPERTIES PASS_REGULAR_EXPRESSION "PASS: " SKIP_RETURN_CODE 77
                       TIMEOUT 300 PROCESSORS 2 RUN_SERIAL TRUE)
endforeach()
