#include "viz/graph_export.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <unordered_map>

namespace ag {

namespace {

// A string as the body of a DOT "quoted string"; newlines become DOT's centred line break.
std::string quoted(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string fmt_norm(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

double l2(const Tensor& t) {
  double s = 0;
  for (double v : t.to_double_vector()) s += v * v;
  return std::sqrt(s);
}

// The graph, walked once: op nodes in topological order and leaves numbered as first met.
struct Walk {
  std::vector<Node*> ops;
  std::unordered_map<const Node*, size_t> op_id;
  std::vector<std::shared_ptr<TensorImpl>> leaves;
  std::unordered_map<const TensorImpl*, size_t> leaf_id;
  size_t edges = 0;
};

Walk walk(const Tensor& root) {
  if (!root.defined() || !root.requires_grad())
    throw std::invalid_argument("graph export: the tensor does not require grad, so no graph was recorded for it");
  Walk w;
  if (root.is_leaf()) {
    w.leaves.push_back(root.impl_ptr());
    w.leaf_id[root.impl_ptr().get()] = 0;
    return w;
  }
  w.ops = topological_order(root.grad_fn().get());
  for (size_t i = 0; i < w.ops.size(); ++i) w.op_id[w.ops[i]] = i;
  for (const Node* n : w.ops)
    for (const Edge& e : n->next) {
      if (!e.active()) continue;
      ++w.edges;
      if (e.leaf && !w.leaf_id.count(e.leaf.get())) {
        w.leaf_id[e.leaf.get()] = w.leaves.size();
        w.leaves.push_back(e.leaf);
      }
    }
  return w;
}

}  // namespace

NodeGradNorms::NodeGradNorms()
    : guard_([this](const Node& n, const Tensor& g) { norms_[&n] = l2(g); }) {}

double NodeGradNorms::norm(const Node* node) const {
  auto it = norms_.find(node);
  return it == norms_.end() ? -1.0 : it->second;
}

std::vector<std::shared_ptr<TensorImpl>> graph_leaves(const Tensor& root) { return walk(root).leaves; }

GraphStats graph_stats(const Tensor& root) {
  const Walk w = walk(root);
  return {w.ops.size(), w.leaves.size(), w.edges};
}

std::string to_dot(const Tensor& root, const DotOptions& opt, GraphStats* stats) {
  const Walk w = walk(root);
  std::ostringstream os;
  os << "digraph autograd {\n"
     << "  rankdir=" << (opt.left_to_right ? "LR" : "TB") << ";\n"
     << "  node [fontname=\"DejaVu Sans\", fontsize=10];\n"
     << "  edge [color=\"#555555\", arrowsize=0.6];\n";
  if (!opt.title.empty()) os << "  labelloc=t;\n  fontname=\"DejaVu Sans\";\n  label=\"" << quoted(opt.title) << "\";\n";

  for (size_t i = 0; i < w.leaves.size(); ++i) {
    const TensorImpl& leaf = *w.leaves[i];
    std::string label = (leaf.name.empty() ? std::string("(leaf)") : leaf.name) + "\n" + shape_str(leaf.shape);
    if (opt.grad_norms && leaf.grad) label += "\n|grad| = " + fmt_norm(l2(Tensor(leaf.grad)));
    os << "  p" << i << " [shape=box, style=filled, fillcolor=\"#fde9b4\", label=\"" << quoted(label) << "\"];\n";
  }
  for (size_t i = 0; i < w.ops.size(); ++i) {
    const Node& n = *w.ops[i];
    std::string label = n.op + "\n" + shape_str(n.out_shape);
    if (n.out_dtype != DType::Float32) label.append(" ").append(dtype_name(n.out_dtype));
    const double norm = opt.grad_norms && opt.node_grad_norms ? opt.node_grad_norms->norm(&n) : -1.0;
    if (norm >= 0) label += "\n|grad| = " + fmt_norm(norm);
    os << "  n" << i << " [shape=box, style=\"rounded,filled\", fillcolor=\"" << (i == 0 ? "#f4b6b6" : "#cfe2f3")
       << "\"" << (i == 0 ? ", penwidth=2" : "") << ", label=\"" << quoted(label) << "\"];\n";
  }
  for (size_t i = 0; i < w.ops.size(); ++i) {
    const auto& next = w.ops[i]->next;
    const bool several = std::count_if(next.begin(), next.end(), [](const Edge& e) { return e.active(); }) > 1;
    for (size_t k = 0; k < next.size(); ++k) {
      const Edge& e = next[k];
      if (!e.active()) continue;
      os << "  " << (e.leaf ? "p" : "n") << (e.leaf ? w.leaf_id.at(e.leaf.get()) : w.op_id.at(e.node.get())) << " -> n" << i;
      // Which argument: the order matters for matmul(a, b), attention_probs(q, k), ...
      if (several) os << " [headlabel=\"" << k << "\", labelfontsize=8, labelfontcolor=\"#888888\"]";
      os << ";\n";
    }
  }
  os << "}\n";
  if (stats) *stats = {w.ops.size(), w.leaves.size(), w.edges};
  return os.str();
}

}  // namespace ag
