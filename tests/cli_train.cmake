# Command-line tests of train, sample and eval (see tests/cli.cmake for attograd_cli_test).
set(ATTOGRAD_SMALL_CORPUS ${ATTOGRAD_CLI_SRC}/small_corpus.txt)
set(TINY_MODEL --layers 1 --heads 2 --embd 16 --block 16 --batch 4 --eval-iters 2 --no-progress)

attograd_cli_test(cli.train.help EXIT 0 STDOUT "--data.*--skip-nonfinite.*--resume" COMMAND ${AG} train --help)
attograd_cli_test(cli.sample.help EXIT 0 STDOUT "--checkpoint.*--temperature.*--top-k" COMMAND ${AG} sample --help)
attograd_cli_test(cli.eval.help EXIT 0 STDOUT "--checkpoint.*--text-file" COMMAND ${AG} eval --help)

attograd_cli_test(cli.train.small EXIT 0
                  STDOUT "eval  iter     0.*iter    20/40.*eval  iter    40.*done: 40 iters.*---- sample"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out small_run --overwrite --iters 40 --eval-every 20
                          --log-every 20 --sample-tokens 40 ${TINY_MODEL})
set_tests_properties(cli.train.small PROPERTIES FIXTURES_SETUP small_run)
# nanoGPT's MFU and ms/step on every log line, against the sgemm peak kept for this machine (printed first).
attograd_cli_test(cli.train.log_line_mfu EXIT 0
                  STDOUT "mfu: against an sgemm peak of [0-9]+ GFLOP/s \\([^)]*kept[^)]*\\)\n.*iter    10/20  loss [0-9]+\\.[0-9]+  lr [0-9.e+-]+  [0-9]+\\.[0-9] ms/step  [0-9]+ tok/s  mfu [0-9]+\\.[0-9]%  ETA 0m0"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out log_mfu_run --overwrite --iters 20 --eval-every 20
                          --log-every 10 --sample-tokens 0 ${TINY_MODEL})
attograd_cli_test(cli.sample.small EXIT 0 STDERR "generated 50 characters in .* tokens/s \\(KV cache\\)"
                  COMMAND ${AG} sample --checkpoint small_run --prompt "The " --tokens 50 --temperature 0)
# A train state where a model is expected: said so, with what to give instead.
attograd_cli_test(cli.sample.train_state_is_not_a_model EXIT 1
                  STDERR "small_run/train_state\\.safetensors: a train state \\(what train --resume reads\\), not a model; give its run folder small_run or the model\\.safetensors in it"
                  COMMAND ${AG} sample --checkpoint small_run/train_state.safetensors --tokens 5)
set_tests_properties(cli.sample.train_state_is_not_a_model PROPERTIES FIXTURES_REQUIRED small_run)
attograd_cli_test(cli.eval.small EXIT 0 STDOUT "loss [0-9]+\\.[0-9]+\nbits per character"
                  COMMAND ${AG} eval --checkpoint small_run/model.safetensors --text-file ${ATTOGRAD_SMALL_CORPUS})
# --num-samples K: K samples, each followed by nanoGPT's line of dashes (the corpus has no '-').
attograd_cli_test(cli.sample.num_samples EXIT 0
                  STDOUT "^The [^-]*\n---------------\nThe [^-]*\n---------------\nThe [^-]*\n---------------\n$"
                  STDERR "generated 30 characters"
                  COMMAND ${AG} sample --checkpoint small_run --prompt "The " --tokens 10 --num-samples 3)
attograd_cli_test(cli.sample.num_samples_zero EXIT 2 STDERR "--num-samples must be"
                  COMMAND ${AG} sample --checkpoint small_run --num-samples 0)
# --prompt-file FILE: the whole file, newlines included, is the prompt.
file(WRITE ${ATTOGRAD_CLI_OUT}/prompt.txt "The lost step\nThe ")
attograd_cli_test(cli.sample.prompt_file EXIT 0 STDOUT "^The lost step\nThe "
                  COMMAND ${AG} sample --checkpoint small_run --prompt-file prompt.txt --tokens 10)
attograd_cli_test(cli.sample.prompt_file_missing EXIT 1 STDERR "no_such_prompt\\.txt: cannot open"
                  COMMAND ${AG} sample --checkpoint small_run --prompt-file no_such_prompt.txt)
attograd_cli_test(cli.sample.prompt_and_prompt_file EXIT 2 STDERR "--prompt or --prompt-file, not both"
                  COMMAND ${AG} sample --checkpoint small_run --prompt x --prompt-file prompt.txt)
