# Command-line tests of the study tools: explain, explore (and, in cli_viz.cmake, attend
# --grads). See tests/cli.cmake for attograd_cli_test; small_run is the run tests/cli_train.cmake trains.
set(STUDY_OUT ${ATTOGRAD_CLI_OUT}/study)
file(MAKE_DIRECTORY ${STUDY_OUT})

# ---- explain attention ------------------------------------------------------------------------
attograd_cli_test(cli.explain.help EXIT 0 STDOUT "attograd explain attention \\[--q Q --k K --v V --g G\\].*-q arg.*--causal.*--mask.*--html"
                  COMMAND ${AG} explain --help)
attograd_cli_test(cli.explain.seed EXIT 0
                  STDOUT "the README's seed example.*A = softmax\\(S\\), row by row =\n    \\[\\[0\\.4011, 0\\.4011, 0\\.1978\\],.*3\\. dL/dA = G·Vᵀ \\(2, 3\\) =\n    \\[\\[10\\.0000,  0\\.0000,  0\\.0000\\],\n     \\[ 0\\.0000,  5\\.0000,  1\\.0000\\]\\].*every gradient equals the engine's to (≤ 1e-15|[0-9.]+e-1[3-9]) and finite differences to [0-9.]+e-(0[7-9]|1[0-9])\n$"
                  COMMAND ${AG} explain attention)
# The README's seed section shows this output; it must stay what the command prints.
add_test(NAME cli.explain.readme
         COMMAND ${CMAKE_COMMAND} -DREADME=${CMAKE_CURRENT_SOURCE_DIR}/README.md "-DBLOCK=explain attention output"
                 -P ${ATTOGRAD_CLI_SRC}/check_readme.cmake -- ${AG} explain attention)
attograd_cli_test(cli.explain.causal EXIT 0 STDOUT "causal.*query 0: \\.xx\n    query 1: \\.\\.x\n.*every gradient equals"
                  COMMAND ${AG} explain attention --causal)
attograd_cli_test(cli.explain.mask_and_own_matrices EXIT 0 STDOUT "your matrices.*masked.*every gradient equals"
                  COMMAND ${AG} explain attention --q "[[0.5,-1,2]]" --k "[[1,0,0],[0,1,0],[1,1,1]]" --v "[[1],[-2],[3]]"
                          --mask "[[0,1,0]]")
attograd_cli_test(cli.explain.html EXIT 0 STDOUT "wrote [^\n]*explain\\.html\n$"
                  COMMAND ${AG} explain attention --html ${STUDY_OUT}/explain.html)
set_tests_properties(cli.explain.html PROPERTIES FIXTURES_SETUP explain_html)
add_test(NAME cli.explain.html_has_mathml
         COMMAND ${CMAKE_COMMAND} -DFILE=${STUDY_OUT}/explain.html
                 "-DREGEX=<math display=\"block\">.*dL/dS.*max \\|by hand − engine\\| "
                 -P ${ATTOGRAD_CLI_SRC}/check_file.cmake)
set_tests_properties(cli.explain.html_has_mathml PROPERTIES FIXTURES_REQUIRED explain_html)
attograd_cli_test(cli.explain.bad_matrix EXIT 2 STDERR "attograd explain: error: --q: expected a matrix of numbers such as \\[\\[1,0\\],\\[0,1\\]\\], got '\\[\\[1,0\\],\\[0,1'\n"
                  COMMAND ${AG} explain attention --q "[[1,0],[0,1")
attograd_cli_test(cli.explain.bad_shape EXIT 2 STDERR "error: --k: K \\(1, 3\\) must have as many columns as Q \\(2, 2\\)"
                  COMMAND ${AG} explain attention --k "[[1,0,0]]")
attograd_cli_test(cli.explain.ragged EXIT 2 STDERR "error: --v: row 1 has 1 entries, row 0 has 2"
                  COMMAND ${AG} explain attention --v "[[1,0],[2]]")
attograd_cli_test(cli.explain.too_big EXIT 2 STDERR "error: --q: at most 8 rows and 8 columns"
                  COMMAND ${AG} explain attention --q "[[1,2,3,4,5,6,7,8,9]]")
attograd_cli_test(cli.explain.mask_hides_a_row EXIT 2 STDERR "error: --mask: mask hides every key from query 0"
                  COMMAND ${AG} explain attention --mask "[[1,1,1],[0,0,0]]")
attograd_cli_test(cli.explain.mask_not_boolean EXIT 2 STDERR "error: --mask: expected a matrix of 0/1"
                  COMMAND ${AG} explain attention --mask "[[0,2,0],[0,0,0]]")
