// Images, text, heatmaps, line plots, loss curves and attention maps (viz/).
#include <gtest/gtest.h>

#include "tests/test_util.h"
#include <stb_image.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/safetensors.h"
#include "models/transformer_lm.h"
#include "nn/attention.h"
#include "viz/attention_maps.h"
#include "viz/font.h"
#include "viz/heatmap.h"
#include "viz/line_plot.h"
#include "viz/loss_plot.h"

using namespace ag;
using namespace ag::viz;
namespace fs = std::filesystem;
using namespace ag::testing_util;

namespace {

// Width and height read straight from the PNG's bytes: the 8-byte signature, then the IHDR
// chunk (length, "IHDR", width and height as big-endian 32-bit integers).
std::pair<uint32_t, uint32_t> png_header_size(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  unsigned char b[24] = {};
  f.read(reinterpret_cast<char*>(b), 24);
  EXPECT_EQ(f.gcount(), 24);
  EXPECT_EQ(std::string(reinterpret_cast<char*>(b + 1), 3), "PNG");
  EXPECT_EQ(std::string(reinterpret_cast<char*>(b + 12), 4), "IHDR");
  auto be = [&](int o) { return uint32_t(b[o]) << 24 | uint32_t(b[o + 1]) << 16 | uint32_t(b[o + 2]) << 8 | b[o + 3]; };
  return {be(16), be(20)};
}

// Decodes the PNG with stb_image and checks it holds exactly the image's pixels.
void expect_png_holds(const fs::path& p, const Image& img) {
  int w = 0, h = 0, n = 0;
  unsigned char* px = stbi_load(p.string().c_str(), &w, &h, &n, 3);
  ASSERT_NE(px, nullptr) << p << ": " << stbi_failure_reason();
  EXPECT_EQ(w, img.width());
  EXPECT_EQ(h, img.height());
  EXPECT_TRUE(std::equal(img.rgb().begin(), img.rgb().end(), px));
  stbi_image_free(px);
}

size_t count_color(const Image& img, Color c) {
  size_t n = 0;
  for (int y = 0; y < img.height(); ++y)
    for (int x = 0; x < img.width(); ++x) n += img.at(x, y) == c;
  return n;
}

models::TransformerLM tiny_model(int64_t vocab, Generator& gen) {
  models::GPTConfig cfg;
  cfg.vocab_size = vocab, cfg.n_layer = 2, cfg.n_head = 3, cfg.n_embd = 12, cfg.block_size = 16;
  return models::TransformerLM(cfg, DType::Float32, gen);
}
}  // namespace

