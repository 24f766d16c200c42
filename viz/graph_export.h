// Graphviz DOT export of the autograd graph behind a tensor, for studying the backward pass.
//
//   * one node per graph Node (an op), labelled "op" and its output shape, in the order of
//     topological_order(root) (root first); when a NodeGradNorms recorder was alive during a
//     backward(grad, {.retain_graph = true}), also "|grad| = ..." (the L2 norm of the gradient
//     of the op's output). Ordinary backward passes compute no norms;
//   * one box per leaf tensor that requires grad (reached through Edge::leaf), labelled with
//     its TensorImpl::name (nn::name_parameters sets the parameters' dotted names), its shape
//     and, when it has one, the norm of its accumulated .grad;
//   * edges in the data's direction: input (leaf or op) -> the op that consumes it, one per
//     input, so an op that uses a tensor twice has two edges from it; when an op has several
//     inputs each edge carries the argument's position (0, 1, ...) at its head.
// Inputs that do not require grad (token ids, masks) are not part of the graph.
#pragma once
#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "autograd/engine.h"

namespace ag {

// While it lives, records the L2 norm of every node's output gradient in the backward passes
// run on this thread (an engine observer: ordinary backward passes pay nothing for it).
class NodeGradNorms {
 public:
  NodeGradNorms();
  NodeGradNorms(const NodeGradNorms&) = delete;
  NodeGradNorms& operator=(const NodeGradNorms&) = delete;
  // -1 when no gradient reached the node while recording.
  double norm(const Node* node) const;

 private:
  std::unordered_map<const Node*, double> norms_;
  ObserveNodeGradsGuard guard_;
};

struct DotOptions {
  std::string title;        // shown above the graph; "" for none
  bool grad_norms = true;   // label nodes and leaves with gradient norms where they are known
  bool left_to_right = false;  // rankdir=LR instead of top to bottom
  const NodeGradNorms* node_grad_norms = nullptr;  // op nodes' norms (with grad_norms); the graph must still be alive
};

struct GraphStats {
  size_t op_nodes = 0;    // topological_order(root).size(), 0 when root is a leaf
  size_t leaf_nodes = 0;  // distinct leaf tensors
  size_t edges = 0;
  size_t nodes() const { return op_nodes + leaf_nodes; }
};

// The distinct leaf tensors of root's graph, in the order the export numbers them (root
// itself when it is a leaf that requires grad).
std::vector<std::shared_ptr<TensorImpl>> graph_leaves(const Tensor& root);

// Counts what to_dot would draw.
GraphStats graph_stats(const Tensor& root);

// What to_dot draws, as data (for other renderers: viz/graph_svg.h): the boxes in to_dot's
// order (leaves first, numbered as first met, then the ops in topological order, the root
// first) and one edge per active input, from the input's box to the consuming op's.
struct GraphBox {
  bool leaf = false;
  bool root = false;
  std::vector<std::string> lines;  // the label's lines: name or op, shape (and dtype), |grad| when known
};
struct GraphArrow {
  size_t from = 0, to = 0;  // indices into boxes
  int arg = -1;             // the argument's position when the op has several inputs, else -1
};
struct GraphDescription {
  std::vector<GraphBox> boxes;
  std::vector<GraphArrow> arrows;
  GraphStats stats;
};
// Throws std::invalid_argument as to_dot does.
GraphDescription describe_graph(const Tensor& root, const DotOptions& options = {});

// The DOT text. root must require grad (else std::invalid_argument). If stats is given, it
// receives the counts of what was written.
std::string to_dot(const Tensor& root, const DotOptions& options = {}, GraphStats* stats = nullptr);

}  // namespace ag
