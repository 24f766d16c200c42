// `attograd explain attention [--causal] [--mask M] [--q Q --k K --v V --g G] [--html FILE]`:
// the README's seed example (or the user's small matrices) carried through attention's
// backward pass step by step, each gradient by hand, from the engine and by finite differences
// (viz/attention_walk.h). Exit 1 when a step disagrees (a failed check).
#include <cstdio>
#include <iostream>

#include "base/atomic_file.h"
#include "base/short_quote.h"
#include "cli/commands.h"
#include "cli/matrix_flag.h"
#include "viz/attention_walk.h"

namespace ag::cli {

int cmd_explain(int argc, char** argv) {
  cxxopts::Options options("attograd explain",
                           "Carry an example through the backward pass step by step: each gradient by hand, "
                           "from attograd's engine and by finite differences.");
  options.custom_help("attention [--q Q --k K --v V --g G] [--causal] [--mask M] [--html FILE]");
  // clang-format off
  options.add_options()
    ("topic", "what to explain: attention", cxxopts::value<std::string>())
    ("q", "queries Q (L, d) as JSON, e.g. [[1,0],[0,1]] (default: the README's seed example)", cxxopts::value<std::string>())
    ("k", "keys K (S, d) (default: the seed's [[1,0],[1,1],[0,1]])", cxxopts::value<std::string>())
    ("v", "values V (S, dv) (default: the seed's [[10,0],[0,5],[0,1]])", cxxopts::value<std::string>())
    ("g", "G (L, dv): the loss is L = sum(context * G) (default: the identity, or ones when not square)", cxxopts::value<std::string>())
    ("causal", "hide key j from query i when j > i")
    ("mask", "(L, S) of 0/1, 1 = the query may not attend to that key, e.g. [[0,0,1],[0,0,0]]", cxxopts::value<std::string>())
    ("html", "also write the walk as one self-contained HTML page (MathML, no network)", cxxopts::value<std::string>())
    ("h,help", "show this help");
  // clang-format on
  options.parse_positional({"topic"});
  options.positional_help("");
  MatrixFlagArgs args(argc, argv);  // --q, --k, --v, --g
  const auto r = parse_command_line(options, args.argc(), args.argv());
  if (print_help_if_asked(options, r)) return 0;
  if (!r.count("topic")) throw UsageError("say what to explain: attograd explain attention");
  if (r["topic"].as<std::string>() != "attention")
    throw UsageError("unknown topic '" + short_quote(r["topic"].as<std::string>()) + "'; the one topic is 'attention'");

  bool custom = false;
  const viz::AttentionWalkInput in = attention_input_from_flags(r, &custom);

  const viz::AttentionWalk walk = viz::walk_attention_backward(in);
  std::cout << "attograd explain attention: " << (custom ? "your matrices" : "the README's seed example") << ", "
            << viz::attention_walk_text(walk);
  if (r.count("html")) {
    const std::string path = r["html"].as<std::string>();
    write_file_atomically(path, viz::attention_walk_html(walk));
    std::cout << "wrote " << path << "\n";
  }
  if (!walk.agrees()) {
    std::cout << "check FAILED: a gradient differs from the engine's by more than " << viz::kEngineTolerance
              << " or from finite differences by more than " << viz::kFiniteDiffTolerance << " (times max(1, |value|))\n";
    return 1;
  }
  return 0;
}

}  // namespace ag::cli
