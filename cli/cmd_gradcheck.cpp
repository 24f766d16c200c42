// `attograd gradcheck attention|ops`: float64 gradient checks printed as a table, one row per
// checked tensor, so that anyone can see how close the analytic gradients are to central
// differences for a configuration of their choosing, at order 1 (gradients) or 2 (gradients of
// gradients). Exit status 1 when any row fails.
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "autograd/gradcheck.h"
#include "autograd/kernels/openblas_core.h"
#include "cli/harness/gradcheck_cases.h"
#include "autograd/ops.h"
#include "cli/commands.h"
#include "cli/precision_flags.h"
#include "nn/attention.h"
#include "nn/init.h"

namespace ag::cli {

namespace {

// gradcheck stores the analytic Jacobian (outputs x inputs doubles) and runs one backward per
// output and two forwards per input element: refuse sizes that would take minutes and
// gigabytes rather than start them. 1e7 entries is 80 MB and a few seconds.
constexpr double kMaxJacobianEntries = 1e7;

std::string fmt_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

GradcheckOptions tolerances(const cxxopts::ParseResult& args) {
  GradcheckOptions o;
  o.eps = args["eps"].as<double>();
  o.atol = args["atol"].as<double>();
  o.rtol = args["rtol"].as<double>();
  if (!(o.eps > 0 && std::isfinite(o.eps))) throw UsageError("--eps must be a positive number");
  if (!(o.atol >= 0 && std::isfinite(o.atol)) || !(o.rtol >= 0 && std::isfinite(o.rtol)))
    throw UsageError("--atol and --rtol must be non-negative numbers");
  return o;
}

// The checks an order runs: order 1 compares the gradients with central differences of f;
// order 2 compares the gradients of the gradients (double backward through the recorded
// backward pass) with central differences of the gradients, as torch.autograd.gradgradcheck.
struct Order {
  int n = 1;
  GradcheckReport run(const GradcheckFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& tol,
                      const std::vector<std::string>& names) const {
    return n == 1 ? gradcheck(f, inputs, tol, names) : gradgradcheck(f, inputs, tol, names);
  }
};

Order order_of(const cxxopts::ParseResult& args) {
  const int n = args["order"].as<int>();
  if (n != 1 && n != 2) throw UsageError("--order must be 1 or 2, got " + std::to_string(n));
  return {n};
}

void print_order(const Order& o) {
  if (o.n == 2)
    std::printf("order 2: the first-order gradients g(x, v) = grad(f(x), x, v, create_graph) are checked against central "
                "differences, as functions of the inputs x and of the upstream gradient v (last row of each check)\n");
}

void print_criterion(const GradcheckOptions& o) {
  // The last digits of the errors depend on the BLAS kernels (summation order), so say which.
  std::printf("float64, central differences (f(x+eps) - f(x-eps)) / 2eps with eps %g; OpenBLAS kernels %s\n", o.eps,
              kernels::openblas_core_name());
  std::printf("an entry passes when |analytic - numeric| <= atol + rtol*|numeric|, atol %g, rtol %g\n\n", o.atol,
              o.rtol);
}

// ---- attention ------------------------------------------------------------------------------

struct AttentionConfig {
  int64_t heads, embed, len, src_len, batch;
  std::string mask;  // none | causal | padding | both
  bool batch_first, per_head, pad_all;
  uint64_t seed;
};

AttentionConfig attention_config(const cxxopts::ParseResult& args) {
  AttentionConfig c;
  c.heads = args["heads"].as<int64_t>();
  c.embed = args["embed"].as<int64_t>();
  c.len = args["len"].as<int64_t>();
  c.src_len = args.count("src-len") ? args["src-len"].as<int64_t>() : c.len;
  c.batch = args["batch"].as<int64_t>();
  c.mask = args["mask"].as<std::string>();
  c.batch_first = args.count("batch-first") != 0;
  c.per_head = args.count("per-head") != 0;
  c.pad_all = args.count("pad-all") != 0;
  c.seed = args["seed"].as<uint64_t>();
  for (auto [name, v] : {std::pair{"--heads", c.heads}, {"--embed", c.embed}, {"--len", c.len},
                         {"--src-len", c.src_len}, {"--batch", c.batch}})
    if (v <= 0) throw UsageError(std::string(name) + " must be positive, got " + std::to_string(v));
  if (c.embed % c.heads != 0)
    throw UsageError("--embed " + std::to_string(c.embed) + " must be divisible by --heads " + std::to_string(c.heads));
  if (c.mask != "none" && c.mask != "causal" && c.mask != "padding" && c.mask != "both")
    throw UsageError("--mask must be none, causal, padding or both, got '" + c.mask + "'");
  if (c.pad_all && c.mask != "padding" && c.mask != "both")
    throw UsageError("--pad-all needs --mask padding or --mask both");
  return c;
}

int gradcheck_attention(const AttentionConfig& c, const GradcheckOptions& tol, const Order& order) {
  const int64_t E = c.embed, H = c.heads, L = c.len, S = c.src_len, N = c.batch;
  const int64_t n_out = L * N * E + (c.per_head ? N * H * L * S : N * L * S);
  const int64_t n_in = (L + 2 * S) * N * E + 4 * E * E + 4 * E;
  // Order 2 checks the n_in first-order gradients against the n_in inputs and the n_out upstream values.
  const int64_t rows = order.n == 1 ? n_out : n_in, cols = order.n == 1 ? n_in : n_in + n_out;
  if (static_cast<double>(rows) * static_cast<double>(cols) > kMaxJacobianEntries)
    throw UsageError("the Jacobian would have " + std::to_string(rows) + " x " + std::to_string(cols) +
                     " entries (limit " + fmt_g(kMaxJacobianEntries) + "); choose smaller sizes");

  // Everything random comes from one generator, so --seed fixes the whole run.
  Generator gen(c.seed);
  nn::MultiheadAttention mha(E, H, 0.0, /*bias=*/true, c.batch_first, DType::Float64, gen);
  // PyTorch (and attograd) start the biases at zero, which would hide a wrong bias gradient.
  nn::init::uniform_(mha.in_proj_bias, -0.5, 0.5, gen);
  nn::init::uniform_(mha.out_proj->bias, -0.5, 0.5, gen);
  auto input = [&](int64_t T) {
    const Shape s = c.batch_first ? Shape{N, T, E} : Shape{T, N, E};
    return Tensor::randn(s, DType::Float64, gen).requires_grad_();
  };
  // Three distinct tensors: the self-attention fast path (query = key = value) is not taken,
  // and each gets its own row in the table.
  const Tensor q = input(L), k = input(S), v = input(S);

  const bool causal = c.mask == "causal" || c.mask == "both";
  Tensor kpm;
  std::vector<int64_t> hidden(N, 0);  // keys hidden at the end of each batch entry
  if (c.mask == "padding" || c.mask == "both") {
    // Entry n hides its last (n + 1) mod S keys: never key 0, so with or without the causal
    // mask every query keeps a key to attend to (unless --pad-all says otherwise).
    std::vector<bool> m(N * S, false);
    for (int64_t n = 0; n < N; ++n) {
      hidden[n] = (c.pad_all && n == N - 1) ? S : (n + 1) % S;
      for (int64_t j = S - hidden[n]; j < S; ++j) m[n * S + j] = true;
    }
    kpm = Tensor::from_vector(m, {N, S});
  }

  std::printf("gradcheck attention: embed %lld, heads %lld (head_dim %lld), len %lld, src-len %lld, batch %lld, "
              "mask %s, %s, %s weights, seed %llu\n",
              (long long)E, (long long)H, (long long)(E / H), (long long)L, (long long)S, (long long)N, c.mask.c_str(),
              c.batch_first ? "batch_first (N, L, E)" : "sequence-first (L, N, E)", c.per_head ? "per-head" : "averaged",
              (unsigned long long)c.seed);
  if (causal) std::printf("  is_causal: query i ignores the keys j > i\n");
  if (kpm.defined()) {
    std::printf("  key_padding_mask: batch entry n ignores its last k[n] keys, k = [");
    for (size_t n = 0; n < hidden.size(); ++n) std::printf("%s%lld", n ? ", " : "", (long long)hidden[n]);
    std::printf("]%s\n", c.pad_all ? " (the last entry sees no key: its output is out_proj.bias)" : "");
  }
  std::printf("  f = concat(output, attn_weights): %lld values; %lld input values in 7 tensors\n", (long long)n_out,
              (long long)n_in);
  print_order(order);
  print_criterion(tol);

  std::vector<Tensor> inputs = {q, k, v};
  std::vector<std::string> names = {"query", "key", "value"};
  for (const auto& [name, p] : mha.named_parameters()) {
    inputs.push_back(p);
    names.push_back(name);
  }
  // gradcheck perturbs the inputs in place, so f reads q, k, v and the parameters directly.
  auto f = [&](const std::vector<Tensor>&) {
    const auto o = mha.forward(q, k, v, kpm, /*need_weights=*/true, Tensor(), !c.per_head, causal);
    return concat({reshape(o.output, {-1}), reshape(o.weights, {-1})}, 0);
  };
  const GradcheckReport report = order.run(f, inputs, tol, names);
  std::cout << report.table();
  std::printf("\n%s\n", report.passed() ? "PASS" : "FAIL");
  return report.passed() ? 0 : 1;
}

// ---- single ops: the case table of cli/harness/gradcheck_cases.h -------------------------------

int gradcheck_ops(uint64_t seed, const GradcheckOptions& tol, const Order& order) {
  Generator gen(seed);
  const std::vector<OpCase> cases = op_cases();
  std::printf("gradcheck ops: %zu cases covering every op of autograd/ops.h on small random float64 inputs, seed %llu\n",
              cases.size(), (unsigned long long)seed);
  print_order(order);
  print_criterion(tol);
  GradcheckReport all;  // the rows of every case, so that one table shows them all
  std::vector<std::string> not_reentrant;
  for (const OpCase& c : cases) {
    const std::vector<Tensor> inputs = draw_inputs(c, gen);
    std::vector<std::string> names;
    for (const auto& arg : c.args) names.push_back(c.title() + " " + arg.first);
    GradcheckReport r = order.run(c.f, inputs, tol, names);
    if (order.n == 2) r.inputs.back().name = c.title() + " grad_output";  // the upstream gradient's row
    all.inputs.insert(all.inputs.end(), r.inputs.begin(), r.inputs.end());
    if (!r.reentrant) not_reentrant.push_back(c.title());
  }
  all.reentrant = not_reentrant.empty();
  std::cout << all.table();
  for (const auto& name : not_reentrant) std::printf("(the op that was not reentrant: %s)\n", name.c_str());
  std::printf("\n%s\n", all.passed() ? "PASS" : "FAIL");
  return all.passed() ? 0 : 1;
}

}  // namespace

int cmd_gradcheck(int argc, char** argv) {
  const GradcheckOptions defaults;
  cxxopts::Options options("attograd gradcheck",
                           "Checks analytic gradients against central differences in float64 and prints one\n"
                           "row per checked tensor. Exit status 1 when any row fails. --order 2 checks the\n"
                           "gradients of the gradients the same way (torch.autograd.gradgradcheck).\n\n"
                           "  attention  nn::MultiheadAttention: output and attention weights wrt query, key,\n"
                           "             value and the four parameters (random, biases nonzero)\n"
                           "  ops        every op of autograd/ops.h on small random inputs (cli/harness/gradcheck_cases.cpp)\n");
  options.custom_help("attention|ops [options]");
  options.set_width(100);
  options.positional_help("");
  // "what" takes the positional argument; its own group keeps it out of --help.
  options.add_options("positional")("what", "attention or ops", cxxopts::value<std::string>());
  options.add_options()
      ("seed", "seed of every random value", cxxopts::value<uint64_t>()->default_value("0"), "S")
      ("eps", "finite-difference step", cxxopts::value<double>()->default_value(fmt_g(defaults.eps)), "X")
      ("atol", "absolute tolerance", cxxopts::value<double>()->default_value(fmt_g(defaults.atol)), "X")
      ("rtol", "relative tolerance", cxxopts::value<double>()->default_value(fmt_g(defaults.rtol)), "X")
      ("order", "1: gradients; 2: gradients of gradients (double backward)", cxxopts::value<int>()->default_value("1"), "N")
      ("h,help", "print this help");
  options.add_options("attention")
      ("heads", "number of heads H", cxxopts::value<int64_t>()->default_value("2"), "H")
      ("embed", "embedding size E (divisible by H)", cxxopts::value<int64_t>()->default_value("8"), "E")
      ("len", "query length L", cxxopts::value<int64_t>()->default_value("4"), "L")
      ("src-len", "key/value length S (default L; S != L is cross-attention)", cxxopts::value<int64_t>(), "S")
      ("batch", "batch size N", cxxopts::value<int64_t>()->default_value("2"), "N")
      ("mask", "none, causal, padding or both", cxxopts::value<std::string>()->default_value("both"), "KIND")
      ("pad-all", "with padding: the last batch entry ignores every key (a fully masked row)")
      ("batch-first", "inputs are (N, L, E) instead of (L, N, E)")
      ("per-head", "check per-head weights (N, H, L, S) instead of their average");
  add_full_precision_flag(options);
  options.parse_positional({"what"});
  const auto args = parse_command_line(options, argc, argv);
  if (args.count("help")) {
    std::cout << options.help({"", "attention"});
    return 0;
  }
  refuse_bf16(args, "gradcheck", "it compares float64 gradients with finite differences");
  if (!args.count("what")) throw UsageError("say what to check: attention or ops");
  const std::string what = args["what"].as<std::string>();
  const GradcheckOptions tol = tolerances(args);
  const Order order = order_of(args);
  if (what == "attention") return gradcheck_attention(attention_config(args), tol, order);
  if (what == "ops") {
    for (const char* o : {"heads", "embed", "len", "src-len", "batch", "mask", "pad-all", "batch-first", "per-head"})
      if (args.count(o)) throw UsageError(std::string("--") + o + " applies to 'gradcheck attention' only");
    return gradcheck_ops(args["seed"].as<uint64_t>(), tol, order);
  }
  throw UsageError("unknown check '" + what + "': expected attention or ops");
}

}  // namespace ag::cli
