// `attograd train --data FILE --out DIR [flags]`: trains a TransformerLM; defaults are
// nanoGPT's shakespeare_char CPU configuration.
#include <iostream>

#include "cli/commands.h"
#include "train/distributed.h"
#include "train/trainer.h"

namespace ag::cli {

namespace {
int train_command(int argc, char** argv) {
  cxxopts::Options options("attograd train", "Train a character-level GPT on a text file (nanoGPT's CPU defaults).");
  train::TrainConfig d;  // defaults
  // clang-format off
  options.add_options()
    ("data", "training text (UTF-8); first 90% train, last 10% validation", cxxopts::value<std::string>())
    ("out", "run folder: model.safetensors, metrics.jsonl", cxxopts::value<std::string>())
    ("layers", "transformer blocks", cxxopts::value<int64_t>()->default_value(std::to_string(d.model.n_layer)))
    ("heads", "attention heads", cxxopts::value<int64_t>()->default_value(std::to_string(d.model.n_head)))
    ("embd", "embedding width", cxxopts::value<int64_t>()->default_value(std::to_string(d.model.n_embd)))
    ("block", "context length", cxxopts::value<int64_t>()->default_value(std::to_string(d.model.block_size)))
    ("batch", "sequences per step (global: under mpirun -np N each rank takes batch/N of them)", cxxopts::value<int64_t>()->default_value(std::to_string(d.batch_size)))
    ("grad-accum", "micro-batches per step, each of batch/(N*K) rows; only the last one communicates (allowed with --resume)", cxxopts::value<int64_t>()->default_value("1"))
    ("iters", "optimizer steps", cxxopts::value<int64_t>()->default_value(std::to_string(d.iters)))
    ("lr", "peak learning rate", cxxopts::value<double>()->default_value("1e-3"))
    ("min-lr", "final learning rate of the cosine decay", cxxopts::value<double>()->default_value("1e-4"))
    ("warmup", "linear warmup steps", cxxopts::value<int64_t>()->default_value(std::to_string(d.warmup)))
    ("weight-decay", "AdamW decoupled weight decay (matrices only)", cxxopts::value<double>()->default_value("0.1"))
    ("beta1", "AdamW beta1", cxxopts::value<double>()->default_value("0.9"))
    ("beta2", "AdamW beta2", cxxopts::value<double>()->default_value("0.99"))
    ("grad-clip", "clip the global gradient norm to this (0: off)", cxxopts::value<double>()->default_value("1.0"))
    ("dropout", "dropout probability", cxxopts::value<double>()->default_value("0.0"))
    ("eval-every", "evaluate and checkpoint every N steps", cxxopts::value<int64_t>()->default_value(std::to_string(d.eval_every)))
    ("eval-iters", "batches per split in each evaluation", cxxopts::value<int64_t>()->default_value(std::to_string(d.eval_iters)))
    ("log-every", "log a line every N steps", cxxopts::value<int64_t>()->default_value(std::to_string(d.log_every)))
    ("seed", "random seed", cxxopts::value<uint64_t>()->default_value(std::to_string(d.seed)))
    ("threads", "threads (0: one per core); OpenBLAS runs single-threaded inside them", cxxopts::value<int>()->default_value("0"))
    ("sample-tokens", "characters to sample at the end (0: none)", cxxopts::value<int64_t>()->default_value(std::to_string(d.sample_tokens)))
    ("skip-nonfinite", "skip (and count) updates whose loss or gradients are NaN/Inf instead of stopping")
    ("grad-report", "at each evaluation, write DIR/grad_report_iter<N>.txt (norms of every parameter and its gradient in the step before) and print a summary line")
    ("resume", "continue the run in this folder exactly (from its train_state.safetensors)", cxxopts::value<std::string>())
    ("no-progress", "plain log lines even on a terminal")
    ("h,help", "show this help");
  // clang-format on
  const auto r = parse_command_line(options, argc, argv);
  if (print_help_if_asked(options, r)) return 0;
  if (r.count("resume")) {
    // The saved configuration is the run: only where to find the corpus and how to run may change.
    for (const char* flag : {"out", "layers", "heads", "embd", "block", "batch", "iters", "lr", "min-lr", "warmup",
                             "weight-decay", "beta1", "beta2", "grad-clip", "dropout", "eval-every", "eval-iters",
                             "log-every", "seed", "sample-tokens", "skip-nonfinite", "grad-report"})
      if (r.count(flag))
        throw UsageError(std::string("--") + flag + " cannot be combined with --resume: the run continues with its saved configuration");
    train::resume_lm(r["resume"].as<std::string>(), r.count("data") ? r["data"].as<std::string>() : "",
                     r["threads"].as<int>(), !r.count("no-progress"), std::cout,
                     r.count("grad-accum") ? r["grad-accum"].as<int64_t>() : 0);
    return 0;
  }
  if (!r.count("data")) throw UsageError("--data FILE is required");
  if (!r.count("out")) throw UsageError("--out DIR is required");
  train::TrainConfig c;
  c.data_path = r["data"].as<std::string>();
  c.out_dir = r["out"].as<std::string>();
  c.model.n_layer = r["layers"].as<int64_t>();
  c.model.n_head = r["heads"].as<int64_t>();
  c.model.n_embd = r["embd"].as<int64_t>();
  c.model.block_size = r["block"].as<int64_t>();
  c.model.dropout = r["dropout"].as<double>();
  c.batch_size = r["batch"].as<int64_t>();
  c.grad_accum = r["grad-accum"].as<int64_t>();
  c.iters = r["iters"].as<int64_t>();
  c.lr = r["lr"].as<double>();
  c.min_lr = r["min-lr"].as<double>();
  c.warmup = r["warmup"].as<int64_t>();
  c.weight_decay = r["weight-decay"].as<double>();
  c.beta1 = r["beta1"].as<double>();
  c.beta2 = r["beta2"].as<double>();
  c.grad_clip = r["grad-clip"].as<double>();
  c.eval_every = r["eval-every"].as<int64_t>();
  c.eval_iters = r["eval-iters"].as<int64_t>();
  c.log_every = r["log-every"].as<int64_t>();
  c.seed = r["seed"].as<uint64_t>();
  c.threads = r["threads"].as<int>();
  c.sample_tokens = r["sample-tokens"].as<int64_t>();
  c.progress_bar = !r.count("no-progress");
  c.skip_nonfinite = r.count("skip-nonfinite") > 0;
  c.grad_report = r.count("grad-report") > 0;
  train::train_lm(c, std::cout);
  return 0;
}
}  // namespace

// Under mpirun, an error on one rank ends the whole job (naming the rank) instead of leaving
// the others waiting in a collective.
int cmd_train(int argc, char** argv) {
  return train::run_or_abort_job("train", [&] { return train_command(argc, argv); });
}

}  // namespace ag::cli
