// A layered drawing of a directed acyclic graph (Sugiyama style), for the explore page: no
// Graphviz needed. Edges point from an input to the op that consumes it; the sinks (the loss)
// sit at the bottom and every edge runs downwards.
//   1. layers: a node's layer is the longest path from it to a sink, so each input sits above
//      every consumer (a parameter just above the op that uses it);
//   2. an edge that spans several layers gets a bend point in each layer it crosses;
//   3. order within a layer: alternate sweeps down and up, placing each node at the mean
//      position of its neighbours in the layer just swept;
//   4. x: repeatedly move each node towards the mean x of its neighbours, keeping the order and
//      the spacing of each layer (a least-squares fit under those constraints: isotonic
//      regression by pool-adjacent-violators).
#pragma once
#include <utility>
#include <vector>

namespace ag::viz {

struct LayoutEdge {
  int from = 0, to = 0;  // input -> consumer
};

struct GraphLayout {
  std::vector<double> x, y;  // node centres, in pixels
  std::vector<int> layer;    // 0 = the bottom (sinks)
  // Per edge: the points of its path, from the bottom of `from` through its bend points to the
  // top of `to`.
  std::vector<std::vector<std::pair<double, double>>> edge_points;
  double width = 0, height = 0;
};

// widths/heights: each node's box. Throws std::invalid_argument on a cycle or a bad index.
GraphLayout layered_layout(const std::vector<double>& widths, const std::vector<double>& heights,
                           const std::vector<LayoutEdge>& edges);

}  // namespace ag::viz
