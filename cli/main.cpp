// `attograd <command> [options]`: looks the command up in a table and runs it. Every error
// ends here as one line on stderr and an exit status (see cli/commands.h and the table in
// docs/checkpoints.md):
//   0 success, 1 failure (bad file, failed check, out of memory, any exception), 2 bad command
//   line, 130 stopped (a signal, or standard output's reader exited).
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "autograd/blas_buffers.h"
#include "autograd/kernels/gemm_provider.h"
#include "autograd/kernels/openblas_core.h"
#include "tuning/tuning.h"
#include "base/memory_limit.h"
#include "autograd/parallel.h"
#include "distributed/comm.h"
#include "cli/commands.h"
#include "cli/suggest.h"
#include "cli/utf8_args.h"
#include "train/interrupt.h"

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
    {"explain", "carry the seed's attention example through the backward pass, step by step", ag::cli::cmd_explain},
    {"explore", "one HTML page to walk a forward and backward pass node by node (graph, values, gradients)",
     ag::cli::cmd_explore},
};

void print_usage(std::FILE* out) {
  std::fprintf(out,
               "usage: attograd <command> [options]\n"
               "       attograd help <command>    (or attograd <command> --help)\n"
               "       attograd --version\n\n"
               "commands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-11s %s\n", c.name, c.summary);
}

const Command* find_command(const char* name) {
  for (const Command& c : kCommands)
    if (std::strcmp(c.name, name) == 0) return &c;
  return nullptr;
}

void print_unknown_command(const char* name) {
  std::vector<std::string> names;
  for (const Command& c : kCommands) names.emplace_back(c.name);
  const std::string guess = ag::cli::closest_name(name, names);
  std::fprintf(stderr, "attograd: error: unknown command '%s'", name);
  if (!guess.empty()) std::fprintf(stderr, "; did you mean '%s'?", guess.c_str());
  std::fprintf(stderr, "\n\n");
  print_usage(stderr);
}

// The text between the quotes of a cxxopts message ("Option 'x' does not exist"); cxxopts
// quotes with ' or with the UTF-8 quotes ‘ ’.
std::string quoted_part(const std::string& message) {
  const auto open = message.find_first_of("'\xe2");
  if (open == std::string::npos) return "";
  const std::size_t start = message[open] == '\'' ? open + 1 : open + 3;
  const auto close = message[open] == '\'' ? message.rfind('\'') : message.rfind("\xe2\x80\x99");
  return close == std::string::npos || close < start ? "" : message.substr(start, close - start);
}

std::vector<std::string> long_option_names(const cxxopts::Options& options) {
  std::vector<std::string> names;
  for (const std::string& group : options.groups())
    for (const cxxopts::HelpOptionDetails& o : options.group_help(group).options)
      for (const std::string& n : o.l)
        if (n.size() > 1) names.push_back(n);
  return names;
}

// cxxopts says "Argument 'abc' failed to parse" without naming the flag: find it on the
// command line, as "--flag abc" or "--flag=abc".
std::string flag_given_value(int argc, char** argv, const std::string& value) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto eq = a.find('=');
    if (a.rfind("-", 0) == 0 && eq != std::string::npos && a.substr(eq + 1) == value) return a.substr(0, eq);
    if (a == value && i > 1 && argv[i - 1][0] == '-') return argv[i - 1];
  }
  return "";
}

// Out of memory, wherever it happens (a worker thread included): one line and exit 1 at once.
// A normal exit could hang: OpenBLAS or a thread may be stuck on the memory that ran out.
[[noreturn]] void out_of_memory(const char* command) {
  const ag::MemoryLimit limit = ag::memory_limit();
  std::fflush(stdout);
  std::fprintf(stderr, "attograd %s: error: out of memory (std::bad_alloc): this process may use %s (%s)%s\n", command,
               ag::human_bytes(limit.bytes).c_str(), limit.where.c_str(),
               limit.where.find("ulimit") != std::string::npos ? "; raise ulimit -v or ask for less" : "; ask for less");
  std::fflush(stderr);
  std::_Exit(1);
}

// Every way out of main ends here: what was written is flushed, then the process ends at once.
// Not exit(): it runs OpenBLAS's library destructor, which joins OpenBLAS's worker threads, and
// a worker that started under too small an address space (ulimit -v) retries the mapping of its
// work buffer forever, so the process that had printed its error never ended. Nothing of
// attograd's needs a static destructor: files are written and closed before a command returns.
[[noreturn]] void end_process(int status) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ag::distributed::Comm::finish_world();  // MPI_Finalize, as world()'s destructor would have done
  std::_Exit(status);
}

const char* g_command = "";

// OpenBLAS's work buffers are reserved before any BLAS call (autograd/blas_buffers.h): under
// too small an address space it would otherwise retry their mapping forever. For every command
// but plot (no BLAS) and train (whose --threads is known later: train/memory_check.h does it),
// and not for --help.
void reserve_blas_buffers(const char* command, int argc, char** argv) {
  if (std::strcmp(command, "train") == 0 || std::strcmp(command, "plot") == 0) return;
  for (int i = 2; i < argc; ++i)
    if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) return;
  ag::reserve_blas_buffers_for_threads();
}