TEST(Image, DrawsAndWritesAPngOfItsSize) {
  const fs::path dir = temp_dir("image");
  Image img(37, 21, Color{10, 20, 30});
  img.fill_rect(2, 3, 6, 5, Color{255, 0, 0});
  EXPECT_EQ(img.at(2, 3), (Color{255, 0, 0}));
  EXPECT_EQ(img.at(5, 4), (Color{255, 0, 0}));
  EXPECT_EQ(img.at(6, 4), (Color{10, 20, 30}));
  img.line(0, 10.5, 36, 10.5, Color{0, 255, 0}, 1.0);
  EXPECT_EQ(img.at(18, 10), (Color{0, 255, 0}));
  EXPECT_EQ(img.at(18, 12), (Color{10, 20, 30}));
  img.save_png((dir / "a.png").string());
  EXPECT_EQ(png_header_size(dir / "a.png"), std::make_pair(37u, 21u));
  EXPECT_EQ(png_dimensions((dir / "a.png").string()), std::make_pair(37, 21));
  expect_png_holds(dir / "a.png", img);
  {  // encode_png: the same bytes as the file
    std::ifstream f(dir / "a.png", std::ios::binary);
    const std::string file((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT_EQ(img.encode_png(), file);
  }
  EXPECT_THROW(img.save_png((dir / "no" / "such" / "a.png").string()), std::runtime_error);
  EXPECT_THROW(Image(0, 5), std::invalid_argument);
  fs::remove_all(dir);
}

TEST(Font, HasTheAxisGlyphsAndDrawsText) {
  const Font& f = Font::standard();
  for (char32_t cp : {U'a', U'↵', U'␣', U'⇥', U'·'}) EXPECT_TRUE(f.has_glyph(cp)) << static_cast<uint32_t>(cp);
  EXPECT_NEAR(f.width("abcd", 20), 2 * f.width("ab", 20), 1e-6) << "a monospaced font";
  Image img(60, 30);
  f.draw(img, 2, 20, "Hi", 18, Color{0, 0, 0});
  EXPECT_LT(count_color(img, Color{255, 255, 255}), static_cast<size_t>(60 * 30)) << "some ink";
  Image v(30, 60);
  f.draw_vertical(v, 15, 30, "Hi", 18, Color{0, 0, 0});
  EXPECT_LT(count_color(v, Color{255, 255, 255}), static_cast<size_t>(30 * 60));
}

TEST(LinePlot, NiceTicksAndLabels) {
  EXPECT_EQ(nice_ticks(0, 1, 6), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  EXPECT_EQ(nice_ticks(3, 47, 5), (std::vector<double>{10, 20, 30, 40}));
  EXPECT_EQ(tick_label(0.5, 0.1), "0.5");
  EXPECT_EQ(tick_label(2000, 500), "2000");
  EXPECT_EQ(tick_label(3e-4, 1e-4), "3e-04");
  EXPECT_EQ(tick_label(1e-3, 5e-4), "1e-03");
  EXPECT_EQ(tick_label(1.5e-3, 5e-4), "1.5e-03");
  EXPECT_EQ(tick_label(0, 1e-4), "0");
}

TEST(Heatmap, PngHasTheLayoutsDimensionsAndCellsWhereItSays) {
  const fs::path dir = temp_dir("heatmap");
  HeatmapOptions o;
  o.title = "t";
  o.row_title = "query", o.col_title = "key";
  o.row_labels = o.col_labels = {"a", "␣", "↵"};
  o.masked = {false, true, true, false, false, true, false, false, false};
  o.cell = 20;
  const std::vector<double> v = {1, 0, 0, 0.5, 0.5, 0, 0.2, 0.3, 0.5};
  const HeatmapLayout L = heatmap_layout(3, 3, o);
  const Image img = render_heatmap(v, 3, 3, o);
  EXPECT_EQ(img.width(), L.width);
  EXPECT_EQ(img.height(), L.height);
  EXPECT_GE(L.width, 3 * 20);
  img.save_png((dir / "h.png").string());
  EXPECT_EQ(png_header_size(dir / "h.png"), std::make_pair(static_cast<uint32_t>(L.width), static_cast<uint32_t>(L.height)));
  expect_png_holds(dir / "h.png", img);
  // The centre of cell (0, 0) has the colour of weight 1; a masked cell is not on the scale.
  EXPECT_EQ(img.at(L.map_x + 10, L.map_y + 11), heat_color(1.0));
  const Color masked = img.at(L.map_x + 2 * 20 + 10, L.map_y + 11);
  for (double t = 0; t <= 1; t += 0.01) EXPECT_FALSE(masked == heat_color(t));
  EXPECT_THROW(render_heatmap({1, 2}, 3, 3, o), std::invalid_argument);
  fs::remove_all(dir);
}

TEST(LossPlot, FromASmallMetricsFile) {
  const fs::path dir = temp_dir("loss_plot");
  {
    std::ofstream f(dir / "metrics.jsonl");
    f << R"({"iter":0,"train_loss":4.2,"val_loss":4.21,"lr":0.0,"tokens_per_s":0,"elapsed_s":1})" "\n"
      << R"({"iter":10,"train_loss":3.8,"val_loss":null,"lr":1e-4,"tokens_per_s":5000,"elapsed_s":2})" "\n"
      << R"({"iter":20,"train_loss":3.3,"val_loss":null,"lr":2e-4,"tokens_per_s":5000,"elapsed_s":3})" "\n"
      << R"({"iter":20,"train_loss":3.25,"val_loss":3.3,"lr":2e-4,"tokens_per_s":5000,"elapsed_s":4})" "\n"
      << R"({"iter":30,"train_lo)";  // a run killed mid-line
  }
  const auto rows = read_metrics((dir / "metrics.jsonl").string());
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_TRUE(rows[0].val_loss.has_value());
  EXPECT_FALSE(rows[1].val_loss.has_value());
  EXPECT_DOUBLE_EQ(*rows[3].val_loss, 3.3);
  const Image img = render_loss_plot(rows, "run", 640, 480);
  img.save_png((dir / "loss.png").string());
  EXPECT_EQ(png_header_size(dir / "loss.png"), std::make_pair(640u, 480u));
  expect_png_holds(dir / "loss.png", img);
  // The markers of the evaluations are drawn in their series' colours.
  EXPECT_GT(count_color(img, Color{31, 90, 170}), 20u);
  EXPECT_GT(count_color(img, Color{222, 110, 30}), 20u);

  std::ofstream(dir / "bad.jsonl") << "{\"iter\":0,\"train_loss\":1,\"lr\":0}\nnot json}\n{\"iter\":1,\"train_loss\":1,\"lr\":0}\n";
  try {
    read_metrics((dir / "bad.jsonl").string());
    FAIL() << "a malformed line must be an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:2: "), std::string::npos) << e.what();
  }
  std::ofstream(dir / "empty.jsonl") << "";
  EXPECT_THROW(read_metrics((dir / "empty.jsonl").string()), std::runtime_error);
  EXPECT_THROW(read_metrics((dir / "missing.jsonl").string()), std::runtime_error);
  fs::remove_all(dir);
}