set_tests_properties(cli.sample.small cli.eval.small cli.sample.num_samples cli.sample.num_samples_zero
                     cli.sample.prompt_file cli.sample.prompt_file_missing cli.sample.prompt_and_prompt_file
                     PROPERTIES FIXTURES_REQUIRED small_run)

# ---- the second model, the character MLP, through the same commands ------------------------
attograd_cli_test(cli.train.mlp EXIT 0
                  STDOUT "model: mlp, context 8 characters of width 16, hidden 64, [0-9]+ parameters.*eval  iter    40.*done: 40 iters.*---- sample"
                  COMMAND ${AG} train --model mlp --block 8 --embd 16 --hidden 64 --batch 8 --eval-iters 2 --no-progress
                          --data ${ATTOGRAD_SMALL_CORPUS} --out mlp_run --overwrite --iters 40 --eval-every 20 --log-every 20
                          --sample-tokens 40)
set_tests_properties(cli.train.mlp PROPERTIES FIXTURES_SETUP mlp_run)
attograd_cli_test(cli.sample.mlp EXIT 0 STDERR "generated 50 characters"
                  COMMAND ${AG} sample --checkpoint mlp_run --prompt "The " --tokens 50)
attograd_cli_test(cli.eval.mlp EXIT 0 STDOUT "loss [0-9]+\\.[0-9]+\nbits per character"
                  COMMAND ${AG} eval --checkpoint mlp_run --text-file ${ATTOGRAD_SMALL_CORPUS})
attograd_cli_test(cli.attend.mlp EXIT 1 STDERR "the model 'mlp' .* has no attention weights to show"
                  COMMAND ${AG} attend --checkpoint mlp_run --text "The" --out mlp_attend)
attograd_cli_test(cli.train.resume_mlp_done EXIT 0 STDOUT "model: mlp.*done: 40 iters"
                  COMMAND ${AG} train --resume mlp_run --no-progress)
set_tests_properties(cli.sample.mlp cli.eval.mlp cli.attend.mlp PROPERTIES FIXTURES_REQUIRED mlp_run)
set_tests_properties(cli.train.resume_mlp_done PROPERTIES FIXTURES_REQUIRED mlp_run DEPENDS "cli.sample.mlp;cli.eval.mlp;cli.attend.mlp")
attograd_cli_test(cli.train.unknown_model EXIT 2 STDERR "--model: unknown model 'rnn' \\(known: gpt, modern, mlp\\)"
                  COMMAND ${AG} train --model rnn --data x --out y)

# ---- --config FILE (TOML): flags override it; the run folder keeps config.toml, which reruns it
attograd_cli_test(cli.train.config_file EXIT 0 STDOUT "model: 1 layers, 2 heads, 16 wide, block 16.*done: 10 iters"
                  COMMAND ${AG} train --config ${CMAKE_CURRENT_SOURCE_DIR}/configs/shakespeare_char.toml
                          --data ${ATTOGRAD_SMALL_CORPUS} --out config_run --overwrite --iters 10 --eval-every 10 --sample-tokens 0
                          ${TINY_MODEL})
set_tests_properties(cli.train.config_file PROPERTIES FIXTURES_SETUP config_run)
attograd_cli_test(cli.train.config_rerun EXIT 0 STDOUT "model: 1 layers, 2 heads, 16 wide, block 16.*out config_rerun.*done: 10 iters"
                  COMMAND ${AG} train --config config_run/config.toml --out config_rerun --overwrite)
set_tests_properties(cli.train.config_rerun PROPERTIES FIXTURES_REQUIRED config_run)
file(WRITE ${ATTOGRAD_CLI_OUT}/bad_config.toml "layers = 2\nlayres = 3\n")
attograd_cli_test(cli.train.config_unknown_key EXIT 1 STDERR "bad_config\\.toml:2: unknown key 'layres'"
                  COMMAND ${AG} train --config bad_config.toml --data x --out y)
attograd_cli_test(cli.train.config_with_resume EXIT 2 STDERR "--config cannot be combined with --resume"
                  COMMAND ${AG} train --config bad_config.toml --resume y)

# ---- bad input: a clear message naming the file or the text, status 1 (2 for usage) -------
file(WRITE ${ATTOGRAD_CLI_OUT}/empty.txt "")
file(WRITE ${ATTOGRAD_CLI_OUT}/short.txt "too short")
attograd_cli_test(cli.train.missing_corpus EXIT 1 STDERR "nope\\.txt"
                  COMMAND ${AG} train --data nope.txt --out bad_run ${TINY_MODEL})
