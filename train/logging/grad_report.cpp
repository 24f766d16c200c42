#include "train/logging/grad_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

namespace ag::train {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double sum_squares(const Tensor& t) {
  double s = 0;
  for (double v : t.to_double_vector()) s += v * v;
  return s;
}

std::string num(double v, const char* fmt = "%.3e") {
  if (std::isnan(v)) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}
}  // namespace

double GradNorms::ratio() const { return value_norm > 0 && !std::isnan(grad_norm) ? grad_norm / value_norm : kNaN; }

std::string layer_of(const std::string& name) {
  const size_t dot = name.find('.');
  if (dot == std::string::npos) return name;
  if (name.compare(0, dot, "blocks") == 0) {
    const size_t dot2 = name.find('.', dot + 1);
    return name.substr(0, dot2);
  }
  return name.substr(0, dot);
}

GradReport grad_report(const std::vector<std::pair<std::string, Tensor>>& named) {
  GradReport r;
  std::map<std::string, size_t> layer_index;
  std::vector<double> layer_v2, layer_g2;
  double total_v2 = 0, total_g2 = 0;
  r.total.name = "total";
  r.total.tensors = 0;
  for (const auto& [name, p] : named) {
    GradNorms row;
    row.name = name;
    row.shape = p.shape();
    row.numel = p.numel();
    const double v2 = sum_squares(p.detach());
    const Tensor g = p.grad();
    const double g2 = g.defined() ? sum_squares(g) : 0;
    row.value_norm = std::sqrt(v2);
    row.grad_norm = g.defined() ? std::sqrt(g2) : kNaN;
    if (!g.defined()) ++r.without_grad;
    r.params.push_back(row);

    const std::string layer = layer_of(name);
    auto [it, fresh] = layer_index.emplace(layer, r.layers.size());
    if (fresh) {
      GradNorms l;
      l.name = layer;
      l.tensors = 0;
      r.layers.push_back(l);
      layer_v2.push_back(0), layer_g2.push_back(0);
    }
    GradNorms& l = r.layers[it->second];
    l.numel += row.numel, ++l.tensors;
    layer_v2[it->second] += v2, layer_g2[it->second] += g2;
    r.total.numel += row.numel, ++r.total.tensors;
    total_v2 += v2, total_g2 += g2;
  }
  for (size_t i = 0; i < r.layers.size(); ++i)
    r.layers[i].value_norm = std::sqrt(layer_v2[i]), r.layers[i].grad_norm = std::sqrt(layer_g2[i]);
  r.total.value_norm = std::sqrt(total_v2);
  r.total.grad_norm = std::sqrt(total_g2);
  for (size_t i = 0; i < r.params.size(); ++i) {
    const double q = r.params[i].ratio();
    if (std::isfinite(q) && (r.max_ratio < 0 || q > r.params[r.max_ratio].ratio())) r.max_ratio = static_cast<int64_t>(i);
  }
  return r;
}

std::string format_grad_report(const GradReport& r) {
  size_t wn = 9, ws = 5;  // "parameter", "shape"
  for (const auto& p : r.params) wn = std::max(wn, p.name.size()), ws = std::max(ws, shape_str(p.shape).size());
  std::string out;
  char line[512];
  auto row = [&](const std::string& name, const std::string& shape, const GradNorms& n) {
    std::snprintf(line, sizeof line, "%-*s  %-*s  %10s  %10s  %10s\n", static_cast<int>(wn), name.c_str(),
                  static_cast<int>(ws), shape.c_str(), num(n.value_norm).c_str(), num(n.grad_norm).c_str(),
                  num(n.ratio()).c_str());
    out += line;
  };
  std::snprintf(line, sizeof line, "%-*s  %-*s  %10s  %10s  %10s\n", static_cast<int>(wn), "parameter",
                static_cast<int>(ws), "shape", "|value|", "|grad|", "|g|/|v|");
  out += line;
  for (const auto& p : r.params) row(p.name, shape_str(p.shape), p);
  out += "\n";
  std::snprintf(line, sizeof line, "%-*s  %-*s  %10s  %10s  %10s\n", static_cast<int>(wn), "layer", static_cast<int>(ws),
                "values", "|value|", "|grad|", "|g|/|v|");
  out += line;
  for (const auto& l : r.layers) row(l.name, std::to_string(l.numel), l);
  row(r.total.name, std::to_string(r.total.numel), r.total);
  if (r.without_grad) out += std::to_string(r.without_grad) + " parameter(s) received no gradient (n/a)\n";
  return out;
}

std::string grad_report_summary(const GradReport& r) {
  std::string s = "grad norm " + num(r.total.grad_norm, "%.4g") + " (|value| " + num(r.total.value_norm, "%.4g") + ")";
  if (r.max_ratio >= 0) {
    const GradNorms& p = r.params[static_cast<size_t>(r.max_ratio)];
    s += "; largest |grad|/|value| " + num(p.ratio(), "%.2e") + " in " + p.name;
  }
  if (r.without_grad) s += "; " + std::to_string(r.without_grad) + " without gradient";
  return s;
}

GradReportFile grad_report_file(const std::vector<std::pair<std::string, Tensor>>& named_params, int64_t step,
                                double loss) {
  const GradReport rep = grad_report(named_params);
  char head[200];
  std::snprintf(head, sizeof head,
                "gradients of step %ld (the last before the evaluation at iter %ld), before clipping; loss %.4f\n\n",
                static_cast<long>(step), static_cast<long>(step + 1), loss);
  return {"grad_report_iter" + std::to_string(step + 1) + ".txt", head + format_grad_report(rep), grad_report_summary(rep)};
}

}  // namespace ag::train
