// The subcommands of the `attograd` program. main.cpp dispatches `attograd <command> ...` to
// one of these with argv[0] = the command's name, so each can hand (argc, argv) straight to
// cxxopts.
//
// Conventions shared by every command (main.cpp enforces the last two):
//   * `--help` prints the command's options to stdout and returns 0;
//   * a bad command line throws UsageError (or a cxxopts parsing error): exit status 2, with a
//     hint to run --help;
//   * any other failure throws: main prints "attograd <command>: error: <message>" to stderr
//     and exits 1. A command may also return 1 itself after printing why (a failed check);
//   * a command stopped by Ctrl-C (SIGINT) or SIGTERM returns kInterruptedStatus (130).
#pragma once
#include <stdexcept>

#include <cxxopts.hpp>

namespace ag::cli {

// The exit status of a command stopped by SIGINT or SIGTERM (128 + SIGINT, as a shell reports
// a process killed by Ctrl-C), also when it stopped cleanly (training writes a checkpoint first).
constexpr int kInterruptedStatus = 130;

// An option value that parses but makes no sense (unknown mask name, E not divisible by H...).
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// options.parse(argc, argv), plus a UsageError for leftover positional arguments, which
// cxxopts would otherwise ignore without a word ("attograd attention case.safetensors").
cxxopts::ParseResult parse_command_line(cxxopts::Options& options, int argc, char** argv);

// When the command line asked for --help: prints the options (then `extra`) to stdout and
// returns true, and the command returns 0.
bool print_help_if_asked(cxxopts::Options& options, const cxxopts::ParseResult& args, const char* extra = "\n");

int cmd_attention(int argc, char** argv);  // cli/cmd_attention.cpp
int cmd_gradcheck(int argc, char** argv);  // cli/cmd_gradcheck.cpp
int cmd_train(int argc, char** argv);      // cli/cmd_train.cpp
int cmd_sample(int argc, char** argv);     // cli/cmd_sample.cpp
int cmd_eval(int argc, char** argv);       // cli/cmd_eval.cpp
int cmd_graph(int argc, char** argv);      // cli/cmd_graph.cpp
int cmd_attend(int argc, char** argv);     // cli/cmd_attend.cpp
int cmd_plot(int argc, char** argv);       // cli/cmd_plot.cpp
int cmd_bench(int argc, char** argv);      // cli/cmd_bench.cpp
int cmd_explain(int argc, char** argv);    // cli/cmd_explain.cpp
int cmd_explore(int argc, char** argv);    // cli/cmd_explore.cpp

}  // namespace ag::cli
