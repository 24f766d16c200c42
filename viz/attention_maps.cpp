#include "viz/attention_maps.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/safetensors.h"
#include "viz/font.h"
#include "viz/heatmap.h"

namespace ag::viz {

namespace {
// The model's attention introspection, or a clear error for a model without attention.
const models::AttentionIntrospection& attention_of(const models::LanguageModel& model) {
  const models::AttentionIntrospection* attention = model.attention();
  if (!attention)
    throw std::runtime_error("the model '" + model.model_config().name + "' (" + model.summary() +
                             ") has no attention weights to show");
  return *attention;
}

// Checks the prompt and fills maps' text and characters; returns the token ids.
std::vector<int64_t> prompt_ids(const models::LanguageModel& model, const data::CharTokenizer& tok, std::string_view text,
                                AttentionMaps& maps) {
  if (model.is_training()) throw std::invalid_argument("capture_attention: the model must be in eval mode (dropout)");
  const std::vector<int64_t> ids = tok.encode(text, "text");
  const int64_t T = static_cast<int64_t>(ids.size()), block = model.block_size();
  if (T == 0) throw std::runtime_error("text: is empty; give at least one character");
  if (T > block)
    throw std::runtime_error("text: has " + std::to_string(T) + " characters but the model's context (block_size) is " +
                             std::to_string(block) + "; shorten it");
  maps.text = std::string(text);
  for (const auto& cp : data::decode_utf8(text, "text")) maps.chars.push_back(data::encode_utf8(cp));
  return ids;
}
}  // namespace

AttentionMaps capture_attention(const models::LanguageModel& model, const data::CharTokenizer& tok, std::string_view text) {
  const models::AttentionIntrospection& attention = attention_of(model);
  AttentionMaps maps;
  const std::vector<int64_t> ids = prompt_ids(model, tok, text, maps);
  const int64_t T = static_cast<int64_t>(ids.size());
  NoGradGuard no_grad;
  std::vector<Tensor> weights;
  attention.forward_with_attention(Tensor::from_vector(ids, {1, T}), weights);
  for (const Tensor& w : weights) maps.layers.push_back(squeeze(w, 0).to(DType::Float32).contiguous());  // (H, T, T)
  return maps;
}

AttentionGrads capture_attention_grads(const models::LanguageModel& model, const data::CharTokenizer& tok,
                                       std::string_view text) {
  const models::AttentionIntrospection& attention = attention_of(model);
  AttentionGrads out;
  const std::vector<int64_t> ids = prompt_ids(model, tok, text, out.maps);
  const int64_t T = static_cast<int64_t>(ids.size());
  if (T < 2) throw std::runtime_error("text: --grads needs at least 2 characters (each one predicts the next)");
  EnableGradGuard grad_on;  // the parameters require grad, so the forward pass is recorded
  std::vector<Tensor> weights;  // (1, H, T, T) per layer, on the loss's path
  const Tensor logits = attention.forward_with_attention(Tensor::from_vector(ids, {1, T}), weights);  // (1, T, V)
  const int64_t V = logits.size(-1);
  // loss = mean over positions t < T-1 of −log p(ids[t+1] | ids[..t])
  const Tensor pred = reshape(narrow(logits, 1, 0, T - 1), {T - 1, V});
  const Tensor loss = cross_entropy(pred, Tensor::from_vector(std::vector<int64_t>(ids.begin() + 1, ids.end()), {T - 1}));
  out.loss = loss.item();
  const std::vector<Tensor> grads = grad({loss}, weights, {}, {.allow_unused = true});
  for (size_t i = 0; i < weights.size(); ++i) {
    out.maps.layers.push_back(squeeze(weights[i], 0).detach().to(DType::Float32).contiguous());
    const Tensor g = grads[i].defined() ? grads[i] : Tensor::zeros(weights[i].shape(), weights[i].dtype());
    out.grads.push_back(squeeze(g, 0).to(DType::Float32).contiguous());
    // The softmax backward, row by row, in double from the model's own A and dA:
    // dS = A ⊙ (dA − Σ_j A_j dA_j)
    const auto A = weights[i].to_double_vector(), dA = g.to_double_vector();  // (1, H, T, T)
    std::vector<double> dS(A.size());
    for (size_t r = 0; r < A.size(); r += static_cast<size_t>(T)) {
      double dot = 0;
      for (int64_t j = 0; j < T; ++j) dot += A[r + j] * dA[r + j];
      for (int64_t j = 0; j < T; ++j) dS[r + j] = A[r + j] * (dA[r + j] - dot);
    }
    out.score_grads.push_back(Tensor::from_vector(dS, out.grads.back().shape(), DType::Float32));
  }
  return out;
}

void save_attention_grads(const std::string& path, const AttentionGrads& g, const data::CharTokenizer& tok,
                          const std::string& checkpoint, bool scores) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  const std::vector<Tensor>& which = scores ? g.score_grads : g.grads;
  for (size_t i = 0; i < which.size(); ++i) tensors.emplace_back("layer" + std::to_string(i), which[i]);
  char loss[32];
  std::snprintf(loss, sizeof loss, "%.9g", g.loss);
  const std::map<std::string, std::string> md = {{"format", scores ? "attograd.attention_score_grads" : "attograd.attention_grads"},
                                                 {"text", nlohmann::json(g.maps.text).dump()},
                                                 {"chars", nlohmann::json(g.maps.chars).dump()},
                                                 {"vocab", nlohmann::json(tok.chars()).dump()},
                                                 {"n_layer", std::to_string(g.grads.size())},
                                                 {"n_head", std::to_string(g.maps.n_head())},
                                                 {"loss", loss},
                                                 {"checkpoint", checkpoint}};
  save_safetensors(path, tensors, md);
}

