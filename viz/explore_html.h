// The explore page: one self-contained HTML file (its data, script and style inline; no
// network, no server) that walks an ExploreCapture (viz/explore.h) node by node.
//
//   * the autograd graph, laid out by viz/graph_layout.h (edges input -> op, the loss at the
//     bottom), drawn as SVG by the page's script;
//   * click a node: its op, shape, the place its record() call is in the source and the backward
//     formula written there, its forward value, the gradient it received and each gradient it
//     sent, as heatmaps (diverging scale, white at zero, limits ±max |value|, a legend) with
//     their norms, and the finite-difference check of its local backward;
//   * step through the backward pass in the engine's execution order (buttons, or the arrow
//     keys / n and p): the node that runs and every edge whose gradient is known by then;
//   * pick a leaf (a parameter): the paths from the loss to it.
//
// The data is one JSON object (explore_json) in a <script type="application/json"> element.
// Tensors are stored once each (identical ones shared), as their exact statistics (norm, min,
// max, the entry of largest magnitude and where it is) and a grid of at most kMaxGridRows ×
// kMaxGridCols values, base64 IEEE half precision divided by the largest magnitude ("scale"):
// rows are the leading dims flattened, columns the last dim; a larger tensor is pooled in
// blocks, each keeping its entry of largest magnitude (sign included), so that extremes stay
// visible. Tensors of at most kMaxTableValues entries are also printed as exact numbers.
#pragma once
#include <string>

#include "viz/explore.h"

namespace ag::viz {

constexpr int kMaxGridRows = 256, kMaxGridCols = 160, kMaxTableValues = 64;

struct ExplorePageOptions {
  std::string command;  // the command line that made the page, shown at the bottom
};

std::string explore_json(const ExploreCapture& capture);
std::string explore_html(const ExploreCapture& capture, const ExplorePageOptions& options = {});

}  // namespace ag::viz