attograd_cli_test(cli.train.empty_corpus EXIT 1 STDERR "empty\\.txt.*empty"
                  COMMAND ${AG} train --data empty.txt --out bad_run ${TINY_MODEL})
attograd_cli_test(cli.train.short_corpus EXIT 1 STDERR "short\\.txt"
                  COMMAND ${AG} train --data short.txt --out bad_run ${TINY_MODEL})
attograd_cli_test(cli.train.directory_corpus EXIT 1 STDERR "directory"
                  COMMAND ${AG} train --data ${ATTOGRAD_CLI_SRC} --out bad_run ${TINY_MODEL})
attograd_cli_test(cli.train.bad_heads EXIT 2 STDERR "divisible.*\nTry 'attograd train --help'"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out bad_run --embd 10 --heads 3)
# --resume DIR --iters N: a finished 20-step run still inside its warmup of 100 extends to 30;
# one whose cosine decay began (warmup 5) is refused with the reason and left alone.
attograd_cli_test(cli.train.extend_setup EXIT 0 STDOUT "done: 20 iters"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out extend_run --overwrite --iters 20 --eval-every 10
                          --sample-tokens 0 ${TINY_MODEL})
attograd_cli_test(cli.train.resume_extend EXIT 0
                  STDOUT "extending the run from 20 to 30 iters.*resuming at iter 20.*eval  iter    30.*done: 30 iters"
                  COMMAND ${AG} train --resume extend_run --iters 30 --no-progress)
attograd_cli_test(cli.train.resume_finished_reports EXIT 0 STDOUT "done: 30 iters in [0-9]+m[0-9]+s, val loss [1-9]"
                  COMMAND ${AG} train --resume extend_run --no-progress)
attograd_cli_test(cli.train.refuse_setup EXIT 0 STDOUT "done: 20 iters"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out refuse_run --overwrite --iters 20 --warmup 5 --eval-every 10
                          --sample-tokens 0 ${TINY_MODEL})
attograd_cli_test(cli.train.resume_extend_refused EXIT 2
                  STDERR "--iters 40 cannot continue the run in refuse_run exactly: its step 6 used lr.*--init-from refuse_run"
                  COMMAND ${AG} train --resume refuse_run --iters 40 --no-progress)
set_tests_properties(cli.train.extend_setup PROPERTIES FIXTURES_SETUP extend_run)
set_tests_properties(cli.train.resume_extend PROPERTIES FIXTURES_REQUIRED extend_run)
set_tests_properties(cli.train.resume_finished_reports PROPERTIES FIXTURES_REQUIRED extend_run DEPENDS cli.train.resume_extend)
set_tests_properties(cli.train.refuse_setup PROPERTIES FIXTURES_SETUP refuse_run)
set_tests_properties(cli.train.resume_extend_refused PROPERTIES FIXTURES_REQUIRED refuse_run)
attograd_cli_test(cli.train.resume_with_flags EXIT 2 STDERR "--lr cannot be combined with --resume"
                  COMMAND ${AG} train --resume small_run --lr 0.1)
attograd_cli_test(cli.train.missing_data_flag EXIT 2 STDERR "--data is required" COMMAND ${AG} train --out x)
# Every double of the field table is finite (TOML's inf and nan used to be taken, and to fail
# much later with misleading advice).
file(WRITE ${ATTOGRAD_CLI_OUT}/min_lr_inf.toml "min-lr = inf\n")
file(WRITE ${ATTOGRAD_CLI_OUT}/weight_decay_inf.toml "weight-decay = inf\n")
attograd_cli_test(cli.train.min_lr_inf EXIT 2 STDERR "--min-lr must be a finite number, got inf\nTry 'attograd train --help'"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out inf_run --config min_lr_inf.toml)
attograd_cli_test(cli.train.weight_decay_inf EXIT 2 STDERR "--weight-decay must be a finite number, got inf"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out inf_run --config weight_decay_inf.toml)
# A flag the chosen model does not read is refused, not silently recorded.
attograd_cli_test(cli.train.mlp_refuses_gpt_flags EXIT 2
                  STDERR "--layers: the model mlp has no such setting \\(it takes --embd, --block, --hidden\\)"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out mlp_flags_run --model mlp --layers 7 --heads 3)
