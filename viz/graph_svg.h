// The autograd graph behind a tensor as an SVG picture, drawn by attograd itself: the boxes and
// arrows of the DOT export (viz/graph_export.h: describe_graph), placed by the explore page's
// layered layout (viz/graph_layout.h). For where Graphviz is not installed (the Python
// package's Graph._repr_svg_ uses `dot` when it is there, this otherwise).
#pragma once
#include <string>

#include "autograd/tensor.h"
#include "viz/graph_export.h"

namespace ag::viz {

// One self-contained <svg> element (no script, no external font). Throws as to_dot does.
std::string graph_svg(const Tensor& root, const DotOptions& options = {});

}  // namespace ag::viz
