# Command-line tests of graph, attend, plot and train --grad-report (see tests/cli.cmake for
# attograd_cli_test; small_run is the run that tests/cli_train.cmake trains).
find_program(ATTOGRAD_DOT_PROGRAM dot)  # Graphviz is optional: without it only .dot is written
set(VIZ_OUT ${ATTOGRAD_CLI_OUT}/viz)
file(MAKE_DIRECTORY ${VIZ_OUT})

attograd_cli_test(cli.graph.help EXIT 0 STDOUT "--model.*--attention.*--checkpoint.*--no-backward.*--out"
                  COMMAND ${AG} graph --help)
attograd_cli_test(cli.attend.help EXIT 0 STDOUT "--checkpoint.*--text.*--out.*--cell" COMMAND ${AG} attend --help)
attograd_cli_test(cli.plot.help EXIT 0 STDOUT "DIR.*--out.*--width" COMMAND ${AG} plot --help)

# ---- graph: the DOT file declares exactly the nodes and edges of the recorded graph ---------
add_test(NAME cli.graph.attention_dot
         COMMAND ${CMAKE_COMMAND} -DDOT=${VIZ_OUT}/mha.dot "-DEXPECT_LABEL=in_proj_weight\\n[24, 8]\\n|grad| = "
                 -P ${ATTOGRAD_CLI_SRC}/check_graph.cmake -- ${AG} graph --attention --out ${VIZ_OUT}/mha.dot)
add_test(NAME cli.graph.model_dot
         COMMAND ${CMAKE_COMMAND} -DDOT=${VIZ_OUT}/model.dot "-DEXPECT_LABEL=blocks.0.mlp.fc.weight\\n[32, 8]"
                 -P ${ATTOGRAD_CLI_SRC}/check_graph.cmake -- ${AG} graph --model --len 5 --out ${VIZ_OUT}/model.dot)
add_test(NAME cli.graph.checkpoint_dot
         COMMAND ${CMAKE_COMMAND} -DDOT=${VIZ_OUT}/ckpt.dot "-DEXPECT_LABEL=tok_emb.weight\\n[39, 16]"
                 -P ${ATTOGRAD_CLI_SRC}/check_graph.cmake -- ${AG} graph --checkpoint small_run --text "The engine"
                 --out ${VIZ_OUT}/ckpt.dot)
set_tests_properties(cli.graph.checkpoint_dot PROPERTIES FIXTURES_REQUIRED small_run)
attograd_cli_test(cli.graph.forward_only EXIT 0 STDOUT "forward only" NOT_OUTPUT "rendered"
                  COMMAND ${AG} graph --attention --no-backward --out ${VIZ_OUT}/fwd.dot)

# Rendering: with Graphviz installed an SVG; without, exit 1 naming the package, .dot written.
if(ATTOGRAD_DOT_PROGRAM)
  attograd_cli_test(cli.graph.render_svg EXIT 0 STDOUT "wrote [^\n]*mha_render\\.dot\nrendered [^\n]*mha_render\\.svg"
                    COMMAND ${AG} graph --attention --out ${VIZ_OUT}/mha_render.svg)
  set_tests_properties(cli.graph.render_svg PROPERTIES FIXTURES_SETUP viz_svg)
  add_test(NAME cli.graph.render_svg_is_svg
           COMMAND ${CMAKE_COMMAND} -DFILE=${VIZ_OUT}/mha_render.svg -DREGEX=<svg.*in_proj_weight
                   -P ${ATTOGRAD_CLI_SRC}/check_file.cmake)
  set_tests_properties(cli.graph.render_svg_is_svg PROPERTIES FIXTURES_REQUIRED viz_svg)
  add_test(NAME cli.graph.render_png
           COMMAND ${CMAKE_COMMAND} -DPNG=${VIZ_OUT}/mha_render.png -DANY_SIZE=ON
                   -P ${ATTOGRAD_CLI_SRC}/check_png.cmake -- ${AG} graph --attention --out ${VIZ_OUT}/mha_render.png)
