// `attograd sample --checkpoint PATH [--prompt TEXT | --prompt-file FILE] [--num-samples K] [--tokens N]
//                  [--temperature T] [--top-k K] [--seed S]`
#include <chrono>
#include <cstdio>
#include <iostream>
#include <stdexcept>

#include "cli/commands.h"
#include "cli/precision_flags.h"
#include "data/text_file.h"
#include "train/run_folder/checkpoint.h"
#include "train/interrupt.h"

namespace ag::cli {

int cmd_sample(int argc, char** argv) {
  cxxopts::Options options("attograd sample", "Generate text from a trained model, with a KV cache.");
  // clang-format off
  options.add_options()
    ("checkpoint", "run folder or its model.safetensors", cxxopts::value<std::string>())
    ("prompt", "text to continue (default: a newline)", cxxopts::value<std::string>())
    ("prompt-file", "continue the text of FILE (nanoGPT's --start=FILE:)", cxxopts::value<std::string>())
    ("num-samples", "independent samples, one after another from the same seeded generator, separated by a line of dashes",
     cxxopts::value<int64_t>()->default_value("1"))
    ("tokens", "characters to generate", cxxopts::value<int64_t>()->default_value("500"))
    ("temperature", "softmax temperature; 0 is greedy, as is one so small that logits / T overflow (1e-320)", cxxopts::value<double>()->default_value("0.8"))
    ("top-k", "sample among the k most likely characters (0: all)", cxxopts::value<int64_t>()->default_value("0"))
    ("seed", "random seed", cxxopts::value<uint64_t>()->default_value("1337"))
    ("no-cache", "recompute the whole context for every character instead of using the GPT's KV cache (slow; for comparison)")
    ("h,help", "show this help");
  add_precision_flags(options);
  // clang-format on
  const auto r = parse_command_line(options, argc, argv);
  if (print_help_if_asked(options, r)) return 0;
  if (!r.count("checkpoint")) throw UsageError("--checkpoint PATH is required");
  const int64_t n = r["tokens"].as<int64_t>();
  const double temperature = r["temperature"].as<double>();
  const int64_t top_k = r["top-k"].as<int64_t>();
  if (n < 0) throw UsageError("--tokens must be ≥ 0");
  if (!(temperature >= 0)) throw UsageError("--temperature must be ≥ 0");
  if (top_k < 0) throw UsageError("--top-k must be ≥ 0");
  const int64_t num_samples = r["num-samples"].as<int64_t>();
  if (num_samples < 1) throw UsageError("--num-samples must be ≥ 1");
  if (r.count("prompt") && r.count("prompt-file")) throw UsageError("give --prompt or --prompt-file, not both");
  const PrecisionFlags precision = read_precision_flags(r);
  const auto loaded = train::load_model(r["checkpoint"].as<std::string>());
  // No cxxopts default: it would print the newline raw in --help, after the description's.
  std::string prompt = "\n";
  std::string prompt_source = "prompt";
  if (r.count("prompt")) {
    prompt = r["prompt"].as<std::string>();
    if (prompt.empty()) throw UsageError("--prompt must not be empty");
  } else if (r.count("prompt-file")) {
    prompt_source = r["prompt-file"].as<std::string>();
    prompt = data::read_text_file(prompt_source, prompt_source);  // a regular file of bounded size only
    if (prompt.empty()) throw std::runtime_error(prompt_source + ": the prompt file is empty");
  }
  const auto ids = loaded.tokenizer.encode(std::string_view(prompt), prompt_source);
  Generator gen(r["seed"].as<uint64_t>());
  // The text is streamed as it is generated, so --tokens 1000000000 shows progress and Ctrl-C
  // (or SIGTERM) stops it cleanly after the character being written.
  train::InterruptGuard interrupts;
  // (rows 1: a decode step predicts one position per sample; header on stderr, the text alone on stdout)
  const std::string header = apply_precision_flags(precision, *loaded.model, 1, tuning::GemmWork::Forward);
  if (precision.precision != Precision::FP32) std::fputs(header.c_str(), stderr);
  const AutocastGuard autocast(precision.precision);
  int64_t made = 0;
  models::SampleOptions opt{n, temperature, top_k, !r.count("no-cache")};
  opt.on_token = [&](int64_t id) {
    std::cout << loaded.tokenizer.decode({id}) << std::flush;
    ++made;
    return !train::InterruptGuard::requested();
  };
  std::cout << prompt << std::flush;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t k = 0; k < num_samples && !train::InterruptGuard::requested(); ++k) {
    if (k > 0) std::cout << prompt << std::flush;
    loaded.model->generate(ids, opt, gen);
    std::cout << std::endl;
    if (num_samples > 1) std::cout << "---------------" << std::endl;  // nanoGPT's separator
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (train::InterruptGuard::requested()) {
    if (train::InterruptGuard::output_failed() && !train::InterruptGuard::output_closed_pipe())
      throw std::runtime_error("standard output: cannot write (a full disk, or the terminal is gone) after " +
                               std::to_string(made) + " characters");
    std::fprintf(stderr, "interrupted (signal %d) after %ld characters\n", train::InterruptGuard::signal_number(),
                 static_cast<long>(made));
    return kInterruptedStatus;
  }
  std::fprintf(stderr, "generated %ld characters in %.3f s: %.0f tokens/s (%s)\n", static_cast<long>(made), s,
               s > 0 ? static_cast<double>(made) / s : 0.0, r.count("no-cache")                ? "no cache"
               : loaded.model->attention() ? "KV cache"
                                           : "a fixed context, no cache needed");
  return 0;
}

}  // namespace ag::cli
