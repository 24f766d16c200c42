#include "viz/graph_svg.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <vector>

#include "viz/graph_layout.h"
#include "viz/html_escape.h"

namespace ag::viz {

namespace {

// Box sizes from the label's length: the SVG has no text measurement, so an average glyph
// width of the sans-serif font at 11 px is assumed (labels are short: an op and a shape).
constexpr double kGlyph = 6.6, kLine = 14.0, kPadX = 10.0, kPadY = 7.0, kTitle = 24.0;

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

}  // namespace

std::string graph_svg(const Tensor& root, const DotOptions& options) {
  const GraphDescription d = describe_graph(root, options);
  std::vector<double> widths, heights;
  for (const GraphBox& b : d.boxes) {
    size_t longest = 0;
    for (const std::string& line : b.lines) longest = std::max(longest, line.size());
    widths.push_back(static_cast<double>(longest) * kGlyph + 2 * kPadX);
    heights.push_back(static_cast<double>(b.lines.size()) * kLine + 2 * kPadY);
  }
  std::vector<LayoutEdge> edges;
  for (const GraphArrow& a : d.arrows) edges.push_back({static_cast<int>(a.from), static_cast<int>(a.to)});
  const GraphLayout L = layered_layout(widths, heights, edges);
  const double top = options.title.empty() ? 0.0 : kTitle;

  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(L.width) << "\" height=\"" << num(L.height + top)
     << "\" viewBox=\"0 0 " << num(L.width) << " " << num(L.height + top)
     << "\" font-family=\"DejaVu Sans, Verdana, sans-serif\" font-size=\"11\">\n"
     << "<defs><marker id=\"ag-arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"6\" markerHeight=\"6\" "
        "orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"#555555\"/></marker></defs>\n";
  if (!options.title.empty())
    os << "<text x=\"" << num(L.width / 2) << "\" y=\"16\" text-anchor=\"middle\" font-size=\"13\">"
       << html_text(options.title) << "</text>\n";
  os << "<g transform=\"translate(0," << num(top) << ")\">\n";
  for (size_t e = 0; e < d.arrows.size(); ++e) {
    const auto& pts = L.edge_points[e];
    os << "<polyline fill=\"none\" stroke=\"#555555\" stroke-width=\"1\" marker-end=\"url(#ag-arrow)\" points=\"";
    for (size_t k = 0; k < pts.size(); ++k) os << (k ? " " : "") << num(pts[k].first) << "," << num(pts[k].second);
    os << "\"/>\n";
    if (d.arrows[e].arg >= 0 && !pts.empty())
      os << "<text x=\"" << num(pts.back().first + 4) << "\" y=\"" << num(pts.back().second - 4)
         << "\" font-size=\"8\" fill=\"#888888\">" << d.arrows[e].arg << "</text>\n";
  }
  for (size_t i = 0; i < d.boxes.size(); ++i) {
    const GraphBox& b = d.boxes[i];
    const double x = L.x[i] - widths[i] / 2, y = L.y[i] - heights[i] / 2;
    const char* fill = b.leaf ? "#fde9b4" : b.root ? "#f4b6b6" : "#cfe2f3";
    os << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(widths[i]) << "\" height=\""
       << num(heights[i]) << "\" rx=\"" << (b.leaf ? 0 : 6) << "\" fill=\"" << fill << "\" stroke=\"#333333\" stroke-width=\""
       << (b.root ? 2 : 1) << "\"/>\n";
    for (size_t k = 0; k < b.lines.size(); ++k)
      os << "<text x=\"" << num(L.x[i]) << "\" y=\"" << num(y + kPadY + kLine * (static_cast<double>(k) + 0.8))
         << "\" text-anchor=\"middle\">" << html_text(b.lines[k]) << "</text>\n";
  }
  os << "</g>\n</svg>\n";
  return os.str();
}

}  // namespace ag::viz
