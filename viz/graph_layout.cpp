#include "viz/graph_layout.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace ag::viz {

namespace {

constexpr double kGap = 18, kLayerGap = 46, kMargin = 20, kBendWidth = 8;
constexpr int kOrderSweeps = 12, kPlaceSweeps = 40;

// Positions that stay in order with at least sep[i] between x[i] and x[i+1], as close as
// possible (weighted least squares) to `want`: pool-adjacent-violators on want − offset.
std::vector<double> fit_in_order(const std::vector<double>& want, const std::vector<double>& weight,
                                 const std::vector<double>& sep) {
  const size_t n = want.size();
  std::vector<double> offset(n, 0);
  for (size_t i = 1; i < n; ++i) offset[i] = offset[i - 1] + sep[i - 1];
  struct Block {
    double sum_wt, sum_w;
    size_t count;
  };
  std::vector<Block> blocks;
  for (size_t i = 0; i < n; ++i) {
    blocks.push_back({weight[i] * (want[i] - offset[i]), weight[i], 1});
    while (blocks.size() > 1) {
      const Block& b = blocks.back();
      const Block& a = blocks[blocks.size() - 2];
      if (a.sum_wt / a.sum_w <= b.sum_wt / b.sum_w) break;
      const Block merged{a.sum_wt + b.sum_wt, a.sum_w + b.sum_w, a.count + b.count};
      blocks.pop_back();
      blocks.back() = merged;
    }
  }
  std::vector<double> x;
  for (const Block& b : blocks)
    for (size_t k = 0; k < b.count; ++k) x.push_back(b.sum_wt / b.sum_w + offset[x.size()]);
  return x;
}

}  // namespace