# modded-nanogpt's model parts (value embeddings, U-net skips, the x0 residual) are the modern model's: refused by name for another, refused past
# layers/2 value tables; a short run with both trains, samples through the KV-cache decoder, and
# its model file reads back in eval.
attograd_cli_test(cli.train.gpt_refuses_value_embeds EXIT 2
                  STDERR "--value-embeds: the model gpt has no such setting"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out parts_flags_run --value-embeds 1)
attograd_cli_test(cli.train.too_many_value_embeds EXIT 2
                  STDERR "value_embeds must be in \\[0, n_layer/2\\] = \\[0, 1\\]"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out parts_flags_run --model modern --layers 2 --value-embeds 2)
attograd_cli_test(cli.train.model_parts EXIT 0
                  STDOUT "model: 3 layers, 2 heads, 16 wide, block 16; .*1 value embedding, U-net skips, x0 residual.*done: 20 iters.*---- sample"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out parts_run --overwrite --model modern --layers 3 --heads 2
                          --embd 16 --block 16 --iters 20 --eval-every 10 --value-embeds 1 --unet-skips --x0-residual --sample-tokens 20 --no-progress)
attograd_cli_test(cli.eval.model_parts EXIT 0 STDOUT "loss [0-9.]+"
                  COMMAND ${AG} eval --checkpoint parts_run --text-file ${ATTOGRAD_SMALL_CORPUS})
set_tests_properties(cli.train.model_parts PROPERTIES FIXTURES_SETUP parts_run)
set_tests_properties(cli.eval.model_parts PROPERTIES FIXTURES_REQUIRED parts_run)
# --resume takes the run's validation too: a configuration error is a usage error there as well.
attograd_cli_test(cli.train.resume_negative_iters EXIT 2 STDERR "--iters must be ≥ 0"
                  COMMAND ${AG} train --resume small_run --iters -1)
set_tests_properties(cli.train.resume_negative_iters PROPERTIES FIXTURES_REQUIRED small_run)
attograd_cli_test(cli.sample.prompt_outside_vocab EXIT 1 STDERR "prompt: character 'Z' \\(U\\+005A\\).*not in the vocabulary"
                  COMMAND ${AG} sample --checkpoint small_run --prompt "the Zebra")
attograd_cli_test(cli.sample.missing_checkpoint EXIT 1 STDERR "no_such_run"
                  COMMAND ${AG} sample --checkpoint no_such_run)
attograd_cli_test(cli.sample.bad_checkpoint_file EXIT 1 STDERR "empty\\.txt"
                  COMMAND ${AG} sample --checkpoint empty.txt)
file(WRITE ${ATTOGRAD_CLI_OUT}/outside_vocab.txt "The engine counts Zebras\n")
attograd_cli_test(cli.eval.text_outside_vocab EXIT 1 STDERR "outside_vocab\\.txt.*not in the vocabulary"
                  COMMAND ${AG} eval --checkpoint small_run --text-file outside_vocab.txt)
set_tests_properties(cli.sample.prompt_outside_vocab cli.eval.text_outside_vocab cli.train.resume_with_flags
                     PROPERTIES FIXTURES_REQUIRED small_run)

# ---- Ctrl-C: checkpoint and exit 0; resume; a second Ctrl-C stops at once --------------------
add_test(NAME cli.train.interrupt
         COMMAND bash ${ATTOGRAD_CLI_SRC}/interrupt.sh $<TARGET_FILE:attograd> ${ATTOGRAD_SMALL_CORPUS}
                 ${ATTOGRAD_CLI_OUT}/interrupt)
set_tests_properties(cli.train.interrupt PROPERTIES PASS_REGULAR_EXPRESSION "PASS: interrupt" TIMEOUT 120
                     ENVIRONMENT "OPENBLAS_NUM_THREADS=1")

# ---- the benchmark command, as a smoke test only (speed is measured by make bench, not here) ----
# The GEMMs recorded from the real step must add up to exactly the analytic FLOP count that MFU
# is computed from, 3 × 1,321,402,368 for the default model, plus the scores Q·Kᵀ that the
# blockwise attention backward recomputes: 4 layers × 2·(12·4 heads)·64·64·32 = 50,331,648.
# Two steps make two rounds of steps, each set against a replay of the floor right after it, and
# each preceded by a reading of the two threads' round trip (null where it could not be read);
# the floor is set against the cores' multiply-add peak (null on a CPU without FMA).
attograd_cli_test(cli.bench.train_smoke EXIT 0
                  STDOUT "\"bench\":\"train\".*\"core_round_trip_ns_rounds\":\\[[0-9n][^],]*,[0-9n][^],]*\\].*\"floor_of_fma_peak\":[0-9n].*\"fma_ceiling_tokens_per_s\":[0-9n].*\"fma_peak\":\"[^\"]*\",\"fma_peak_gflops\":[0-9n].*\"gemm_floor_ms\":[0-9].*\"gemm_gflop\":4\\.0145387.*\"step_over_floor\":[0-9][^,]*,\"step_over_floor_rounds\":\\[[0-9][^],]*,[0-9][^],]*\\].*\"tokens_per_s\""
                  COMMAND ${AG} bench train --max-steps 2 --seconds 0.01 --json)
