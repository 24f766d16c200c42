# Command-line tests of --precision and --gemm (see tests/cli.cmake for attograd_cli_test and
# tests/cli_train.cmake for TINY_MODEL and the small_run fixture).

# --version names each provider and how bf16 would run on it here.
attograd_cli_test(cli.precision.version EXIT 0
                  STDOUT "\ngemm openblas: openblas \\(OpenBLAS [^\n]*kernels\\); bf16 GEMMs portable: [^\n]*\ngemm onednn: [^\n]*\n$"
                  COMMAND ${AG} --version)
# The run header says which provider runs, how it was chosen, and which bf16 path.
attograd_cli_test(cli.precision.train_header EXIT 0
                  STDOUT "\ngemm: openblas \\(OpenBLAS [^\n]*\\), --gemm openblas\nprecision: bf16 autocast \\(bf16 GEMMs portable: operands rounded to bf16 in float32, through openblas's sgemm; [^\n]*\nmfu: against a bf16 GEMM peak of [0-9]+ GFLOP/s.*done: 4 iters"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out bf16_run --overwrite --iters 4 --eval-every 4
                          --sample-tokens 0 --precision bf16 --gemm openblas ${TINY_MODEL})
attograd_cli_test(cli.precision.train_auto EXIT 0 STDOUT "\ngemm: [a-z]+ [^\n]*, chosen by --gemm auto: [0-9]+ against [a-z]+'s [0-9]+ GFLOP/s per thread at this model's shapes"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out auto_run --overwrite --iters 2 --eval-every 2
                          --sample-tokens 0 ${TINY_MODEL})
attograd_cli_test(cli.precision.bad_name EXIT 2 STDERR "attograd train: error: --precision must be fp32 or bf16, got 'fp16'"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out x --precision fp16)
attograd_cli_test(cli.precision.bad_gemm EXIT 2 STDERR "--gemm must be auto, openblas or onednn, got 'mkl'"
                  COMMAND ${AG} bench train --gemm mkl)
attograd_cli_test(cli.precision.bad_gemm_bf16 EXIT 2 STDERR "--gemm-bf16 must be auto, matmul or gemm, got 'tiles'"
                  COMMAND ${AG} bench train --gemm-bf16 tiles)
attograd_cli_test(cli.precision.train_bad_gemm_bf16 EXIT 2 STDERR "--gemm-bf16 must be auto, matmul or gemm, got 'tiles'"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out x --gemm-bf16 tiles)
file(WRITE ${ATTOGRAD_CLI_OUT}/precision_fp16.toml "precision = \"fp16\"\n")
attograd_cli_test(cli.precision.bad_toml EXIT 1 STDERR "precision_fp16\\.toml:1: 'precision' must be fp32 or bf16 \\(a string\\)"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out x --config precision_fp16.toml)
# Full precision only: refused by name, with the reason.
attograd_cli_test(cli.precision.gradcheck_refuses_bf16 EXIT 2
                  STDERR "--precision bf16 cannot be used with gradcheck: it compares float64 gradients"
                  COMMAND ${AG} gradcheck ops --precision bf16)
attograd_cli_test(cli.precision.explore_refuses_bf16 EXIT 2
                  STDERR "--precision bf16 cannot be used with explore: its finite-difference check"
                  COMMAND ${AG} explore --checkpoint small_run --text "The " --out e.html --precision bf16)
set_tests_properties(cli.precision.explore_refuses_bf16 PROPERTIES FIXTURES_REQUIRED small_run)
# sample and eval at bf16: the header on stderr, the usual output on stdout.
attograd_cli_test(cli.precision.sample_bf16 EXIT 0 STDOUT "^The " STDERR "precision: bf16 autocast.*generated 20 characters"
                  COMMAND ${AG} sample --checkpoint small_run --prompt "The " --tokens 20 --precision bf16)
set_tests_properties(cli.precision.sample_bf16 PROPERTIES FIXTURES_REQUIRED small_run)
attograd_cli_test(cli.precision.eval_bf16 EXIT 0 STDOUT "^loss [0-9]+\\.[0-9]+\nbits per character" STDERR "precision: bf16 autocast"
                  COMMAND ${AG} eval --checkpoint small_run --text-file ${ATTOGRAD_SMALL_CORPUS} --precision bf16)
set_tests_properties(cli.precision.eval_bf16 PROPERTIES FIXTURES_REQUIRED small_run)
# bench at bf16 on each provider: the same GEMMs (their FLOPs as cli.bench.train_smoke's), and
# each provider's speed at the configuration's shapes.
foreach(gemm openblas onednn)
  attograd_cli_test(cli.precision.bench_bf16_${gemm} EXIT 0
                    STDOUT "\"bench\":\"train\".*\"gemm\":\"${gemm}\".*\"gemm_floor_ms\":[0-9].*\"gemm_gflop\":4\\.0145387.*\"precision\":\"bf16\""
                    COMMAND ${AG} bench train --max-steps 2 --seconds 0.01 --json --precision bf16 --gemm ${gemm})
endforeach()
attograd_cli_test(cli.precision.bench_gemm EXIT 0
                  STDOUT "\"bench\":\"gemm\".*\"onednn_bf16_gflops_per_thread\":[0-9].*\"onednn_bf16_matmul_rounded_gflops_per_thread\":[0-9].*\"openblas_fp32_gflops_per_thread\":[0-9]"
                  COMMAND ${AG} bench gemm --json)
