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

GraphDescription describe_graph(const Tensor& root, const DotOptions& opt) {
  const Walk w = walk(root);
  GraphDescription d;
  for (const auto& leaf : w.leaves) {
    GraphBox box{true, false, {leaf->name.empty() ? std::string("(leaf)") : leaf->name, shape_str(leaf->shape)}};
    if (opt.grad_norms && leaf->grad) box.lines.push_back("|grad| = " + fmt_norm(l2(Tensor(leaf->grad))));
    d.boxes.push_back(std::move(box));
  }
  const size_t first_op = d.boxes.size();
  for (size_t i = 0; i < w.ops.size(); ++i) {
    const Node& n = *w.ops[i];
    GraphBox box{false, i == 0, {n.op, shape_str(n.out_shape)}};
    if (n.out_dtype != DType::Float32) box.lines[1].append(" ").append(dtype_name(n.out_dtype));
    const double norm = opt.grad_norms && opt.node_grad_norms ? opt.node_grad_norms->norm(&n) : -1.0;
    if (norm >= 0) box.lines.push_back("|grad| = " + fmt_norm(norm));
    d.boxes.push_back(std::move(box));
  }
  for (size_t i = 0; i < w.ops.size(); ++i) {
    const auto& next = w.ops[i]->next;
    const bool several = std::count_if(next.begin(), next.end(), [](const Edge& e) { return e.active(); }) > 1;
    for (size_t k = 0; k < next.size(); ++k) {
      const Edge& e = next[k];
      if (!e.active()) continue;
      const size_t from = e.leaf ? w.leaf_id.at(e.leaf.get()) : first_op + w.op_id.at(e.node.get());
      d.arrows.push_back({from, first_op + i, several ? static_cast<int>(k) : -1});
    }
  }
  d.stats = {w.ops.size(), w.leaves.size(), w.edges};
  return d;
}

std::string to_dot(const Tensor& root, const DotOptions& opt, GraphStats* stats) {
  const GraphDescription d = describe_graph(root, opt);
  const size_t first_op = d.stats.leaf_nodes;
  auto id = [&](size_t box) { return box < first_op ? "p" + std::to_string(box) : "n" + std::to_string(box - first_op); };
  auto label = [](const GraphBox& b) {
    std::string s;
    for (size_t i = 0; i < b.lines.size(); ++i) s += (i ? "\n" : "") + b.lines[i];
    return s;
  };
  std::ostringstream os;
  os << "digraph autograd {\n"
     << "  rankdir=" << (opt.left_to_right ? "LR" : "TB") << ";\n"
     << "  node [fontname=\"DejaVu Sans\", fontsize=10];\n"
     << "  edge [color=\"#555555\", arrowsize=0.6];\n";
  if (!opt.title.empty()) os << "  labelloc=t;\n  fontname=\"DejaVu Sans\";\n  label=\"" << quoted(opt.title) << "\";\n";
  for (size_t i = 0; i < d.boxes.size(); ++i) {
    const GraphBox& b = d.boxes[i];
    if (b.leaf)
      os << "  " << id(i) << " [shape=box, style=filled, fillcolor=\"#fde9b4\", label=\"" << quoted(label(b)) << "\"];\n";
    else
      os << "  " << id(i) << " [shape=box, style=\"rounded,filled\", fillcolor=\"" << (b.root ? "#f4b6b6" : "#cfe2f3")
         << "\"" << (b.root ? ", penwidth=2" : "") << ", label=\"" << quoted(label(b)) << "\"];\n";
  }
  for (const GraphArrow& a : d.arrows) {
    os << "  " << id(a.from) << " -> " << id(a.to);
    // Which argument: the order matters for matmul(a, b), attention_probs(q, k), ...
    if (a.arg >= 0) os << " [headlabel=\"" << a.arg << "\", labelfontsize=8, labelfontcolor=\"#888888\"]";
    os << ";\n";
  }
  os << "}\n";
  if (stats) *stats = d.stats;
  return os.str();
}

}  // namespace ag