attograd_cli_test(cli.explain.no_topic EXIT 2 STDERR "say what to explain" COMMAND ${AG} explain)
attograd_cli_test(cli.explain.unknown_topic EXIT 2 STDERR "unknown topic 'softmax'; the one topic is 'attention'"
                  COMMAND ${AG} explain softmax)

# ---- explore ------------------------------------------------------------------------------------
attograd_cli_test(cli.explore.help EXIT 0 STDOUT "--out.*--attention.*--checkpoint.*--text.*--unfused.*--dtype"
                  COMMAND ${AG} explore --help)
attograd_cli_test(cli.explore.attention EXIT 0
                  STDOUT "explore: [0-9]+ ops, 5 leaves, [0-9]+ backward steps; loss 6\\.41[0-9]+ \\(float64\\)\nfinite-difference check of each node's backward \\(one random direction, eps 1e-06\\): ([0-9]+) of \\1 agree, [^\n]*\nwrote [^\n]*attention\\.html \\([0-9.]+ MB\\)\n$"
                  COMMAND ${AG} explore --attention --unfused --out ${STUDY_OUT}/attention.html)
attograd_cli_test(cli.explore.checkpoint_float32 EXIT 0
                  STDOUT "explore: [0-9]+ ops, [0-9]+ leaves, [^\n]*\\(float32\\)\nfinite-difference check[^\n]*eps 1e-06, replayed in float64[^\n]*agree"
                  COMMAND ${AG} explore --checkpoint small_run --text "The engine" --dtype float32 --out ${STUDY_OUT}/f32.html)
set_tests_properties(cli.explore.checkpoint_float32 PROPERTIES FIXTURES_REQUIRED small_run)
attograd_cli_test(cli.explore.bad_out EXIT 2 STDERR "--out must end in \\.html" COMMAND ${AG} explore --attention --out x.txt)
attograd_cli_test(cli.explore.both_sources EXIT 2 STDERR "exactly one of --attention and --checkpoint"
                  COMMAND ${AG} explore --attention --checkpoint small_run --out x.html)
attograd_cli_test(cli.explore.no_text EXIT 2 STDERR "--checkpoint needs --text" COMMAND ${AG} explore --checkpoint small_run --out x.html)
attograd_cli_test(cli.explore.bad_dtype EXIT 2 STDERR "--dtype must be float64 or float32"
                  COMMAND ${AG} explore --attention --dtype float16 --out x.html)
attograd_cli_test(cli.explore.q_without_attention EXIT 2 STDERR "--q goes with --attention"
                  COMMAND ${AG} explore --checkpoint small_run --text "ab" --q "[[1]]" --out x.html)
attograd_cli_test(cli.explore.text_too_long EXIT 2 STDERR "--text has 18 characters; the model reads at most block_size \\+ 1 = 17"
                  COMMAND ${AG} explore --checkpoint small_run --text "The engine counts." --out ${STUDY_OUT}/never.html)
set_tests_properties(cli.explore.text_too_long PROPERTIES FIXTURES_REQUIRED small_run)
attograd_cli_test(cli.explore.missing_checkpoint EXIT 1 STDERR "no_such_run" COMMAND ${AG} explore --checkpoint no_such_run --text "ab" --out x.html)

# ---- explore in a real browser: chromium + chromium-driver + python3-selenium -------------------
# Debian's selenium lives in /usr/bin/python3's dist-packages (scripts/setup-deps.sh installs it).
set(ATTOGRAD_SELENIUM_PYTHON /usr/bin/python3)
execute_process(COMMAND ${ATTOGRAD_SELENIUM_PYTHON} -c "import selenium" RESULT_VARIABLE selenium_rc OUTPUT_QUIET ERROR_QUIET)
if(selenium_rc EQUAL 0 AND EXISTS /usr/bin/chromium AND EXISTS /usr/bin/chromedriver)
  # The default GPT's architecture (attograd train's defaults), trained for two steps.
  attograd_cli_test(cli.explore.default_gpt_run EXIT 0 STDOUT "eval  iter     2 "
                    COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out explore_gpt_run --overwrite --iters 2
                            --eval-every 2 --eval-iters 1 --log-every 1 --sample-tokens 0 --no-progress)
  set_tests_properties(cli.explore.default_gpt_run PROPERTIES FIXTURES_SETUP explore_gpt_run TIMEOUT 600)
  add_test(NAME cli.explore.browser_attention
           COMMAND ${ATTOGRAD_SELENIUM_PYTHON} ${ATTOGRAD_CLI_SRC}/explore_page.py --attograd ${AG} --mode attention
                   --workdir ${STUDY_OUT}/browser --screenshot ${STUDY_OUT}/browser/explore_attention.png)
  add_test(NAME cli.explore.browser_gpt
           COMMAND ${ATTOGRAD_SELENIUM_PYTHON} ${ATTOGRAD_CLI_SRC}/explore_page.py --attograd ${AG} --mode gpt
                   --checkpoint ${ATTOGRAD_CLI_OUT}/explore_gpt_run --text "By each engine step the lost"
                   --workdir ${STUDY_OUT}/browser --screenshot ${STUDY_OUT}/browser/explore_gpt.png)
  set_tests_properties(cli.explore.browser_gpt PROPERTIES FIXTURES_REQUIRED explore_gpt_run)
  # Issue 34, class 2: a run folder, corpus and text full of <!--<script> and </script>.
  add_test(NAME cli.explore.browser_hostile
           COMMAND ${ATTOGRAD_SELENIUM_PYTHON} ${ATTOGRAD_CLI_SRC}/explore_page.py --attograd ${AG} --mode hostile
                   --workdir ${STUDY_OUT}/browser --screenshot ${STUDY_OUT}/browser/explore_hostile.png)
  set_tests_properties(cli.explore.browser_attention cli.explore.browser_gpt cli.explore.browser_hostile PROPERTIES
                       PASS_REGULAR_EXPRESSION "PASS: explore page" TIMEOUT 600 ENVIRONMENT "OPENBLAS_NUM_THREADS=1")
