// `attograd explore --out FILE.html (--attention [--q Q --k K --v V --g G --causal] |
//                   --checkpoint DIR --text TEXT) [--unfused] [--dtype float64|float32]`:
// one forward and backward pass, captured node by node (viz/explore.h), written as one
// self-contained HTML page (viz/explore_html.h). Exit 1 when a node's finite-difference check
// fails (a failed check).
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "base/atomic_file.h"
#include "autograd/engine.h"
#include "autograd/ops.h"
#include "cli/commands.h"
#include "cli/matrix_flag.h"
#include "cli/precision_flags.h"
#include "nn/attention.h"
#include "train/run_folder/checkpoint.h"
#include "viz/explore.h"
#include "viz/explore_html.h"

namespace ag::cli {

namespace {

Tensor tensor_of(const viz::Matrix& m, DType dtype) {
  return Tensor::from_vector(m.v, {m.rows, m.cols}, dtype);
}

std::string matrix_text(const viz::Matrix& m) {
  std::string s = "[";
  for (int i = 0; i < m.rows; ++i) {
    s += i ? ",[" : "[";
    for (int j = 0; j < m.cols; ++j) {
      char b[32];
      std::snprintf(b, sizeof b, "%g", m(i, j));
      s += (j ? "," : "") + std::string(b);
    }
    s += "]";
  }
  return s + "]";
}

}  // namespace

int cmd_explore(int argc, char** argv) {
  cxxopts::Options options("attograd explore",
                           "Write one self-contained HTML page that walks a forward and backward pass node by node: "
                           "the autograd graph, each node's value, the gradient it received and the gradients it sent, "
                           "its backward formula and a finite-difference check, step by step in the engine's order.");
  options.custom_help("--out FILE.html (--attention [--q Q --k K --v V --g G] [--causal] | --checkpoint DIR --text TEXT) "
                      "[--unfused] [--dtype float64|float32]");
  // clang-format off
  options.add_options()
    ("out", "the page to write, FILE.html", cxxopts::value<std::string>())
    ("attention", "one MultiheadAttention call (one head, identity projections): the README's seed example, or --q/--k/--v; loss sum(output * G)")
    ("checkpoint", "a language model: run folder or model.safetensors; loss: next-character cross-entropy on --text", cxxopts::value<std::string>())
    ("text", "with --checkpoint: the text (at least 2 characters, at most block_size + 1)", cxxopts::value<std::string>())
    ("unfused", "build attention from primitive ops (matmul, scale, mask, softmax, matmul), so that the softmax is a node")
    ("dtype", "float64 (the default: finite differences to 1e-6) or float32 (as the model trains)", cxxopts::value<std::string>()->default_value("float64"))
    ("q", "with --attention: queries Q (L, d) as JSON, e.g. [[1,0],[0,1]]", cxxopts::value<std::string>())
    ("k", "with --attention: keys K (S, d)", cxxopts::value<std::string>())
    ("v", "with --attention: values V (S, dv), dv = d", cxxopts::value<std::string>())
    ("g", "with --attention: G, the loss is sum(output * G)", cxxopts::value<std::string>())
    ("causal", "with --attention: hide key j from query i when j > i")
    ("seed", "seed of the finite-difference check's random direction", cxxopts::value<uint64_t>()->default_value("1"))
    ("json", "also write the page's data (JSON) to this file", cxxopts::value<std::string>())
    ("h,help", "show this help");
  // clang-format on
  add_full_precision_flag(options);
  MatrixFlagArgs args(argc, argv);  // --q, --k, --v, --g
  const auto r = parse_command_line(options, args.argc(), args.argv());
  if (print_help_if_asked(options, r)) return 0;
  refuse_bf16(r, "explore", "its finite-difference check of every node needs full precision");
  if (!r.count("out")) throw UsageError("--out FILE.html is required");
  const std::string out = r["out"].as<std::string>();
  if (out.size() < 5 || out.substr(out.size() - 5) != ".html") throw UsageError("--out must end in .html");
  const bool attention = r.count("attention") > 0;
  if (attention == (r.count("checkpoint") > 0)) throw UsageError("give exactly one of --attention and --checkpoint DIR");
  if (attention && r.count("text")) throw UsageError("--text goes with --checkpoint");
  if (!attention && !r.count("text")) throw UsageError("--checkpoint needs --text TEXT");
  if (!attention)
    for (const char* f : {"q", "k", "v", "g", "causal"})
      if (r.count(f)) throw UsageError(std::string("--") + f + " goes with --attention");
  const std::string dtype_flag = r["dtype"].as<std::string>();
  if (dtype_flag != "float64" && dtype_flag != "float32") throw UsageError("--dtype must be float64 or float32");
  const DType dtype = dtype_flag == "float64" ? DType::Float64 : DType::Float32;
  const bool unfused = r.count("unfused") > 0;

  // The pass the page shows (in --dtype) and, for float32, its float64 twin: the same function
  // of float64 copies of the same leaves, on which the finite-difference replays run
  // (viz/explore.h), so that a check of a correct float32 backward never fails on the forward's
  // rounding.
  struct Pass {
    std::function<Tensor()> forward;
    std::vector<Tensor> leaves;
    // What the forward needs, kept alive while the capture runs.
    std::shared_ptr<nn::MultiheadAttention> mha;
    Tensor q, k, v, g, x, y;
    std::unique_ptr<models::LanguageModel> model;
  };
  std::string title;
  std::function<void(Pass&, DType)> build;
  if (attention) {
    bool custom = false;
    const viz::AttentionWalkInput in = attention_input_from_flags(r, &custom, dtype);
    if (in.v.cols != in.q.cols)
      throw UsageError("--v: MultiheadAttention needs values as wide as the queries (d = " + std::to_string(in.q.cols) +
                       "), got " + std::to_string(in.v.cols) + " columns");
    build = [in, unfused](Pass& p, DType dt) {
      const int64_t E = in.q.cols;
      p.mha = std::make_shared<nn::MultiheadAttention>(E, 1, 0.0, /*bias=*/false, /*batch_first=*/true, dt);
      {  // identity projections: in_proj = [I; I; I], out_proj = I, so that the call is the seed's bare attention
        NoGradGuard no_grad;
        std::vector<double> w(static_cast<size_t>(3 * E * E), 0.0), o(static_cast<size_t>(E * E), 0.0);
        for (int64_t b = 0; b < 3; ++b)
          for (int64_t i = 0; i < E; ++i) w[static_cast<size_t>((b * E + i) * E + i)] = 1;
        for (int64_t i = 0; i < E; ++i) o[static_cast<size_t>(i * E + i)] = 1;
        p.mha->in_proj_weight.copy_(Tensor::from_vector(w, {3 * E, E}, dt));
        p.mha->out_proj->weight.copy_(Tensor::from_vector(o, {E, E}, dt));
      }
      nn::name_parameters(*p.mha);
      p.mha->eval();
      p.q = unsqueeze(tensor_of(in.q, dt), 0).contiguous().requires_grad_().set_name("query");
      p.k = unsqueeze(tensor_of(in.k, dt), 0).contiguous().requires_grad_().set_name("key");
      p.v = unsqueeze(tensor_of(in.v, dt), 0).contiguous().requires_grad_().set_name("value");
      p.g = unsqueeze(tensor_of(in.g, dt), 0).contiguous();
      const bool causal = in.causal;
      p.forward = [&p, causal, unfused] {
        std::optional<nn::UnfusedAttentionGuard> primitive;
        if (unfused) primitive.emplace();
        const Tensor o = p.mha->forward(p.q, p.k, p.v, Tensor(), /*need_weights=*/false, Tensor(), true, causal).output;
        return sum(mul(o, p.g));  // L = Σ output ⊙ G
      };
      p.leaves = {p.q, p.k, p.v};
      for (const Tensor& w : p.mha->parameters()) p.leaves.push_back(w);
    };
    title = std::string("MultiheadAttention, one head, identity projections, on ") +
            (custom ? "Q = " + matrix_text(in.q) + ", K = " + matrix_text(in.k) + ", V = " + matrix_text(in.v)
                    : "the README's seed example") +
            (in.causal ? ", causal" : "") + "; loss L = sum(output * G), G = " + matrix_text(in.g) +
            (unfused ? "; attention from primitive ops" : "");
  } else {
    const std::string checkpoint = r["checkpoint"].as<std::string>();
    auto loaded = train::load_model(checkpoint);
    const std::string text = r["text"].as<std::string>();
    const std::vector<int64_t> ids = loaded.tokenizer.encode(std::string_view(text), "--text");
    if (ids.size() < 2) throw UsageError("--text needs at least 2 characters (each one predicts the next)");
    const int64_t T = static_cast<int64_t>(ids.size()) - 1;
    if (T > loaded.model->block_size())
      throw UsageError("--text has " + std::to_string(ids.size()) + " characters; the model reads at most block_size + 1 = " +
                       std::to_string(loaded.model->block_size() + 1));
    title = loaded.model->model_config().name + " (" + loaded.model->summary() + ") from " + loaded.path + " on \"" + text +
            "\"; loss: next-character cross-entropy" + (unfused ? "; attention from primitive ops" : "");
    auto first = std::make_shared<decltype(loaded)>(std::move(loaded));
    build = [first, checkpoint, ids, T, unfused](Pass& p, DType dt) {
      if (first->model) {
        p.model = std::move(first->model);
      } else {  // the twin: a second copy of the same checkpoint
        p.model = train::load_model(checkpoint).model;
      }
      if (dt == DType::Float64) p.model->to(DType::Float64);  // exact: every float32 is a double
      p.model->eval();
      nn::name_parameters(*p.model);
      p.x = Tensor::from_vector(std::vector<int64_t>(ids.begin(), ids.end() - 1), {1, T});
      p.y = Tensor::from_vector(std::vector<int64_t>(ids.begin() + 1, ids.end()), {1, T});
      p.forward = [&p, unfused] {
        std::optional<nn::UnfusedAttentionGuard> primitive;
        if (unfused) primitive.emplace();
        return p.model->loss(p.x, p.y);
      };
      p.leaves = p.model->parameters();
    };
  }
  Pass pass, twin;
  build(pass, dtype);
  if (dtype == DType::Float32) build(twin, DType::Float64);

  viz::ExploreOptions eo;
  eo.title = title;
  eo.fd_seed = r["seed"].as<uint64_t>();
  if (twin.forward) eo.float64_twin = twin.forward, eo.float64_twin_leaves = twin.leaves;
  const viz::ExploreCapture cap = viz::capture_explore(pass.forward, pass.leaves, eo);

  std::string command = "attograd";
  for (int i = 0; i < argc; ++i) command += std::string(" ") + argv[i];
  const std::string page = viz::explore_html(cap, {command});
  write_file_atomically(out, page);
  if (r.count("json")) write_file_atomically(r["json"].as<std::string>(), viz::explore_json(cap));

  int ops = 0, leaf_count = 0, checked = 0;
  double worst = 0;
  for (const auto& n : cap.nodes) {
    (n.leaf ? leaf_count : ops) += 1;
    if (!n.fd_checked) continue;
    ++checked;
    if (!(n.fd_relative_error() <= worst)) worst = n.fd_relative_error();  // a NaN shows
  }
  char line[320];
  std::snprintf(line, sizeof line, "explore: %d ops, %d leaves, %zu backward steps; loss %.6f (%s)", ops, leaf_count,
                cap.order.size(), cap.loss, dtype_flag.c_str());
  std::cout << line << "\n";
  if (!cap.fd_note.empty()) {
    std::cout << "finite-difference check: " << cap.fd_note << "\n";
  } else {
    std::snprintf(line, sizeof line,
                  "finite-difference check of each node's backward (one random direction, eps %.0e%s): %d of %d agree, "
                  "worst relative difference %.1e (tolerance %.0e)",
                  cap.fd_step, cap.fd_in_float64 ? ", replayed in float64" : "", checked - cap.fd_failures(), checked,
                  worst, cap.fd_tolerance());
    std::cout << line << "\n";
  }
  std::snprintf(line, sizeof line, "wrote %s (%.2f MB)", out.c_str(), page.size() / 1e6);
  std::cout << line << "\n";
  if (!std::isfinite(cap.loss)) {  // nothing of such a pass can be checked, or shown as a value
    std::cout << "check FAILED: the loss is " << cap.loss << ", not a finite number\n";
    return 1;
  }
  if (cap.fd_failures() > 0) {
    std::cout << "check FAILED: " << cap.fd_failures() << " node(s) disagree with finite differences; the page marks them\n";
    return 1;
  }
  return 0;
}

}  // namespace ag::cli