# bench train times the run's own optimizer, whichever --optimizer builds (Muon's Newton–Schulz
# GEMMs join the step's).
attograd_cli_test(cli.bench.train_muon EXIT 0
                  STDOUT "\"bench\":\"train\".*\"optimizer\":\"muon\".*\"tokens_per_s\""
                  COMMAND ${AG} bench train --optimizer muon --max-steps 2 --seconds 0.01 --json)
attograd_cli_test(cli.bench.unknown_optimizer EXIT 2 STDERR "--optimizer must be adamw or muon, got 'lion'"
                  COMMAND ${AG} bench train --optimizer lion)
attograd_cli_test(cli.bench.bad_config EXIT 2 STDERR "--config must be default or large, got 'huge'"
                  COMMAND ${AG} bench train --config huge)
attograd_cli_test(cli.bench.attention_smoke EXIT 0 STDOUT "\"ms_fwd_bwd\""
                  COMMAND ${AG} bench attention --len 32 --max-steps 2 --seconds 0.01 --json)
# Sampling resolves --gemm auto at a decode step's one row per GEMM, as `attograd sample` does.
attograd_cli_test(cli.bench.sample_smoke EXIT 0 STDOUT "\"bench\":\"sample\".*\"gemm_chosen_at_rows\":1[,}]"
                  COMMAND ${AG} bench sample --tokens 5 --json)
attograd_cli_test(cli.bench.sample_bad_batch EXIT 2 STDERR "--batch takes positive batch sizes like 1,8, got '0'"
                  COMMAND ${AG} bench sample --batch 1,0)
attograd_cli_test(cli.bench.unknown EXIT 2 STDERR "unknown benchmark 'nope'" COMMAND ${AG} bench nope)

# ---- --init-from DIR: a new run from a checkpoint's weights (fine-tuning) -------------------
attograd_cli_test(cli.train.init_from EXIT 0
                  STDOUT "^initialized from small_run/model.safetensors\nattograd train: .*eval  iter     0  train [0-9.]+  val [0-9.]+.*done: 10 iters"
                  COMMAND ${AG} train --init-from small_run --data ${ATTOGRAD_SMALL_CORPUS} --out finetune_run --overwrite --iters 10
                          --lr 3e-4 --warmup 0 --eval-every 10 --eval-iters 2 --batch 4 --sample-tokens 0 --no-progress)
attograd_cli_test(cli.train.init_from_shape_flag EXIT 2
                  STDERR "--layers cannot be combined with --init-from: the model comes from the checkpoint"
                  COMMAND ${AG} train --init-from small_run --layers 2 --data ${ATTOGRAD_SMALL_CORPUS} --out finetune_bad)
attograd_cli_test(cli.train.init_from_with_resume EXIT 2 STDERR "--init-from cannot be combined with --resume"
                  COMMAND ${AG} train --resume small_run --init-from small_run)
# With 0 steps, the new run's checkpoint is the old model, byte for byte.
attograd_cli_test(cli.train.init_from_zero_steps EXIT 0 STDOUT "done: 0 iters"
                  COMMAND ${AG} train --init-from small_run/model.safetensors --data ${ATTOGRAD_SMALL_CORPUS} --out finetune0 --overwrite
                          --iters 0 --eval-iters 2 --batch 4 --sample-tokens 0 --no-progress)
add_test(NAME cli.train.init_from_same_weights
         COMMAND ${CMAKE_COMMAND} -E compare_files small_run/model.safetensors finetune0/model.safetensors
         WORKING_DIRECTORY ${ATTOGRAD_CLI_OUT})
set_tests_properties(cli.train.init_from_same_weights PROPERTIES DEPENDS cli.train.init_from_zero_steps)
set_tests_properties(cli.train.init_from cli.train.init_from_shape_flag cli.train.init_from_with_resume
                     cli.train.init_from_zero_steps cli.train.init_from_same_weights
                     PROPERTIES FIXTURES_REQUIRED small_run)