void save_attention(const std::string& path, const AttentionMaps& maps, const data::CharTokenizer& tok,
                    const std::string& checkpoint) {
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (size_t i = 0; i < maps.layers.size(); ++i) tensors.emplace_back("layer" + std::to_string(i), maps.layers[i]);
  const std::map<std::string, std::string> md = {{"format", "attograd.attention"},
                                                 {"text", nlohmann::json(maps.text).dump()},
                                                 {"chars", nlohmann::json(maps.chars).dump()},
                                                 {"vocab", nlohmann::json(tok.chars()).dump()},
                                                 {"n_layer", std::to_string(maps.layers.size())},
                                                 {"n_head", std::to_string(maps.n_head())},
                                                 {"checkpoint", checkpoint}};
  save_safetensors(path, tensors, md);
}

std::string display_char(const std::string& ch) {
  if (ch == "\n") return "↵";
  if (ch == " ") return "␣";
  if (ch == "\t") return "⇥";
  if (ch.size() == 1 && (static_cast<unsigned char>(ch[0]) < 0x20 || ch[0] == 0x7f)) return "·";
  return ch;
}

namespace {
HeatmapOptions head_options(const AttentionMaps& maps, int64_t layer, int64_t head, int cell) {
  HeatmapOptions o;
  o.title = "layer " + std::to_string(layer) + ", head " + std::to_string(head);
  o.row_title = "query";
  o.col_title = "key";
  for (const auto& c : maps.chars) o.row_labels.push_back(display_char(c));
  o.col_labels = o.row_labels;
  const int64_t T = maps.length();
  o.masked.resize(static_cast<size_t>(T * T));
  for (int64_t q = 0; q < T; ++q)
    for (int64_t k = q + 1; k < T; ++k) o.masked[static_cast<size_t>(q * T + k)] = true;
  o.cell = cell;
  o.gamma = 0.5;  // colour ∝ √weight, so that weights spread over many keys still show
  return o;
}

std::vector<double> head_values(const AttentionMaps& maps, int64_t layer, int64_t head) {
  if (layer < 0 || layer >= static_cast<int64_t>(maps.layers.size()) || head < 0 || head >= maps.n_head())
    throw std::out_of_range("attention maps: no layer " + std::to_string(layer) + " head " + std::to_string(head));
  const int64_t T = maps.length();
  const auto all = maps.layers[layer].to_double_vector();
  return std::vector<double>(all.begin() + head * T * T, all.begin() + (head + 1) * T * T);
}
}  // namespace

