// `attograd attend --checkpoint PATH --text TEXT --out DIR`: runs the model on a prompt and
// writes every layer's and head's attention weights: DIR/attention.safetensors (layer{i}, F32
// (H, T, T); see viz/attention_maps.h), one heatmap per head DIR/layer{i}_head{h}.png with the
// characters on both axes, and all of them in DIR/attention_grid.png.
// With --grads it also computes dLoss/dWeights, the gradient of the LM loss on the text (each
// character predicting the next) with respect to every layer's and head's weights, and through
// the softmax's backward dLoss/dScores, the gradient of the scaled scores, and writes
// DIR/attention_grads.safetensors and DIR/attention_score_grads.safetensors (same layout),
// DIR/layer{i}_head{h}_grad.png (the weights beside the signed dLoss/dScores, empty rows
// explained) and DIR/attention_grads_grid.png.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "data/text_file.h"
#include "train/run_folder/checkpoint.h"
#include "viz/attention_maps.h"

namespace ag::cli {

namespace fs = std::filesystem;

int cmd_attend(int argc, char** argv) {
  cxxopts::Options options("attograd attend", "Write the attention weights of every layer and head on a prompt, "
                                              "as safetensors and as PNG heatmaps.");
  // clang-format off
  options.add_options()
    ("checkpoint", "run folder or its model.safetensors", cxxopts::value<std::string>())
    ("text", "the prompt (at most block_size characters, all in the vocabulary)", cxxopts::value<std::string>())
    ("text-file", "read the prompt from this UTF-8 file instead", cxxopts::value<std::string>())
    ("out", "folder for attention.safetensors and the PNG files (created if missing)", cxxopts::value<std::string>())
    ("cell", "pixels per cell of the single-head heatmaps (0: chosen from the length)", cxxopts::value<int>()->default_value("0"))
    ("grads", "also the gradients of the LM loss on the text w.r.t. every head's weights and scores (dLoss/dWeights, dLoss/dScores), saved; the signed dLoss/dScores drawn beside the weights")
    ("no-png", "write only attention.safetensors (and attention_grads.safetensors)")
    ("h,help", "show this help");
  // clang-format on
  const auto r = parse_command_line(options, argc, argv);
  if (print_help_if_asked(options, r)) return 0;
  if (!r.count("checkpoint")) throw UsageError("--checkpoint PATH is required");
  if (r.count("text") == r.count("text-file")) throw UsageError("give the prompt with exactly one of --text and --text-file");
  if (!r.count("out")) throw UsageError("--out DIR is required");
  const int cell = r["cell"].as<int>();
  if (cell < 0 || cell > 64) throw UsageError("--cell must be in 0..64");

  std::string text;
  if (r.count("text")) {
    text = r["text"].as<std::string>();
  } else {
    const std::string path = r["text-file"].as<std::string>();
    text = data::read_text_file(path, path);  // a regular file of bounded size only
  }
  const auto loaded = train::load_model(r["checkpoint"].as<std::string>());
  const bool with_grads = r.count("grads") > 0;
  viz::AttentionGrads grads;
  if (with_grads) grads = viz::capture_attention_grads(*loaded.model, loaded.tokenizer, text);
  const viz::AttentionMaps maps = with_grads ? grads.maps : viz::capture_attention(*loaded.model, loaded.tokenizer, text);

  const fs::path dir = r["out"].as<std::string>();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir.string() + ": cannot create the folder: " + ec.message());
  const std::string st = (dir / "attention.safetensors").string();
  viz::save_attention(st, maps, loaded.tokenizer, loaded.path);
  const int64_t n_layer = static_cast<int64_t>(maps.layers.size()), n_head = maps.n_head();
  std::cout << "attend: " << loaded.path << " (" << n_layer << " layers, " << n_head << " heads) on "
            << maps.length() << " characters\n"
            << "wrote " << st << " (" << (n_layer > 1 ? "layer0 .. layer" + std::to_string(n_layer - 1) : "layer0")
            << ": F32 [" << n_head << ", " << maps.length() << ", " << maps.length() << "] each)\n";
  if (with_grads) {
    const std::string gst = (dir / "attention_grads.safetensors").string();
    const std::string sst = (dir / "attention_score_grads.safetensors").string();
    viz::save_attention_grads(gst, grads, loaded.tokenizer, loaded.path);
    viz::save_attention_grads(sst, grads, loaded.tokenizer, loaded.path, /*scores=*/true);
    char line[400];
    std::snprintf(line, sizeof line, "LM loss on the text %.4f (%ld predictions); wrote %s (dLoss/dWeights, same layout)",
                  grads.loss, static_cast<long>(maps.length() - 1), gst.c_str());
    std::cout << line << "\nwrote " << sst << " (dLoss/dScores, the scaled scores before the softmax, same layout)\n";
  }
  for (int64_t l = 0; l < n_layer; ++l)
    for (int64_t h = 0; h < n_head; ++h) {
      const auto s = viz::head_stats(maps, l, h);
      char line[160];
      std::snprintf(line, sizeof line, "layer %ld head %ld: mean entropy %.2f bits, mean distance back %.2f characters",
                    static_cast<long>(l), static_cast<long>(h), s.entropy_bits, s.mean_distance);
      std::cout << line;
      if (!r.count("no-png")) {
        const std::string png = "layer" + std::to_string(l) + "_head" + std::to_string(h) + ".png";
        const auto img = viz::render_attention_head(maps, l, h, cell);
        img.save_png((dir / png).string());
        std::cout << "  -> " << png << " (" << img.width() << "x" << img.height() << ")";
      }
      if (with_grads) {
        const int64_t T = maps.length();
        auto head_norm = [&](const Tensor& t) {
          const auto v = t.to_double_vector();
          double s2 = 0;
          for (int64_t i = h * T * T; i < (h + 1) * T * T; ++i) s2 += v[i] * v[i];
          return std::sqrt(s2);
        };
        std::snprintf(line, sizeof line, "; |dLoss/dWeights| %.3e, |dLoss/dScores| %.3e",
                      head_norm(grads.grads[static_cast<size_t>(l)]), head_norm(grads.score_grads[static_cast<size_t>(l)]));
        std::cout << line;
        if (!r.count("no-png")) {
          const std::string png = "layer" + std::to_string(l) + "_head" + std::to_string(h) + "_grad.png";
          const auto img = viz::render_attention_head_with_grad(grads, l, h, cell);
          img.save_png((dir / png).string());
          std::cout << "  -> " << png;
        }
      }
      std::cout << "\n";
    }
  if (!r.count("no-png")) {
    const std::string grid = (dir / "attention_grid.png").string();
    const auto img = viz::render_attention_grid(maps);
    img.save_png(grid);
    std::cout << "wrote " << grid << " (" << img.width() << "x" << img.height() << ")\n";
    if (with_grads) {
      const std::string ggrid = (dir / "attention_grads_grid.png").string();
      const auto gimg = viz::render_attention_grad_grid(grads);
      gimg.save_png(ggrid);
      std::cout << "wrote " << ggrid << " (" << gimg.width() << "x" << gimg.height() << ")\n";
    }
  }
  return 0;
}

}  // namespace ag::cli