else()
  message(STATUS "attograd: Graphviz's dot not found (Debian package graphviz): the SVG/PNG rendering tests "
                 "check the message instead")
endif()
# Without dot on PATH (whether or not it is installed): a clear error, and the .dot is kept.
attograd_cli_test(cli.graph.no_graphviz EXIT 1
                  STDERR "nodot\\.svg: cannot render: Graphviz's dot is not installed \\(Debian package graphviz[^\n]*render it with: dot -Tsvg "
                  COMMAND ${CMAKE_COMMAND} -E env PATH=/nonexistent ${AG} graph --attention --out ${VIZ_OUT}/nodot.svg)
attograd_cli_test(cli.graph.bad_extension EXIT 2 STDERR "--out must end in \\.dot, \\.svg or \\.png"
                  COMMAND ${AG} graph --attention --out g.txt)
attograd_cli_test(cli.graph.both_kinds EXIT 2 STDERR "choose one of --model and --attention"
                  COMMAND ${AG} graph --model --attention --out g.dot)
attograd_cli_test(cli.graph.text_without_checkpoint EXIT 2 STDERR "--text goes with --checkpoint"
                  COMMAND ${AG} graph --model --text "abc" --out g.dot)
attograd_cli_test(cli.graph.missing_out EXIT 2 STDERR "--out FILE" COMMAND ${AG} graph --attention)
attograd_cli_test(cli.graph.missing_checkpoint EXIT 1 STDERR "no_such_run" COMMAND ${AG} graph --checkpoint no_such_run --out g.dot)

# ---- attend: safetensors and PNG heatmaps of the sizes it reports --------------------------------
attograd_cli_test(cli.attend.small EXIT 0
                  STDOUT "on 10 characters\nwrote [^\n]*attention\\.safetensors \\(layer0: F32 \\[2, 10, 10\\] each\\)\nlayer 0 head 0: mean entropy [0-9.]+ bits, mean distance back [0-9.]+ characters  -> layer0_head0\\.png \\([0-9]+x[0-9]+\\)\nlayer 0 head 1: .*wrote [^\n]*attention_grid\\.png"
                  COMMAND ${AG} attend --checkpoint small_run --text "The engine" --out ${VIZ_OUT}/attend)
set_tests_properties(cli.attend.small PROPERTIES FIXTURES_REQUIRED small_run FIXTURES_SETUP viz_attend)
add_test(NAME cli.attend.png_size
         COMMAND ${CMAKE_COMMAND} -DPNG=${VIZ_OUT}/attend_cell/layer0_head1.png
                 "-DSIZE_REGEX=layer0_head1\\.png \\(([0-9]+)x([0-9]+)\\)"
                 -P ${ATTOGRAD_CLI_SRC}/check_png.cmake -- ${AG} attend --checkpoint small_run --text "By each engine"
                 --cell 20 --out ${VIZ_OUT}/attend_cell)
set_tests_properties(cli.attend.png_size PROPERTIES FIXTURES_REQUIRED small_run)
add_test(NAME cli.attend.grid_is_png
         COMMAND ${CMAKE_COMMAND} -DPNG=${VIZ_OUT}/attend/attention_grid.png -DANY_SIZE=ON
                 -P ${ATTOGRAD_CLI_SRC}/check_png.cmake)
set_tests_properties(cli.attend.grid_is_png PROPERTIES FIXTURES_REQUIRED viz_attend)
attograd_cli_test(cli.attend.too_long EXIT 1
                  STDERR "text: has 17 characters but the model's context \\(block_size\\) is 16"
                  COMMAND ${AG} attend --checkpoint small_run --text "The engine counts" --out ${VIZ_OUT}/never)
attograd_cli_test(cli.attend.outside_vocab EXIT 1 STDERR "character 'Z' \\(U\\+005A\\).*not in the vocabulary"
                  COMMAND ${AG} attend --checkpoint small_run --text "Zebra" --out ${VIZ_OUT}/never)