Image render_attention_head(const AttentionMaps& maps, int64_t layer, int64_t head, int cell) {
  const int T = static_cast<int>(maps.length());
  return render_heatmap(head_values(maps, layer, head), T, T, head_options(maps, layer, head, cell));
}

namespace {
// The panels of layer l's heads, as in the grid.
void add_grid_panels(const AttentionMaps& maps, int64_t l, int cell, std::vector<Image>& panels) {
  const int T = static_cast<int>(maps.length());
  if (cell <= 0) cell = std::clamp(240 / std::max(T, 1), 4, 16);
  for (int64_t h = 0; h < maps.n_head(); ++h) {
    HeatmapOptions o = head_options(maps, l, h, cell);
    o.row_title = o.col_title = "";
    if (cell < 9) o.row_labels.clear(), o.col_labels.clear();  // too small to read
    o.colorbar = false;  // all grid panels share the scale: one bar right of the grid
    panels.push_back(render_heatmap(head_values(maps, l, h), T, T, o));
  }
}

// img with `right` pasted to its right, top-aligned, on white.
Image beside(const Image& img, const Image& right) {
  Image out(img.width() + right.width(), std::max(img.height(), right.height()));
  out.paste(img, 0, 0);
  out.paste(right, img.width(), 0);
  return out;
}

// A grid of weight panels and the colour bar they share (the scale of head_options).
Image with_weights_colorbar(const AttentionMaps& maps, const Image& grid) {
  return beside(grid, render_colorbar(head_options(maps, 0, 0, 0), std::min(grid.height(), 360)));
}
}  // namespace

Image render_attention_grid(const AttentionMaps& maps, int cell) {
  std::vector<Image> panels;
  for (int64_t l = 0; l < static_cast<int64_t>(maps.layers.size()); ++l) add_grid_panels(maps, l, cell, panels);
  return with_weights_colorbar(maps, tile(panels, static_cast<int>(maps.n_head())));
}

Image render_attention_layer(const AttentionMaps& maps, int64_t layer, int cell) {
  if (layer < 0 || layer >= static_cast<int64_t>(maps.layers.size()))
    throw std::out_of_range("attention maps: no layer " + std::to_string(layer));
  std::vector<Image> panels;
  add_grid_panels(maps, layer, cell, panels);
  return with_weights_colorbar(maps, tile(panels, static_cast<int>(maps.n_head())));
}

std::string empty_score_row_reason(const AttentionGrads& g, int64_t layer, int64_t head, int64_t query) {
  const int64_t T = g.maps.length();
  if (layer < 0 || layer >= static_cast<int64_t>(g.score_grads.size()) || head < 0 || head >= g.maps.n_head() ||
      query < 0 || query >= T)
    throw std::out_of_range("attention grads: no layer " + std::to_string(layer) + " head " + std::to_string(head) +
                            " query " + std::to_string(query));
  const auto all = g.score_grads[static_cast<size_t>(layer)].to_double_vector();
  for (int64_t k = 0; k < T; ++k)
    if (all[static_cast<size_t>((head * T + query) * T + k)] != 0) return "";
  if (query == T - 1) return "the last query predicts the character after the text: no loss term, no gradient";
  const int64_t visible = query + 1;  // causal: keys 0 .. query
  if (visible == 0) return "the row is masked: no key to attend to";
  if (visible == 1)
    return "query " + std::to_string(query) + " sees one key: its weight is 1 whatever the score, so no gradient";
  return "no gradient reaches this query";
}