TEST(AttentionMaps, SavedRowsSumToOneAndMaskedPositionsAreExactlyZero) {
  const fs::path dir = temp_dir("attention_maps");
  const std::string text = "the cat sat\non a mat";
  const auto tok = data::CharTokenizer::from_text(data::decode_utf8(text, "t"));
  Generator gen(11);
  models::TransformerLM model = tiny_model(tok.vocab_size(), gen);
  model.eval();
  const std::string prompt = "a cat\nsat on";
  const AttentionMaps maps = capture_attention(model, tok, prompt);
  ASSERT_EQ(maps.layers.size(), 2u);
  EXPECT_EQ(maps.length(), 12);
  EXPECT_EQ(maps.chars[5], "\n");
  save_attention((dir / "attention.safetensors").string(), maps, tok, "ckpt");

  const SafeTensorsFile f = SafeTensorsFile::load((dir / "attention.safetensors").string());
  EXPECT_EQ(f.metadata().at("format"), "attograd.attention");
  EXPECT_EQ(nlohmann::json::parse(f.metadata().at("text")).get<std::string>(), prompt);
  EXPECT_EQ(nlohmann::json::parse(f.metadata().at("chars")).size(), 12u);
  EXPECT_EQ(f.names(), (std::vector<std::string>{"layer0", "layer1"}));
  const int64_t T = 12, H = 3;
  for (const std::string& name : f.names()) {
    EXPECT_EQ(f.info(name).dtype, "F32");
    const Tensor w = f.get(name);
    ASSERT_EQ(w.shape(), (Shape{H, T, T}));
    const float* p = w.data<float>();
    for (int64_t h = 0; h < H; ++h)
      for (int64_t q = 0; q < T; ++q) {
        double s = 0;
        for (int64_t k = 0; k < T; ++k) {
          const float v = p[(h * T + q) * T + k];
          if (k > q) EXPECT_EQ(v, 0.0f) << name << " head " << h << " query " << q << " key " << k;
          else EXPECT_GT(v, 0.0f);
          s += v;
        }
        EXPECT_NEAR(s, 1.0, 1e-5) << name << " head " << h << " query " << q;
      }
  }

  // The weights are the model's own: the logits of forward_with_attention equal forward's (up to
  // float32 rounding: forward runs the blockwise kernel, which never forms the weights).
  const Tensor idx = Tensor::from_vector(tok.encode(std::string_view(prompt)), {1, T});
  std::vector<Tensor> weights;
  const Tensor a = model.forward_with_attention(idx, weights), b = model.forward(idx);
  const auto av = a.to_double_vector(), bv = b.to_double_vector();
  ASSERT_EQ(av.size(), bv.size());
  for (size_t i = 0; i < av.size(); ++i) EXPECT_NEAR(av[i], bv[i], 1e-5) << "logit " << i;
  EXPECT_EQ(weights[1].shape(), (Shape{1, H, T, T}));

  // PNG heatmaps: the per-head file and the grid.
  const Image head = render_attention_head(maps, 1, 2, 16);
  head.save_png((dir / "layer1_head2.png").string());
  EXPECT_EQ(png_header_size(dir / "layer1_head2.png"),
            std::make_pair(static_cast<uint32_t>(head.width()), static_cast<uint32_t>(head.height())));
  EXPECT_GT(head.width(), T * 16);
  const Image grid = render_attention_grid(maps);
  EXPECT_GT(grid.width(), 3 * T * 4);
  EXPECT_GT(grid.height(), 2 * T * 4);
  // One layer's row (TensorBoard's attention/layer1): exactly the grid's second row of panels
  // (tile's default gap of 8 pixels around and between them), and right of the panels the
  // colour bar they share, the scale of the single-head maps (0 to 1, colour ∝ √weight).
  const Image row = render_attention_layer(maps, 1);
  EXPECT_EQ(row.width(), grid.width());
  HeatmapOptions weights_scale;
  weights_scale.gamma = 0.5;
  const Image bar = render_colorbar(weights_scale, std::min(row.height(), 360));
  const int panels_w = row.width() - bar.width();
  ASSERT_GT(panels_w, 3 * T * 4);
  bool same = true, bar_same = true;
  const int panels_h = (grid.height() + 8) / 2;  // the tile's height, two rows of panels
  for (int y = 0; y < panels_h; ++y)
    for (int x = 0; x < panels_w; ++x) same = same && grid.at(x, y + panels_h - 8) == row.at(x, y);
  for (int y = 0; y < bar.height(); ++y)
    for (int x = 0; x < bar.width(); ++x) bar_same = bar_same && row.at(panels_w + x, y) == bar.at(x, y);
  EXPECT_TRUE(same);
  EXPECT_TRUE(bar_same) << "the layer image carries its colour bar";
  EXPECT_THROW(render_attention_layer(maps, 2), std::out_of_range);
  fs::remove_all(dir);
}