# --comm-timeout (docs/distributed.md): 0 waits forever; a timeout shorter than 1 s would count
# a rank lost between two heartbeats.
attograd_cli_test(cli.train.comm_timeout_range EXIT 2
                  STDERR "--comm-timeout must be 0 \\(wait forever\\) or at least 1 second\nTry 'attograd train --help'"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out bad_run --comm-timeout 0.5)

# The speedrun's parts from the command line (docs/speedrun.md): --model modern with Muon and the
# warmup-stable-decay schedule trains, samples through its KV cache and evaluates.
attograd_cli_test(cli.train.modern_muon_wsd EXIT 0
                  STDOUT "RoPE, RMSNorm, QK-norm, relu², untied head.*recipe: muon \\(lr 0\\.02 for the hidden matrices, AdamW for the rest\\), wsd schedule.*done: 20 iters"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out modern_run --overwrite --model modern --optimizer muon
                          --schedule wsd --iters 20 --eval-every 10 --log-every 10 --sample-tokens 20 ${TINY_MODEL})
set_tests_properties(cli.train.modern_muon_wsd PROPERTIES FIXTURES_SETUP modern_run)
attograd_cli_test(cli.sample.modern EXIT 0 STDERR "generated 20 characters in .* \\(KV cache\\)"
                  COMMAND ${AG} sample --checkpoint modern_run --prompt "The " --tokens 20 --temperature 0)
attograd_cli_test(cli.eval.modern EXIT 0 STDOUT "loss [0-9]+\\.[0-9]+\nbits per character"
                  COMMAND ${AG} eval --checkpoint modern_run --text-file ${ATTOGRAD_SMALL_CORPUS})
set_tests_properties(cli.sample.modern cli.eval.modern PROPERTIES FIXTURES_REQUIRED modern_run)
# The recipe's warmups from the command line (docs/speedrun.md): Muon's momentum, the sequence
# length and the batch, each said in the header; a start larger than what it rises to is refused.
attograd_cli_test(cli.train.recipe_warmups EXIT 0
                  STDOUT "sequence-length warmup: 8 to 16 over 10 steps\nbatch warmup: 2 to 4 over 10 steps\n.*momentum 0\\.85 rising to 0\\.95 over 10 steps.*done: 20 iters"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out warmups_run --overwrite --model modern --optimizer muon
                          --schedule wsd --iters 20 --eval-every 10 --log-every 10 --sample-tokens 0 --muon-momentum-warmup 10
                          --block-warmup 10 --block-start 8 --batch-warmup 10 --batch-start 2 ${TINY_MODEL})
attograd_cli_test(cli.train.block_start_above_block EXIT 2
                  STDERR "train: --block-start 32 must be at most --block 16 \\(the sequence length --block-warmup rises to\\)\nTry 'attograd train --help'"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out warmups_bad --block-warmup 10 ${TINY_MODEL})
# --time-budget: the step count planned after every step, the first plan said, and the run ends
# at the last plan after one evaluation over the whole validation split.
attograd_cli_test(cli.train.time_budget EXIT 0
                  STDOUT "recipe: adamw, wsd schedule.*time budget 4 s.*time budget 4s: [0-9]+ steps at [0-9.]+ ms a step, planned again after every step.*eval  iter +[0-9]+  train [0-9.]+  val [0-9.]+.*done: [0-9]+ iters"
                  NOT_OUTPUT "eval  iter     0"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out budget_run --overwrite --schedule wsd --time-budget 4
                          --iters 1000000 --eval-every 1000000 --eval-iters all --log-every 100000 --sample-tokens 0
                          --layers 1 --heads 2 --embd 16 --block 16 --batch 4 --no-progress)
# A setting of a choice the run did not make (--cooldown is WSD's) means nothing: refused by name.
attograd_cli_test(cli.train.a_setting_of_another_choice EXIT 2
                  STDERR "train: --cooldown is a setting of --schedule wsd \\(this run's is cosine\\)"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out budget_bad --time-budget 4 --cooldown 0.5)
attograd_cli_test(cli.train.eval_iters_all_or_count EXIT 2 STDERR "--eval-iters must be a positive count or all, got 'some'"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out eval_bad --eval-iters some)
attograd_cli_test(cli.train.unknown_optimizer EXIT 2 STDERR "--optimizer must be adamw or muon, got 'lion'"
                  COMMAND ${AG} train --data ${ATTOGRAD_SMALL_CORPUS} --out opt_bad --optimizer lion)
