# ctest install.consumer: install the build tree into a fresh prefix, then configure, build and
# run tests/consumer against it with CMake, and compile it once more with pkg-config.
#   cmake -DBUILD_DIR=<attograd build> -DSOURCE_DIR=<attograd source> -DWORK=<scratch dir> -P check_install.cmake
include(${CMAKE_CURRENT_LIST_DIR}/install_prefix.cmake)

function(expect_seed output what)
  foreach(line "softmax\\(QK\\^T/sqrt\\(2\\)\\) = \\[\\[0\\.401, 0\\.401, 0\\.198\\], \\[0\\.198, 0\\.401, 0\\.401\\]\\]"
               "context = \\[\\[4\\.011, 2\\.203\\], \\[1\\.978, 2\\.407\\]\\]" "mlp: 13537 parameters")
    if(NOT output MATCHES "${line}")
      message(FATAL_ERROR "${what}: output does not match '${line}':\n${output}")
    endif()
  endforeach()
endfunction()

foreach(f bin/attograd lib/libattograd_base.a lib/libattograd_autograd.a lib/libattograd_nn.a lib/libattograd_optim.a
          lib/libattograd_distributed.a lib/libattograd_data.a lib/libattograd_models.a lib/libattograd_train.a
          lib/libattograd_viz.a include/attograd/autograd/ops.h include/attograd/optim/adam.h include/attograd/base/checked.h
          include/attograd/models/language_model.h lib/cmake/attograd/attogradConfig.cmake
          lib/pkgconfig/attograd.pc lib/pkgconfig/attograd-core.pc)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "cmake --install did not install ${f}")
  endif()
endforeach()
# Nothing of the command line, the benchmarks or the tests is installed as a header.
file(GLOB_RECURSE stray ${prefix}/include/attograd/cli/* ${prefix}/include/attograd/bench/* ${prefix}/include/attograd/tests/*)
if(stray)
  message(FATAL_ERROR "installed headers that are not the library's: ${stray}")
endif()
run(${prefix}/bin/attograd --help)

# CMake: find_package(attograd CONFIG REQUIRED) and target_link_libraries(... attograd::attograd).
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/tests/consumer -B ${WORK}/build -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK}/build)
run(${WORK}/build/seed_example)
expect_seed("${last_output}" "seed_example (attograd::attograd)")
run(${WORK}/build/seed_example_core)
expect_seed("${last_output}" "seed_example_core (attograd::core)")

# pkg-config: c++ seed_example.cpp $(pkg-config --cflags --libs attograd-core)
find_program(PKG_CONFIG pkg-config)
if(PKG_CONFIG)
  set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
  run(${PKG_CONFIG} --cflags --libs attograd-core)
  string(STRIP "${last_output}" flags)
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run(c++ ${SOURCE_DIR}/tests/consumer/seed_example.cpp -o ${WORK}/seed_example_pc ${flags})
  run(${WORK}/seed_example_pc)
  expect_seed("${last_output}" "seed_example built with pkg-config")
endif()
message(STATUS "PASS: installed package builds and runs tests/consumer")