set_tests_properties(cli.attend.too_long cli.attend.outside_vocab PROPERTIES FIXTURES_REQUIRED small_run)
attograd_cli_test(cli.attend.grads EXIT 0
                  STDOUT "LM loss on the text [0-9.]+ \\(9 predictions\\); wrote [^\n]*attention_grads\\.safetensors[^\n]*\nwrote [^\n]*attention_score_grads\\.safetensors \\(dLoss/dScores[^\n]*\nlayer 0 head 0: [^\n]*-> layer0_head0\\.png [^\n]*; \\|dLoss/dWeights\\| [0-9.]+e[-+][0-9]+, \\|dLoss/dScores\\| [0-9.]+e[-+][0-9]+  -> layer0_head0_grad\\.png\n.*wrote [^\n]*attention_grads_grid\\.png"
                  COMMAND ${AG} attend --checkpoint small_run --text "The engine" --grads --out ${VIZ_OUT}/attend_grads)
set_tests_properties(cli.attend.grads PROPERTIES FIXTURES_REQUIRED small_run FIXTURES_SETUP viz_attend_grads)
add_test(NAME cli.attend.grads_png
         COMMAND ${CMAKE_COMMAND} -DPNG=${VIZ_OUT}/attend_grads/layer0_head1_grad.png -DANY_SIZE=ON
                 -P ${ATTOGRAD_CLI_SRC}/check_png.cmake)
set_tests_properties(cli.attend.grads_png PROPERTIES FIXTURES_REQUIRED viz_attend_grads)
attograd_cli_test(cli.attend.grads_one_char EXIT 1 STDERR "--grads needs at least 2 characters"
                  COMMAND ${AG} attend --checkpoint small_run --text "T" --grads --out ${VIZ_OUT}/never)
set_tests_properties(cli.attend.grads_one_char PROPERTIES FIXTURES_REQUIRED small_run)
attograd_cli_test(cli.attend.no_text EXIT 2 STDERR "exactly one of --text and --text-file"
                  COMMAND ${AG} attend --checkpoint small_run --out ${VIZ_OUT}/never)

# ---- plot: from small_run's metrics, and from a small metrics.jsonl -----------------------------
add_test(NAME cli.plot.small_run
         COMMAND ${CMAKE_COMMAND} -DPNG=${ATTOGRAD_CLI_OUT}/small_run/loss.png -DWIDTH=900 -DHEIGHT=600
                 -P ${ATTOGRAD_CLI_SRC}/check_png.cmake -- ${AG} plot small_run)
set_tests_properties(cli.plot.small_run PROPERTIES FIXTURES_REQUIRED small_run)
file(MAKE_DIRECTORY ${VIZ_OUT}/metrics_run)
file(WRITE ${VIZ_OUT}/metrics_run/metrics.jsonl
     "{\"iter\":0,\"train_loss\":4.17,\"val_loss\":4.18,\"lr\":0.0,\"tokens_per_s\":0,\"elapsed_s\":0.5}\n"
     "{\"iter\":10,\"train_loss\":3.9,\"val_loss\":null,\"lr\":0.0001,\"tokens_per_s\":900,\"elapsed_s\":1.5}\n"
     "{\"iter\":20,\"train_loss\":3.4,\"val_loss\":null,\"lr\":0.0002,\"tokens_per_s\":900,\"elapsed_s\":2.5}\n"
     "{\"iter\":20,\"train_loss\":3.38,\"val_loss\":3.41,\"lr\":0.0002,\"tokens_per_s\":900,\"elapsed_s\":3.0}\n")
add_test(NAME cli.plot.metrics_file
         COMMAND ${CMAKE_COMMAND} -DPNG=${VIZ_OUT}/custom.png -DWIDTH=640 -DHEIGHT=480
                 -P ${ATTOGRAD_CLI_SRC}/check_png.cmake -- ${AG} plot ${VIZ_OUT}/metrics_run --out ${VIZ_OUT}/custom.png
                 --width 640 --height 480)
