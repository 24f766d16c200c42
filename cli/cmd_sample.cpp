// `attograd sample --checkpoint PATH [--prompt TEXT] [--tokens N] [--temperature T] [--top-k K] [--seed S]`
#include <chrono>
#include <cstdio>
#include <iostream>

#include "cli/commands.h"
#include "train/checkpoint.h"

namespace ag::cli {

int cmd_sample(int argc, char** argv) {
  cxxopts::Options options("attograd sample", "Generate text from a trained model, with a KV cache.");
  // clang-format off
  options.add_options()
    ("checkpoint", "run folder or its model.safetensors", cxxopts::value<std::string>())
    ("prompt", "text to continue (default: a newline)", cxxopts::value<std::string>()->default_value("\n"))
    ("tokens", "characters to generate", cxxopts::value<int64_t>()->default_value("500"))
    ("temperature", "softmax temperature; 0 is greedy", cxxopts::value<double>()->default_value("0.8"))
    ("top-k", "sample among the k most likely characters (0: all)", cxxopts::value<int64_t>()->default_value("0"))
    ("seed", "random seed", cxxopts::value<uint64_t>()->default_value("1337"))
    ("no-cache", "recompute the whole context for every character instead of using the GPT's KV cache (slow; for comparison)")
    ("h,help", "show this help");
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
  const auto loaded = train::load_model(r["checkpoint"].as<std::string>());
  const std::string prompt = r["prompt"].as<std::string>();
  if (prompt.empty()) throw UsageError("--prompt must not be empty");
  const auto ids = loaded.tokenizer.encode(std::string_view(prompt), "prompt");
  Generator gen(r["seed"].as<uint64_t>());
  const auto t0 = std::chrono::steady_clock::now();
  const auto out = loaded.model->generate(ids, {n, temperature, top_k, !r.count("no-cache")}, gen);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << loaded.tokenizer.decode(out) << std::endl;
  std::fprintf(stderr, "generated %ld characters in %.3f s: %.0f tokens/s (%s)\n", static_cast<long>(n), s,
               s > 0 ? static_cast<double>(n) / s : 0.0, r.count("no-cache")                ? "no cache"
               : loaded.model->attention() ? "KV cache"
                                           : "a fixed context, no cache needed");
  return 0;
}

}  // namespace ag::cli