// An exception that escapes a thread ends here (std::terminate): a bad_alloc still becomes the
// one-line error; anything else is a bug, reported before the abort.
void on_terminate() {
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::bad_alloc&) {
      out_of_memory(g_command);
    } catch (const std::exception& x) {
      std::fprintf(stderr, "attograd %s: error: %s (in a thread)\n", g_command, x.what());
    } catch (...) {
    }
  }
  std::abort();
}

// Standard output is checked once more at the end: a command whose output was lost must not
// exit 0. A closed pipe (`attograd eval ... | head -1`) stops the output as a signal would
// (130); any other failure (a full disk) is an error (1).
int checked_output(const char* command, int status) {
  const bool cout_ok = static_cast<bool>(std::cout.flush());
  errno = 0;
  const bool stdio_ok = std::fflush(stdout) == 0 && !std::ferror(stdout);
  const int err = errno;
  if ((cout_ok && stdio_ok) || status != 0) return status;  // a failing status already said why
  if (ag::train::InterruptGuard::output_closed_pipe() || err == EPIPE) {
    std::fprintf(stderr, "attograd %s: standard output is a closed pipe (its reader exited); output stopped\n", command);
    return ag::cli::kInterruptedStatus;
  }
  std::fprintf(stderr, "attograd %s: error: cannot write standard output: %s\n", command,
               err ? std::strerror(err) : "a write failed (a full disk?)");
  return 1;
}

}  // namespace

namespace ag::cli {

cxxopts::ParseResult parse_command_line(cxxopts::Options& options, int argc, char** argv) {
  cxxopts::ParseResult result;
  try {
    result = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::no_such_option& e) {
    const std::string typed = quoted_part(e.what());
    const std::string guess = closest_name(typed, long_option_names(options));
    throw UsageError("unknown option '" + typed + "'" + (guess.empty() ? "" : "; did you mean '--" + guess + "'?"));
  } catch (const cxxopts::exceptions::incorrect_argument_type& e) {
    const std::string value = quoted_part(e.what());
    const std::string flag = flag_given_value(argc, argv, value);
    throw UsageError((flag.empty() ? std::string("an option") : flag) + ": cannot parse '" + value + "'");
  }
  if (!result.unmatched().empty()) throw UsageError("unexpected argument '" + result.unmatched().front() + "'");
  return result;
}

bool print_help_if_asked(cxxopts::Options& options, const cxxopts::ParseResult& args, const char* extra) {
  if (!args.count("help")) return false;
  std::cout << options.help() << extra << std::flush;
  return true;
}

}  // namespace ag::cli

namespace {

int run_main(int argc, char** argv) {
  ag::tuning::use_fast_openblas_core();  // before any BLAS call (tuning/openblas_kernels.h)
  ag::train::install_process_signal_handlers();  // SIGPIPE and SIGXFSZ become failed writes (train/interrupt.h)
  std::set_terminate(on_terminate);
  try {
    ag::parallel::init_threads();  // one thread per core, OpenBLAS single-threaded inside them
  } catch (const std::bad_alloc&) {
    out_of_memory("");
  }
  if (argc < 2) {  // no command: the caller made a mistake, so stderr and status 2
    print_usage(stderr);
    return 2;
  }
  const std::string first = argv[1];
  if (first == "--version") {
    std::printf("attograd %s (commit %s), OpenBLAS core %s\n", ATTOGRAD_VERSION, ATTOGRAD_GIT_COMMIT,
                ag::kernels::openblas_core_name());
    // The GEMM providers of --gemm, and how --precision bf16 would run on each here.
    for (const auto p : ag::kernels::kGemmProviders) {
      std::string why;
      if (!ag::kernels::gemm_provider_available(p, &why)) {
        std::printf("gemm %s: %s\n", ag::kernels::gemm_provider_name(p), why.c_str());
        continue;
      }
      std::printf("gemm %s: %s; %s\n", ag::kernels::gemm_provider_name(p), ag::kernels::gemm_provider_description(p).c_str(),
                  ag::kernels::bf16_path_description(p).c_str());
    }
    return 0;
  }
  if (first == "help" && argc >= 3) {  // `attograd help CMD` is `attograd CMD --help`
    const Command* cmd = find_command(argv[2]);
    if (!cmd) {
      print_unknown_command(argv[2]);
      return 2;
    }
    char help_flag[] = "--help";
    char* help_argv[] = {argv[2], help_flag, nullptr};
    return cmd->run(2, help_argv);
  }
  if (first == "--help" || first == "-h" || first == "help") {
    print_usage(stdout);
    return 0;
  }
  const Command* cmd = find_command(argv[1]);
  if (!cmd) {
    print_unknown_command(argv[1]);
    return 2;
  }
  // From here on, argv[0] is the command's name, as cxxopts expects of a program.
  g_command = cmd->name;
  // Before any work: a name or text that is not UTF-8 could not be written into the run's
  // JSON, TOML, TensorBoard or HTML files at the end (cli/utf8_args.h).
  if (const std::string bad = ag::cli::non_utf8_argument(argc - 1, argv + 1); !bad.empty()) {
    std::fprintf(stderr, "attograd %s: error: %s\nTry 'attograd %s --help'.\n", cmd->name, bad.c_str(), cmd->name);
    return 2;
  }
  try {
    reserve_blas_buffers(cmd->name, argc, argv);
    return checked_output(cmd->name, cmd->run(argc - 1, argv + 1));
  } catch (const std::bad_alloc&) {
    out_of_memory(cmd->name);
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

}  // namespace

int main(int argc, char** argv) { end_process(run_main(argc, argv)); }