attograd_cli_test(cli.plot.missing_run EXIT 1 STDERR "no_such_run: cannot open file" COMMAND ${AG} plot no_such_run)
attograd_cli_test(cli.plot.not_png EXIT 2 STDERR "--out must end in \\.png" COMMAND ${AG} plot small_run --out x.svg)
attograd_cli_test(cli.plot.no_dir EXIT 2 STDERR "the run folder DIR is required" COMMAND ${AG} plot)

# ---- train --grad-report: a report file per evaluation after a step, and a summary line -------
attograd_cli_test(cli.train.grad_report EXIT 0
                  STDOUT "eval  iter    10 [^\n]*\ngrads iter 10  grad norm [0-9.]+ \\(\\|value\\| [0-9.]+\\); largest \\|grad\\|/\\|value\\| [0-9.e+-]+ in [a-z_.0-9]+  \\(grad_report_iter10\\.txt\\)"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out grad_run --overwrite --iters 10 --eval-every 10
                          --log-every 10 --sample-tokens 0 --grad-report ${TINY_MODEL})
set_tests_properties(cli.train.grad_report PROPERTIES FIXTURES_SETUP grad_run)
add_test(NAME cli.train.grad_report_file
         COMMAND ${CMAKE_COMMAND} -DFILE=${ATTOGRAD_CLI_OUT}/grad_run/grad_report_iter10.txt
                 "-DREGEX=gradients of step 9 .*\nblocks\\.0\\.attn\\.in_proj_weight +\\[48, 16\\] .*\ntotal +4192 "
                 -P ${ATTOGRAD_CLI_SRC}/check_file.cmake)
set_tests_properties(cli.train.grad_report_file PROPERTIES FIXTURES_REQUIRED grad_run)

# ---- train --detect-anomaly: the same run with anomaly mode on each step -------------------------
attograd_cli_test(cli.train.detect_anomaly EXIT 0 STDOUT "eval  iter     2 "
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out anomaly_run --overwrite --iters 2 --eval-every 2
                          --log-every 1 --sample-tokens 0 --detect-anomaly ${TINY_MODEL})

# The checks run through cmake scripts above run like attograd_cli_test's.
set(viz_script_tests cli.graph.attention_dot cli.graph.model_dot cli.graph.checkpoint_dot cli.attend.png_size
    cli.attend.grid_is_png cli.attend.grads_png cli.plot.small_run cli.plot.metrics_file cli.train.grad_report_file)
if(ATTOGRAD_DOT_PROGRAM)
  list(APPEND viz_script_tests cli.graph.render_svg_is_svg cli.graph.render_png)
endif()
set_tests_properties(${viz_script_tests} PROPERTIES WORKING_DIRECTORY ${ATTOGRAD_CLI_OUT}
                     ENVIRONMENT "OPENBLAS_NUM_THREADS=1" TIMEOUT 120)

# ---- plot several runs: overlaid, the legend from their folder names ------------------------
add_test(NAME cli.plot.overlay
         COMMAND ${CMAKE_COMMAND} -DPNG=${ATTOGRAD_CLI_OUT}/overlay.png -DWIDTH=900 -DHEIGHT=600
                 -P ${ATTOGRAD_CLI_SRC}/check_png.cmake -- ${AG} plot small_run mlp_run --out overlay.png)
set_tests_properties(cli.plot.overlay PROPERTIES FIXTURES_REQUIRED "small_run;mlp_run" WORKING_DIRECTORY ${ATTOGRAD_CLI_OUT})
attograd_cli_test(cli.plot.overlay_missing_run EXIT 1 STDERR "no_such_run.*cannot open file"
                  COMMAND ${AG} plot small_run no_such_run --out overlay_bad.png)
set_tests_properties(cli.plot.overlay_missing_run PROPERTIES FIXTURES_REQUIRED small_run)