else()
  # scripts/setup-deps.sh installs them: without them the browser test is skipped (status 77),
  # saying why, and never shows as passed.
  add_test(NAME cli.explore.browser COMMAND sh -c
           "echo 'SKIP: the explore page browser tests need Debian chromium, chromium-driver and python3-selenium (scripts/setup-deps.sh)'; exit 77")
  set_tests_properties(cli.explore.browser PROPERTIES SKIP_RETURN_CODE 77)
endif()

# ---- the profiler: train --profile-steps, bench train --profile ---------------------------------
# Two threads and GEMMs big enough to be split, so that there are pool tasks. The first step is
# a warm-up.
attograd_cli_test(cli.train.profile EXIT 0
                  STDOUT "profile of attograd train: 2 steps, [0-9.]+ ms per step\n.*Name +Fwd calls +Fwd total ms +Fwd self ms +Bwd calls +Bwd total ms +Bwd self ms +% step +Fwd GFLOP/s +Bwd GFLOP/s\n.*\nlinear .*phases: data [^\n]* forward [^\n]* backward [^\n]* optimizer [^\n]*together [0-9.]+% of the step time\nGEMMs: [0-9]+ calls.*trace: prof_run/trace\\.json \\(open it in https://ui\\.perfetto\\.dev or chrome://tracing\\).*done: 4 iters"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out prof_run --overwrite --iters 4 --eval-every 4
                          --sample-tokens 0 --threads 2 --layers 1 --heads 2 --embd 64 --block 32 --batch 8 --eval-iters 2
                          --no-progress --profile-steps 2)
set_tests_properties(cli.train.profile PROPERTIES FIXTURES_SETUP prof_run)
# The graph of the same model, for the names of its ops.
attograd_cli_test(cli.train.profile_graph EXIT 0 STDOUT "graph: [0-9]+ ops"
                  COMMAND ${AG} graph --model --checkpoint prof_run --text "First Citi" --out prof_graph.dot)
set_tests_properties(cli.train.profile_graph PROPERTIES FIXTURES_REQUIRED prof_run FIXTURES_SETUP prof_graph)
if(ATTOGRAD_PYTHON3)
  add_test(NAME cli.train.profile_trace
           COMMAND ${ATTOGRAD_PYTHON3} ${ATTOGRAD_CLI_SRC}/check_trace.py ${ATTOGRAD_CLI_OUT}/prof_run
                   ${ATTOGRAD_CLI_OUT}/prof_graph.dot 2)
  set_tests_properties(cli.train.profile_trace PROPERTIES FIXTURES_REQUIRED "prof_run;prof_graph" TIMEOUT 120)
endif()
attograd_cli_test(cli.train.profile_negative EXIT 2 STDERR "attograd train: error: train: --profile-steps must be in 0\\.\\.--iters - 1 \\(the first step is a warm-up, not profiled\\), got -1\n"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out prof_bad --iters 4 --profile-steps -1)
attograd_cli_test(cli.train.profile_too_many EXIT 2 STDERR "--profile-steps must be in 0\\.\\.--iters - 1 .*got 4\n"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out prof_bad --iters 4 --profile-steps 4)
attograd_cli_test(cli.bench.profile EXIT 0
                  STDERR "profile of attograd bench train \\(default\\): 5 steps.*phases: [^\n]*forward .*trace: bench_prof/trace\\.json"
                  COMMAND ${AG} bench train --seconds 0.2 --max-steps 3 --profile=bench_prof)