GraphLayout layered_layout(const std::vector<double>& widths, const std::vector<double>& heights,
                           const std::vector<LayoutEdge>& edges) {
  const int n = static_cast<int>(widths.size());
  if (heights.size() != widths.size()) throw std::invalid_argument("layered_layout: one height per width");
  std::vector<std::vector<int>> inputs(n), consumers(n);
  for (const LayoutEdge& e : edges) {
    if (e.from < 0 || e.from >= n || e.to < 0 || e.to >= n || e.from == e.to)
      throw std::invalid_argument("layered_layout: bad edge " + std::to_string(e.from) + " -> " + std::to_string(e.to));
    inputs[e.to].push_back(e.from);
    consumers[e.from].push_back(e.to);
  }
  // ---- 1. layers: longest path to a sink ------------------------------------------------------
  GraphLayout out;
  out.layer.assign(n, 0);
  std::vector<int> waiting(n), ready;
  for (int v = 0; v < n; ++v)
    if ((waiting[v] = static_cast<int>(consumers[v].size())) == 0) ready.push_back(v);
  int done = 0;
  for (size_t k = 0; k < ready.size(); ++k, ++done) {
    const int v = ready[k];
    for (int u : inputs[v]) {
      out.layer[u] = std::max(out.layer[u], out.layer[v] + 1);
      if (--waiting[u] == 0) ready.push_back(u);
    }
  }
  if (done != n) throw std::invalid_argument("layered_layout: the graph has a cycle");
  const int top = n ? *std::max_element(out.layer.begin(), out.layer.end()) : 0;

  // ---- 2. the drawn nodes: real ones, then a bend point per layer an edge crosses -------------
  std::vector<int> vlayer(out.layer);
  std::vector<double> vwidth(widths), vweight(n, 1.0);
  std::vector<std::vector<int>> up(n), down(n);  // neighbours one layer above / below
  std::vector<std::vector<int>> chain(edges.size());  // per edge: from, bends..., to
  for (size_t i = 0; i < edges.size(); ++i) {
    int prev = edges[i].from;
    chain[i].push_back(prev);
    for (int l = out.layer[edges[i].from] - 1; l > out.layer[edges[i].to]; --l) {
      const int b = static_cast<int>(vlayer.size());
      vlayer.push_back(l), vwidth.push_back(kBendWidth), vweight.push_back(0.5), up.emplace_back(), down.emplace_back();
      down[prev].push_back(b), up[b].push_back(prev);
      chain[i].push_back(prev = b);
    }
    down[prev].push_back(edges[i].to), up[edges[i].to].push_back(prev);
    chain[i].push_back(edges[i].to);
  }
  const int vn = static_cast<int>(vlayer.size());

  // ---- 3. order within each layer ------------------------------------------------------------------
  std::vector<std::vector<int>> rows(top + 1);
  {  // first order: depth-first from the sinks, inputs in argument order
    std::vector<char> seen(vn, 0);
    std::vector<int> stack;
    for (int s = 0; s < n; ++s) {
      if (out.layer[s] != 0 || seen[s]) continue;
      stack.push_back(s);
      while (!stack.empty()) {
        const int v = stack.back();
        stack.pop_back();
        if (seen[v]) continue;
        seen[v] = 1;
        rows[vlayer[v]].push_back(v);
        for (auto it = up[v].rbegin(); it != up[v].rend(); ++it)
          if (!seen[*it]) stack.push_back(*it);
      }
    }
    for (int v = 0; v < vn; ++v)
      if (!seen[v]) rows[vlayer[v]].push_back(v);  // unreachable from a sink: cannot happen in a DAG
  }
  std::vector<double> pos(vn);
  auto number = [&] {
    for (const auto& r : rows)
      for (size_t i = 0; i < r.size(); ++i) pos[r[i]] = static_cast<double>(i);
  };
  number();
  auto sort_by = [&](std::vector<int>& row, const std::vector<std::vector<int>>& nbr) {
    std::vector<std::pair<double, int>> key;
    for (int v : row) {
      double s = 0;
      for (int u : nbr[v]) s += pos[u];
      key.push_back({nbr[v].empty() ? pos[v] : s / nbr[v].size(), v});
    }
    std::stable_sort(key.begin(), key.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < row.size(); ++i) row[i] = key[i].second, pos[row[i]] = static_cast<double>(i);
  };
  for (int it = 0; it < kOrderSweeps; ++it) {
    for (int l = top - 1; l >= 0; --l) sort_by(rows[l], up);
    for (int l = 1; l <= top; ++l) sort_by(rows[l], down);
  }

  // ---- 4. x positions -------------------------------------------------------------------------------
  std::vector<double> x(vn);
  for (const auto& r : rows) {
    double at = 0;
    for (int v : r) x[v] = at + vwidth[v] / 2, at += vwidth[v] + kGap;
  }
  for (int it = 0; it < kPlaceSweeps; ++it) {
    const bool downwards = it % 2 == 0;
    for (int k = 0; k <= top; ++k) {
      const int l = downwards ? top - k : k;
      const auto& r = rows[l];
      if (r.empty()) continue;
      std::vector<double> want, weight, sep;
      for (size_t i = 0; i < r.size(); ++i) {
        const int v = r[i];
        double s = 0;
        int c = 0;
        for (int u : up[v]) s += x[u], ++c;
        for (int u : down[v]) s += x[u], ++c;
        want.push_back(c ? s / c : x[v]);
        weight.push_back(vweight[v]);
        if (i + 1 < r.size()) sep.push_back((vwidth[v] + vwidth[r[i + 1]]) / 2 + kGap);
      }
      const auto fitted = fit_in_order(want, weight, sep);
      for (size_t i = 0; i < r.size(); ++i) x[r[i]] = fitted[i];
    }
  }
  double left = 0, right = 0, tallest = 0;
  for (int v = 0; v < vn; ++v) {
    left = std::min(left, x[v] - vwidth[v] / 2);
    right = std::max(right, x[v] + vwidth[v] / 2);
  }
  for (double h : heights) tallest = std::max(tallest, h);
  const double row_height = tallest + kLayerGap;
  std::vector<double> y(vn);
  for (int v = 0; v < vn; ++v) {
    x[v] += kMargin - left;
    y[v] = kMargin + (top - vlayer[v]) * row_height + tallest / 2;
  }
  out.x.assign(x.begin(), x.begin() + n);
  out.y.assign(y.begin(), y.begin() + n);
  out.width = right - left + 2 * kMargin;
  out.height = (top + 1) * row_height - kLayerGap + 2 * kMargin;
  for (const auto& c : chain) {
    std::vector<std::pair<double, double>> pts;
    pts.push_back({x[c.front()], y[c.front()] + heights[c.front()] / 2});
    for (size_t k = 1; k + 1 < c.size(); ++k) pts.push_back({x[c[k]], y[c[k]]});
    pts.push_back({x[c.back()], y[c.back()] - heights[c.back()] / 2});
    out.edge_points.push_back(std::move(pts));
  }
  return out;
}

}  // namespace ag::viz
