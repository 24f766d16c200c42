#include "viz/explore_html.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "viz/graph_layout.h"
#include "viz/html_escape.h"

namespace ag::viz {

namespace {

#include "explore_assets.inc"  // kExploreJs, kExploreCss (viz/explore.js, viz/explore.css)

std::string base64(const unsigned char* p, size_t n) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t b = (uint32_t(p[i]) << 16) | (i + 1 < n ? uint32_t(p[i + 1]) << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    out += k[(b >> 18) & 63];
    out += k[(b >> 12) & 63];
    out += i + 1 < n ? k[(b >> 6) & 63] : '=';
    out += i + 2 < n ? k[b & 63] : '=';
  }
  return out;
}

// x in [-1, 1] as IEEE half precision (round to nearest even; tiny values become subnormal or 0).
uint16_t to_half(float x) {
  uint32_t f;
  std::memcpy(&f, &x, 4);
  const uint32_t sign = (f >> 16) & 0x8000u, abs = f & 0x7fffffffu;
  if (abs >= 0x47800000u) return static_cast<uint16_t>(sign | 0x7c00u);  // beyond half's range (not for |x| <= 1)
  if (abs < 0x38800000u) {  // a subnormal half: round abs·2^24 to an integer
    const float a = std::fabs(x) * 16777216.0f;
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a)));
  }
  const uint32_t mant = abs & 0x7fffffu, exp = (abs >> 23) - 112;  // rebias 127 -> 15
  uint32_t h = (exp << 10) | (mant >> 13);
  const uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // ties to even; a carry moves into the exponent
  return static_cast<uint16_t>(sign | h);
}

// Each distinct tensor once, in "tensors"; nodes refer to it by index.
class TensorTable {
 public:
  nlohmann::json refer(const Tensor& t) {
    if (!t.defined()) return nullptr;
    const std::vector<double> v = t.to_double_vector();
    std::string key(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(double));
    for (int64_t d : t.shape()) key += "," + std::to_string(d);
    auto it = index_.find(key);
    if (it != index_.end()) return it->second;
    const int id = static_cast<int>(json_.size());
    json_.push_back(describe(t.shape(), v));
    index_.emplace(std::move(key), id);
    return id;
  }
  nlohmann::json take() { return std::move(json_); }

 private:
  static nlohmann::json describe(const Shape& shape, const std::vector<double>& v) {
    nlohmann::json j;
    j["shape"] = shape;
    j["numel"] = v.size();
    double s2 = 0, lo = v.empty() ? 0 : v[0], hi = lo;
    size_t at = 0;
    for (size_t i = 0; i < v.size(); ++i) {
      s2 += v[i] * v[i], lo = std::min(lo, v[i]), hi = std::max(hi, v[i]);
      if (std::fabs(v[i]) > std::fabs(v[at])) at = i;
    }
    j["norm"] = std::sqrt(s2), j["min"] = lo, j["max"] = hi;
    j["amax"] = v.empty() ? 0.0 : v[at];
    std::vector<int64_t> idx(shape.size());  // the multi-index of entry `at`
    size_t rest = at;
    for (size_t d = shape.size(); d-- > 0;) idx[d] = static_cast<int64_t>(rest % shape[d]), rest /= shape[d];
    j["amax_at"] = idx;
    // The grid: leading dims flattened into rows, the last dim as columns; pooled in blocks.
    const int64_t cols = shape.empty() ? 1 : shape.back();
    const int64_t rows = cols ? static_cast<int64_t>(v.size()) / cols : 0;
    const int64_t br = std::max<int64_t>(1, (rows + kMaxGridRows - 1) / kMaxGridRows);
    const int64_t bc = std::max<int64_t>(1, (cols + kMaxGridCols - 1) / kMaxGridCols);
    const int64_t gr = (rows + br - 1) / br, gc = (cols + bc - 1) / bc;
    std::vector<double> grid(static_cast<size_t>(gr * gc), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        double& cell = grid[static_cast<size_t>((r / br) * gc + c / bc)];
        const double x = v[static_cast<size_t>(r * cols + c)];
        if (std::fabs(x) > std::fabs(cell)) cell = x;
      }
    // Half precision relative to the largest magnitude: 3 significant digits for the picture
    // and its readout, at half the bytes of float32 (the exact numbers are the statistics).
    const double scale = v.empty() || !std::isfinite(v[at]) || v[at] == 0 ? 1.0 : std::fabs(v[at]);
    std::vector<uint16_t> half(grid.size());
    for (size_t i = 0; i < grid.size(); ++i) half[i] = to_half(static_cast<float>(grid[i] / scale));
    j["rows"] = rows, j["cols"] = cols, j["gr"] = gr, j["gc"] = gc, j["br"] = br, j["bc"] = bc, j["scale"] = scale;
    j["data"] = base64(reinterpret_cast<const unsigned char*>(half.data()), half.size() * sizeof(uint16_t));
    if (v.size() <= static_cast<size_t>(kMaxTableValues)) j["values"] = v;
    return j;
  }
  nlohmann::json json_ = nlohmann::json::array();
  std::unordered_map<std::string, int> index_;
};

// The label of a node's box: its op or name, and its shape.
std::string shape_text(const Shape& s) {
  std::string t = "[";
  for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
  return t + "]";
}

}  // namespace