namespace {
// The tiny model of the gradient tests, in eval mode, its tokenizer and prompt.
struct GradsCase {
  data::CharTokenizer tok = data::CharTokenizer::from_text(data::decode_utf8("the cat sat\non a mat", "t"));
  Generator gen{5};
  models::TransformerLM model = tiny_model(tok.vocab_size(), gen);
  const std::string prompt = "a cat sat";
  GradsCase() { model.eval(); }
};
}  // namespace

TEST(AttentionMaps, GradsAreTheLossGradientOfEachHeadsWeights) {
  GradsCase c;
  auto& [tok, gen, model, prompt] = c;
  const AttentionGrads g = capture_attention_grads(model, tok, prompt);
  const AttentionMaps plain = capture_attention(model, tok, prompt);
  const int64_t T = 9, H = 3;
  // The loss is the model's own next-character loss on the prompt.
  const auto ids = tok.encode(std::string_view(prompt));
  const Tensor x = Tensor::from_vector(std::vector<int64_t>(ids.begin(), ids.end() - 1), {1, T - 1});
  const Tensor y = Tensor::from_vector(std::vector<int64_t>(ids.begin() + 1, ids.end()), {1, T - 1});
  EXPECT_NEAR(g.loss, model.loss(x, y).item(), 1e-5);
  ASSERT_EQ(g.grads.size(), 2u);
  for (size_t l = 0; l < 2; ++l) {
    // Bit for bit: the same model on the same prompt, through GEMMs of the same shapes.
    EXPECT_EQ(g.maps.layers[l].to_double_vector(), plain.layers[l].to_double_vector());
    ASSERT_EQ(g.grads[l].shape(), (Shape{H, T, T}));
    const auto v = g.grads[l].to_double_vector();
    double last_row = 0, rest = 0;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t q = 0; q < T; ++q)
        for (int64_t k = 0; k < T; ++k) {
          const double a = std::fabs(v[(h * T + q) * T + k]);
          ASSERT_TRUE(std::isfinite(a));
          (q == T - 1 ? last_row : rest) += a;
        }
    EXPECT_EQ(last_row, 0.0) << "the last position predicts nothing";
    EXPECT_GT(rest, 0.0);
  }
  for (const auto& [name, p] : model.named_parameters()) EXPECT_FALSE(p.grad().defined()) << name;  // ag::grad
  const fs::path dir = temp_dir("attention_grads");
  save_attention_grads((dir / "g.safetensors").string(), g, tok, "ckpt");
  const SafeTensorsFile f = SafeTensorsFile::load((dir / "g.safetensors").string());
  EXPECT_EQ(f.metadata().at("format"), "attograd.attention_grads");
  EXPECT_EQ(f.get("layer1").to_double_vector(), g.grads[1].to_double_vector());
  const Image img = render_attention_head_with_grad(g, 1, 2, 10);
  EXPECT_GT(img.width(), 2 * T * 10);
  EXPECT_THROW(capture_attention_grads(model, tok, "a"), std::runtime_error);
  fs::remove_all(dir);
}

