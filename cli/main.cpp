// `attograd <command> [options]`: looks the command up in a table and runs it. Every error
// ends here as one line on stderr and an exit status (see cli/commands.h):
//   0 success, 1 failure (bad file, failed check, any exception), 2 bad command line.
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "autograd/parallel.h"
#include "cli/blas_core.h"
#include "cli/commands.h"

namespace {

struct Command {
  const char* name;
  const char* summary;  // one line, shown by `attograd --help`
  int (*run)(int argc, char** argv);
};

// Add a row here to add a command.
constexpr Command kCommands[] = {
    {"train", "train a character language model (--model gpt or mlp) on a text file (nanoGPT's CPU defaults)",
     ag::cli::cmd_train},
    {"sample", "generate text from a checkpoint, with a KV cache", ag::cli::cmd_sample},
    {"eval", "mean next-character cross-entropy of a text file under a checkpoint", ag::cli::cmd_eval},
    {"bench", "measure training, forward, sampling and attention throughput", ag::cli::cmd_bench},
    {"attention", "run MultiheadAttention forward and backward on a safetensors CASE, write the RESULT",
     ag::cli::cmd_attention},
    {"gradcheck", "compare analytic and numeric float64 gradients of attention or of single ops",
     ag::cli::cmd_gradcheck},
    {"graph", "write the autograd graph of a forward pass, with gradient norms, as Graphviz DOT (and SVG/PNG)",
     ag::cli::cmd_graph},
    {"attend", "write a checkpoint's attention weights on a prompt as safetensors and PNG heatmaps",
     ag::cli::cmd_attend},
    {"plot", "plot a run's train/val loss and learning rate against the step (PNG)", ag::cli::cmd_plot},
};

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "usage: attograd <command> [options]\n"
               "       attograd <command> --help\n\n"
               "commands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-11s %s\n", c.name, c.summary);
}

const Command* find_command(const char* name) {
  for (const Command& c : kCommands)
    if (std::strcmp(c.name, name) == 0) return &c;
  return nullptr;
}

}  // namespace

namespace ag::cli {

cxxopts::ParseResult parse_command_line(cxxopts::Options& options, int argc, char** argv) {
  cxxopts::ParseResult result = options.parse(argc, argv);
  if (!result.unmatched().empty()) throw UsageError("unexpected argument '" + result.unmatched().front() + "'");
  return result;
}

bool print_help_if_asked(cxxopts::Options& options, const cxxopts::ParseResult& args, const char* extra) {
  if (!args.count("help")) return false;
  std::cout << options.help() << extra << std::flush;
  return true;
}

}  // namespace ag::cli

int main(int argc, char** argv) {
  ag::cli::ensure_fast_openblas_core(argv);  // may re-execute this program once (see blas_core.h)
  ag::parallel::init_threads();  // one thread per core, OpenBLAS single-threaded inside them
  if (argc < 2) {  // no command: the caller made a mistake, so stderr and status 2
    print_usage(stderr);
    return 2;
  }
  const std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    print_usage(stdout);
    return 0;
  }
  const Command* cmd = find_command(argv[1]);
  if (!cmd) {
    std::fprintf(stderr, "attograd: error: unknown command '%s'\n\n", argv[1]);
    print_usage(stderr);
    return 2;
  }
  // From here on, argv[0] is the command's name, as cxxopts expects of a program.
  try {
    return cmd->run(argc - 1, argv + 1);
  } catch (const cxxopts::exceptions::parsing& e) {
    std::fprintf(stderr, "attograd %s: error: %s\nTry 'attograd %s --help'.\n", cmd->name, e.what(), cmd->name);
    return 2;
  } catch (const ag::cli::UsageError& e) {
    std::fprintf(stderr, "attograd %s: error: %s\nTry 'attograd %s --help'.\n", cmd->name, e.what(), cmd->name);
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attograd %s: error: %s\n", cmd->name, e.what());
    return 1;
  } catch (...) {
    std::fprintf(stderr, "attograd %s: error: unknown exception\n", cmd->name);
    return 1;
  }
}