std::string explore_json(const ExploreCapture& cap) {
  // Layout: a box per node, sized to its label (the page draws 11 px monospace text).
  std::vector<double> widths, heights;
  std::vector<LayoutEdge> edges;
  std::vector<int> edge_arg;
  for (size_t i = 0; i < cap.nodes.size(); ++i) {
    const ExploreNode& n = cap.nodes[i];
    const size_t chars = std::max(n.op.size(), shape_text(n.shape).size());  // bytes: near enough for ASCII names
    widths.push_back(std::max(60.0, 6.8 * static_cast<double>(chars) + 16));
    heights.push_back(34);
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (n.inputs[k] >= 0) edges.push_back({n.inputs[k], static_cast<int>(i)}), edge_arg.push_back(static_cast<int>(k));
  }
  const GraphLayout L = layered_layout(widths, heights, edges);

  TensorTable tensors;
  nlohmann::json nodes = nlohmann::json::array();
  for (size_t i = 0; i < cap.nodes.size(); ++i) {
    const ExploreNode& n = cap.nodes[i];
    nlohmann::json j;
    j["id"] = i, j["leaf"] = n.leaf, j["op"] = n.op, j["shape"] = n.shape, j["dtype"] = dtype_name(n.dtype);
    j["x"] = L.x[i], j["y"] = L.y[i], j["w"] = widths[i], j["h"] = heights[i];
    j["value"] = tensors.refer(n.value);
    j["grad"] = tensors.refer(n.grad);
    if (!n.leaf) {
      j["where"] = n.where;
      if (n.formula) {
        const std::string f = n.formula->file;
        j["formula"] = {{"text", n.formula->text}, {"kind", n.formula->kind}, {"at", f + ":" + std::to_string(n.formula->text_line)}};
      } else {
        j["formula"] = nullptr;
      }
      j["reference"] = n.reference ? nlohmann::json(n.reference->name) : nlohmann::json(nullptr);
      j["inputs"] = n.inputs;
      nlohmann::json sent = nlohmann::json::array();
      for (const Tensor& s : n.sent) sent.push_back(tensors.refer(s));
      j["sent"] = sent;
      j["step"] = n.step;
      if (n.fd_checked)
        j["fd"] = {{"lhs", n.fd_lhs}, {"rhs", n.fd_rhs}, {"rel", n.fd_relative_error()},
                   {"ok", n.fd_relative_error() <= cap.fd_tolerance()}};
      else
        j["fd"] = nullptr;
    } else {
      j["leaf_sum_diff"] = n.leaf_sum_diff;
    }
    nodes.push_back(std::move(j));
  }
  nlohmann::json edge_json = nlohmann::json::array();
  for (size_t e = 0; e < edges.size(); ++e)
    edge_json.push_back({{"from", edges[e].from}, {"to", edges[e].to}, {"arg", edge_arg[e]}, {"points", L.edge_points[e]}});
  nlohmann::json j;
  j["title"] = cap.title, j["dtype"] = dtype_name(cap.dtype), j["loss"] = cap.loss;
  j["fd_step"] = cap.fd_step, j["fd_note"] = cap.fd_note, j["fd_tolerance"] = cap.fd_tolerance();
  j["fd_failures"] = cap.fd_failures();
  j["width"] = L.width, j["height"] = L.height;
  j["nodes"] = std::move(nodes), j["edges"] = std::move(edge_json), j["order"] = cap.order, j["root"] = 0;
  j["tensors"] = tensors.take();
  nlohmann::json reference = nlohmann::json::object();  // each section the nodes name, once
  for (const ExploreNode& n : cap.nodes)
    if (n.reference) reference[n.reference->name] = {{"at", n.reference->at()}, {"text", n.reference->text}};
  j["reference"] = std::move(reference);
  return j.dump();
}

std::string explore_html(const ExploreCapture& cap, const ExplorePageOptions& opt) {
  // No '<', '>' or '&' of the data reaches the script elements as itself (viz/html_escape.h).
  const std::string data = json_for_script(explore_json(cap));
  const std::string command = json_for_script(nlohmann::json(opt.command).dump());
  std::string page;
  page += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>attograd explore: ";
  page += html_text(cap.title);
  page += "</title>\n<style>\n";
  page += kExploreCss;
  page += "</style></head>\n<body>\n"
          "<header><div id=\"title\"></div><div id=\"controls\">"
          "<button id=\"prev\" title=\"previous backward step (← or p)\">◀ prev</button>"
          "<button id=\"next\" title=\"next backward step (→ or n)\">next ▶</button>"
          "<span id=\"step\"></span>"
          "<label>path to <select id=\"param\"><option value=\"\">(pick a leaf)</option></select></label>"
          "<button id=\"zoom-out\" title=\"zoom out\">−</button><button id=\"zoom-in\" title=\"zoom in\">+</button>"
          "<button id=\"fit\" title=\"fit the graph to the window\">fit</button>"
          "</div></header>\n<main><div id=\"graph-pane\"><svg id=\"graph\" xmlns=\"http://www.w3.org/2000/svg\"></svg></div>"
          "<aside id=\"panel\"><p class=\"hint\">Click a node, or step through the backward pass with → and ←.</p></aside></main>\n"
          "<script type=\"application/json\" id=\"data\">";
  page += data;
  page += "</script>\n<script type=\"application/json\" id=\"command\">";
  page += command;
  page += "</script>\n<script>\n";
  page += kExploreJs;
  page += "</script>\n</body></html>\n";
  return page;
}

}  // namespace ag::viz