namespace {
// One head's signed dLoss/dScores.
std::vector<double> score_grad_values(const AttentionGrads& g, int64_t layer, int64_t head, double* max_abs) {
  const int64_t T = g.maps.length();
  const auto all = g.score_grads.at(static_cast<size_t>(layer)).to_double_vector();
  std::vector<double> v(all.begin() + head * T * T, all.begin() + (head + 1) * T * T);
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  *max_abs = m;
  return v;
}

// The diverging scale ±max_abs, and a mark per empty row with its reason as a note. Distinct
// reasons get the marks *, †, ‡, § in order.
HeatmapOptions score_grad_options(const AttentionGrads& g, int64_t layer, int64_t head, int cell, double max_abs) {
  HeatmapOptions o = head_options(g.maps, layer, head, cell);
  o.title = "layer " + std::to_string(layer) + ", head " + std::to_string(head) + ": dLoss/dScores (signed)";
  o.gamma = 1;
  o.diverging = true;
  o.vmax = max_abs > 0 ? max_abs : 1;
  o.vmin = -o.vmax;
  static const char* const kMarks[] = {"*", "†", "‡", "§"};
  std::vector<std::string> reasons;
  const int64_t T = g.maps.length();
  o.row_marks.assign(static_cast<size_t>(T), "");
  for (int64_t q = 0; q < T; ++q) {
    const std::string why = empty_score_row_reason(g, layer, head, q);
    if (why.empty()) continue;
    auto it = std::find(reasons.begin(), reasons.end(), why);
    if (it == reasons.end()) it = reasons.insert(reasons.end(), why);
    const size_t k = std::min<size_t>(static_cast<size_t>(it - reasons.begin()), 3);
    o.row_marks[static_cast<size_t>(q)] = kMarks[k];
  }
  for (size_t k = 0; k < reasons.size(); ++k) o.notes.push_back(std::string(kMarks[std::min<size_t>(k, 3)]) + " empty row: " + reasons[k]);
  return o;
}
}  // namespace

Image render_attention_head_with_grad(const AttentionGrads& g, int64_t layer, int64_t head, int cell) {
  const int T = static_cast<int>(g.maps.length());
  double m = 0;
  const auto gv = score_grad_values(g, layer, head, &m);
  return tile({render_attention_head(g.maps, layer, head, cell),
               render_heatmap(gv, T, T, score_grad_options(g, layer, head, cell, m))},
              2);
}

Image render_attention_grad_grid(const AttentionGrads& g, int cell) {
  const int T = static_cast<int>(g.maps.length());
  if (cell <= 0) cell = std::clamp(240 / std::max(T, 1), 4, 16);
  std::vector<Image> panels;
  std::vector<std::string> notes;  // the marks' meanings, once under the grid
  for (int64_t l = 0; l < static_cast<int64_t>(g.maps.layers.size()); ++l)
    for (int64_t h = 0; h < g.maps.n_head(); ++h) {
      double m = 0;
      const auto gv = score_grad_values(g, l, h, &m);
      for (int which = 0; which < 2; ++which) {
        HeatmapOptions o = which == 0 ? head_options(g.maps, l, h, cell) : score_grad_options(g, l, h, cell, m);
        if (which == 1) {
          o.title = "dLoss/dScores";
          for (const auto& n : o.notes)
            if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
          o.notes.clear();
        }
        o.row_title = o.col_title = "";
        if (cell < 9) o.row_labels.clear(), o.col_labels.clear();
        panels.push_back(render_heatmap(which == 0 ? head_values(g.maps, l, h) : gv, T, T, o));  // each with its bar
      }
    }
  const Image grid = tile(panels, static_cast<int>(2 * g.maps.n_head()));
  if (notes.empty()) return grid;
  const Font& f = Font::standard();
  const double line = f.ascent(12) + f.descent(12) + 2;
  double w = 0;
  for (const auto& n : notes) w = std::max(w, f.width(n, 12));
  Image out(std::max(grid.width(), static_cast<int>(w) + 16), grid.height() + static_cast<int>(notes.size() * line) + 8);
  out.paste(grid, 0, 0);
  for (size_t i = 0; i < notes.size(); ++i)
    f.draw(out, 8, grid.height() + i * line, notes[i], 12, Color{40, 40, 40}, HAlign::Left, VAlign::Top);
  return out;
}

HeadStats head_stats(const AttentionMaps& maps, int64_t layer, int64_t head) {
  const auto v = head_values(maps, layer, head);
  const int64_t T = maps.length();
  HeadStats s;
  for (int64_t q = 0; q < T; ++q)
    for (int64_t k = 0; k <= q; ++k) {
      const double p = v[static_cast<size_t>(q * T + k)];
      if (p > 0) s.entropy_bits -= p * std::log2(p);
      s.mean_distance += p * static_cast<double>(q - k);
    }
  s.entropy_bits /= static_cast<double>(T);
  s.mean_distance /= static_cast<double>(T);
  return s;
}

}  // namespace ag::viz
