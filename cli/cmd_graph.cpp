// `attograd graph (--model | --attention) --out FILE.dot|.svg|.png [options]`: records the
// autograd graph of one forward pass, runs a backward through it with retain_graph while a
// NodeGradNorms recorder notes the norm of each node's gradient, and writes it as Graphviz DOT (viz/graph_export.h).
// For .svg and .png it also runs Graphviz's dot, when installed, next to a .dot file.
#include <filesystem>
#include <iostream>
#include <optional>

#include "base/atomic_file.h"
#include "viz/graph_export.h"
#include "autograd/ops.h"
#include "cli/commands.h"
#include "models/registry.h"
#include "nn/attention.h"
#include "train/run_folder/checkpoint.h"
#include "viz/graphviz.h"

namespace ag::cli {

namespace fs = std::filesystem;

int cmd_graph(int argc, char** argv) {
  cxxopts::Options options("attograd graph",
                           "Write the autograd graph of one forward pass (and its gradient norms) as Graphviz DOT.");
  // clang-format off
  options.add_options()
    ("model", "a language model: a tiny GPT (1 layer, 2 heads, width 8), or --checkpoint's model; root: the loss")
    ("attention", "a MultiheadAttention alone (causal self-attention); root: sum(output)")
    ("checkpoint", "with --model: run folder or model.safetensors to take the model from", cxxopts::value<std::string>())
    ("text", "with --checkpoint: the input; the loss predicts each next character", cxxopts::value<std::string>()->default_value("To be, or"))
    ("len", "sequence length of the tiny model's or the attention's random input", cxxopts::value<int64_t>()->default_value("4"))
    ("embed", "with --attention: embedding width", cxxopts::value<int64_t>()->default_value("8"))
    ("heads", "with --attention: heads", cxxopts::value<int64_t>()->default_value("2"))
    ("seed", "random seed of the parameters and inputs", cxxopts::value<uint64_t>()->default_value("0"))
    ("no-backward", "only the forward graph (no gradient norms)")
    ("out", "FILE.dot, or FILE.svg / FILE.png to render with Graphviz (FILE.dot is written too)", cxxopts::value<std::string>())
    ("h,help", "show this help");
  // clang-format on
  const auto r = parse_command_line(options, argc, argv);
  if (print_help_if_asked(options, r)) return 0;
  if (r.count("model") && r.count("attention")) throw UsageError("choose one of --model and --attention");
  if (!r.count("out")) throw UsageError("--out FILE.dot|FILE.svg|FILE.png is required");
  const bool attention = r.count("attention") > 0;
  if (attention && r.count("checkpoint")) throw UsageError("--checkpoint goes with --model");
  if (r.count("text") && !r.count("checkpoint")) throw UsageError("--text goes with --checkpoint");
  if (!attention && (r.count("embed") || r.count("heads"))) throw UsageError("--embed and --heads go with --attention");
  const fs::path out = r["out"].as<std::string>();
  const std::string ext = out.extension().string();
  if (ext != ".dot" && ext != ".svg" && ext != ".png") throw UsageError("--out must end in .dot, .svg or .png");
  const int64_t len = r["len"].as<int64_t>();
  if (len < 1 || len > 64) throw UsageError("--len must be in 1..64");
  Generator gen(r["seed"].as<uint64_t>());

  // Build and run the forward pass; every tensor stays alive until the export is written.
  std::shared_ptr<nn::Module> owner;
  std::unique_ptr<models::LanguageModel> loaded_model;
  Tensor root, input;
  std::string title;
  if (attention) {
    const int64_t E = r["embed"].as<int64_t>(), H = r["heads"].as<int64_t>();
    if (E < 1 || H < 1 || E % H != 0) throw UsageError("--embed must be a positive multiple of --heads");
    auto mha = std::make_shared<nn::MultiheadAttention>(E, H, 0.0, true, /*batch_first=*/true, DType::Float32, gen);
    nn::name_parameters(*mha);
    input = Tensor::randn({1, len, E}, DType::Float32, gen).requires_grad_().set_name("x (input)");
    const Tensor y = mha->forward(input, input, input, Tensor(), /*need_weights=*/false, Tensor(), true, /*is_causal=*/true).output;
    root = sum(y);
    owner = mha;
    title = "MultiheadAttention(embed " + std::to_string(E) + ", heads " + std::to_string(H) +
            "), causal self-attention on x (1, " + std::to_string(len) + ", " + std::to_string(E) + "); root: sum(output)";
  } else {
    std::vector<int64_t> ids;
    const models::LanguageModel* model = nullptr;
    if (r.count("checkpoint")) {
      auto loaded = train::load_model(r["checkpoint"].as<std::string>());
      ids = loaded.tokenizer.encode(std::string_view(r["text"].as<std::string>()), "--text");
      if (ids.size() < 2) throw UsageError("--text needs at least 2 characters (inputs and the next one)");
      if (static_cast<int64_t>(ids.size()) - 1 > loaded.model->block_size())
        throw UsageError("--text is longer than the model's block_size + 1");
      loaded_model = std::move(loaded.model);
      model = loaded_model.get();
      title = model->model_config().name + " (" + model->summary() + ") from " + loaded.path + " on \"" + r["text"].as<std::string>() + "\"; root: the loss";
    } else {
      models::ModelConfig cfg;  // the GPT
      cfg.vocab_size = 10, cfg.n_layer = 1, cfg.n_head = 2, cfg.n_embd = 8, cfg.block_size = std::max<int64_t>(len, 8);
      loaded_model = models::make_model(cfg, DType::Float32, gen);
      model = loaded_model.get();
      for (int64_t i = 0; i <= len; ++i) ids.push_back(static_cast<int64_t>(gen.next_u64() % 10));
      title = "gpt (1 layer, 2 heads, width 8, vocab 10) on " + std::to_string(len) +
              " random tokens; root: the cross-entropy loss";
    }
    nn::name_parameters(*model);
    const int64_t T = static_cast<int64_t>(ids.size()) - 1;
    const Tensor x = Tensor::from_vector(std::vector<int64_t>(ids.begin(), ids.end() - 1), {1, T});
    const Tensor y = Tensor::from_vector(std::vector<int64_t>(ids.begin() + 1, ids.end()), {1, T});
    root = model->loss(x, y);
  }
  const bool backward = !r.count("no-backward");
  std::optional<NodeGradNorms> norms;
  if (backward) {
    norms.emplace();
    root.backward({}, {.retain_graph = true});
  }

  GraphStats stats;
  const std::string dot = to_dot(root, DotOptions{title, backward, false, norms ? &*norms : nullptr}, &stats);
  fs::path dot_path = out;
  dot_path.replace_extension(".dot");
  write_file_atomically(dot_path.string(), dot);  // never through a symbolic link; every write checked
  std::cout << "graph: " << stats.op_nodes << " ops, " << stats.leaf_nodes << " leaves, " << stats.edges << " edges"
            << (backward ? "; gradient norms from backward(retain_graph=true)" : "; forward only") << "\n"
            << "wrote " << dot_path.string() << "\n";
  if (ext != ".dot") {
    const std::string program = viz::find_dot();
    if (program.empty())
      throw std::runtime_error(out.string() + ": cannot render: Graphviz's dot is not installed (Debian package graphviz: "
                               "apt-get install graphviz). The graph is in " + dot_path.string() + "; render it with: dot -T" +
                               ext.substr(1) + " " + dot_path.string() + " -o " + out.string());
    viz::render_dot(program, dot_path.string(), out.string(), ext.substr(1));
    std::cout << "rendered " << out.string() << " with " << program << "\n";
  }
  return 0;
}

}  // namespace ag::cli