TEST(AttentionMaps, ClearErrorsForBadPrompts) {
  const auto tok = data::CharTokenizer::from_text(data::decode_utf8("abc ", "t"));
  Generator gen(2);
  models::TransformerLM model = tiny_model(tok.vocab_size(), gen);
  EXPECT_THROW(capture_attention(model, tok, "abc"), std::invalid_argument) << "training mode";
  model.eval();
  auto message = [&](const std::string& text) {
    try {
      capture_attention(model, tok, text);
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(std::string(17, 'a')).find("17 characters but the model's context (block_size) is 16"),
            std::string::npos);
  EXPECT_NE(message("abz").find("'z' (U+007A)"), std::string::npos) << message("abz");
  EXPECT_NE(message("").find("empty"), std::string::npos);
  EXPECT_EQ(display_char("\n"), "↵");
  EXPECT_EQ(display_char(" "), "␣");
  EXPECT_EQ(display_char("é"), "é");
}

TEST(Heatmap, DivergingScaleIsWhiteAtZeroSymmetricWithValuesOnItsBar) {
  EXPECT_EQ(diverging_color(0.5), (Color{255, 255, 255}));
  EXPECT_GT(diverging_color(0.0).b, diverging_color(0.0).r) << "negative is blue";
  EXPECT_GT(diverging_color(1.0).r, diverging_color(1.0).b) << "positive is red";
  HeatmapOptions o;
  o.diverging = true, o.vmin = -2, o.vmax = 2, o.cell = 20;
  o.row_marks = {"", "*"};
  o.notes = {"* empty row: nothing to see"};
  const std::vector<double> v = {-2, 2, 0, 0};
  const HeatmapLayout L = heatmap_layout(2, 2, o);
  const Image img = render_heatmap(v, 2, 2, o);
  EXPECT_EQ(img.at(L.map_x + 10, L.map_y + 10), diverging_color(0.0));
  EXPECT_EQ(img.at(L.map_x + 30, L.map_y + 10), diverging_color(1.0));
  EXPECT_EQ(img.at(L.map_x + 10, L.map_y + 30), (Color{255, 255, 255})) << "zero is white";
  EXPECT_EQ(scale_color(0, o), (Color{255, 255, 255}));
  // The note is drawn under the map, the mark right of row 1, and the bar with its ticks.
  auto inked = [&](int x0, int y0, int x1, int y1) {
    size_t n = 0;
    for (int y = y0; y < y1; ++y)
      for (int x = x0; x < x1; ++x) n += img.at(x, y).r < 120 && img.at(x, y).g < 120 && img.at(x, y).b < 120;
    return n;
  };
  EXPECT_GT(inked(0, L.map_y + 2 * 20 + 4, img.width(), img.height()), 20u) << "the note";
  EXPECT_GT(inked(L.map_x + 40, L.map_y + 20, L.map_x + 52, L.map_y + 40), 3u) << "the mark";
  EXPECT_EQ(inked(L.map_x + 40, L.map_y, L.map_x + 52, L.map_y + 20), 0u) << "no mark on row 0";
  EXPECT_THROW(render_heatmap(v, 2, 2, [&] { auto b = o; b.row_marks = {"*"}; return b; }()), std::invalid_argument);
  const Image bar = render_colorbar(o, 150);
  EXPECT_EQ(bar.height(), 150);
  const Color top = bar.at(6 + 7, 6 + 1), bottom = bar.at(6 + 7, 150 - 6 - 2);  // kGap = 6 around the bar
  EXPECT_GT(top.r, top.b + 50) << "vmax at the top: red";
  EXPECT_GT(bottom.b, bottom.r + 50) << "vmin at the bottom: blue";
}

// dLoss/dScores is the softmax's backward of dLoss/dWeights: equal to what the engine's softmax
// node sends when the model runs its attention from primitive ops; its rows 0 (one visible key)
// and T−1 (the last query) are empty, and the image says why.
TEST(AttentionMaps, ScoreGradsAreWhatTheSoftmaxSendsAndEmptyRowsAreExplained) {
  GradsCase c;
  auto& [tok, gen, model, prompt] = c;
  const AttentionGrads g = capture_attention_grads(model, tok, prompt);
  const int64_t T = 9, H = 3;
  ASSERT_EQ(g.score_grads.size(), 2u);
  // The engine's own: the loss on the prompt with attention from primitive ops, and what each
  // softmax node sent back (layer 1 runs its backward first).
  std::vector<std::vector<double>> sent;
  {
    nn::UnfusedAttentionGuard primitive;
    const auto ids = tok.encode(std::string_view(prompt));
    const Tensor x = Tensor::from_vector(std::vector<int64_t>(ids.begin(), ids.end() - 1), {1, T - 1});
    const Tensor y = Tensor::from_vector(std::vector<int64_t>(ids.begin() + 1, ids.end()), {1, T - 1});
    const Tensor loss = model.loss(x, y);
    EXPECT_NEAR(loss.item(), g.loss, 1e-5);
    ObserveNodeBackwardGuard watch([&](const Node& n, const Tensor&, const Grads& out) {
      if (n.op == "softmax") sent.push_back(out[0].to_double_vector());
    });
    loss.backward();
    model.zero_grad();
  }
  ASSERT_EQ(sent.size(), 2u);
  for (int64_t l = 0; l < 2; ++l) {
    const auto dS = g.score_grads[static_cast<size_t>(l)].to_double_vector();  // (H, T, T)
    const auto& e = sent[static_cast<size_t>(1 - l)];                          // (H, T-1, T-1)
    double worst = 0, scale = 0;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T - 1; ++i)
        for (int64_t j = 0; j < T - 1; ++j) {
          const double a = dS[static_cast<size_t>((h * T + i) * T + j)], b = e[static_cast<size_t>((h * (T - 1) + i) * (T - 1) + j)];
          worst = std::max(worst, std::fabs(a - b)), scale = std::max(scale, std::fabs(b));
        }
    EXPECT_GT(scale, 0.0);
    EXPECT_LE(worst, 1e-5 * scale) << "layer " << l;
    for (int64_t h = 0; h < H; ++h) {
      EXPECT_NE(empty_score_row_reason(g, l, h, T - 1).find("the last query predicts"), std::string::npos);
      EXPECT_NE(empty_score_row_reason(g, l, h, 0).find("query 0 sees one key"), std::string::npos);
      for (int64_t q = 1; q < T - 1; ++q) EXPECT_EQ(empty_score_row_reason(g, l, h, q), "") << q;
    }
  }
  // Signed, symmetric: the cell of largest |dS| has an end colour of the diverging scale.
  const Image img = render_attention_head_with_grad(g, 1, 2, 10);
  EXPECT_GT(count_color(img, diverging_color(0.0)) + count_color(img, diverging_color(1.0)), 50u);
  const fs::path dir = temp_dir("score_grads");
  save_attention_grads((dir / "s.safetensors").string(), g, tok, "ckpt", /*scores=*/true);
  const SafeTensorsFile f = SafeTensorsFile::load((dir / "s.safetensors").string());
  EXPECT_EQ(f.metadata().at("format"), "attograd.attention_score_grads");
  EXPECT_EQ(f.get("layer0").to_double_vector(), g.score_grads[0].to_double_vector());
  fs::remove_all(dir);
}
