// The Graphviz export of the autograd graph (viz/graph_export.h).
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <sstream>

#include "viz/graph_export.h"
#include "autograd/ops.h"
#include "models/transformer_lm.h"
#include "nn/attention.h"

using namespace ag;

namespace {
// Lines of the DOT text that declare a node ("  n3 [" or "  p0 [") and that draw an edge.
size_t count_matching(const std::string& dot, const std::regex& re) {
  std::istringstream in(dot);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) n += std::regex_search(line, re);
  return n;
}
size_t dot_nodes(const std::string& dot) { return count_matching(dot, std::regex(R"(^  [np]\d+ \[)")); }
size_t dot_edges(const std::string& dot) { return count_matching(dot, std::regex(R"(^  [np]\d+ -> n\d+( \[.*\])?;$)")); }

// The graph's size counted here, independently of the exporter: nodes from the engine's
// topological order, leaves and edges from the nodes' edge lists.
struct Counted {
  size_t ops = 0, leaves = 0, edges = 0;
};
Counted count_graph(const Tensor& root) {
  Counted c;
  std::set<const TensorImpl*> leaves;
  const auto order = topological_order(root.grad_fn().get());
  c.ops = order.size();
  for (const Node* n : order)
    for (const Edge& e : n->next) {
      if (e.leaf) leaves.insert(e.leaf.get());
      c.edges += e.active();
    }
  c.leaves = leaves.size();
  return c;
}
}  // namespace

TEST(GraphExport, SmallGraphHasShapesNamesAndDataDirectionEdges) {
  Tensor x = Tensor::matrix({{1.0, -2.0}}).requires_grad_().set_name("x");
  Tensor W = Tensor::matrix({{0.5, -1.0, 0.25}, {1.5, 0.0, -0.5}}).requires_grad_().set_name("W");
  Tensor y = sum(tanh(matmul(x, W)));  // ops in topological order: sum, tanh, matmul
  const std::string before = to_dot(y);
  EXPECT_EQ(before.find("|grad|"), std::string::npos) << "no backward yet, so no gradient norms";
  NodeGradNorms norms;
  y.backward({}, {.retain_graph = true});
  GraphStats stats;
  const std::string dot = to_dot(y, {"", true, false, &norms}, &stats);
  EXPECT_EQ(stats.op_nodes, 3u);
  EXPECT_EQ(stats.leaf_nodes, 2u);
  EXPECT_EQ(stats.edges, 4u);
  EXPECT_NE(dot.find(R"(n0 [shape=box, style="rounded,filled", fillcolor="#f4b6b6", penwidth=2, label="sum\n[]\n|grad| = 1"])"),
            std::string::npos) << dot;
  EXPECT_NE(dot.find(R"(label="matmul\n[1, 3]\n|grad| = )"), std::string::npos) << dot;
  // d(sum)/d(tanh output) is ones(1, 3): its norm is √3.
  EXPECT_NE(dot.find(R"(label="tanh\n[1, 3]\n|grad| = 1.73")"), std::string::npos) << dot;
  EXPECT_NE(dot.find(R"(label="x\n[1, 2]\n|grad| = )"), std::string::npos) << dot;
  EXPECT_NE(dot.find(R"(label="W\n[2, 3]\n|grad| = )"), std::string::npos) << dot;
  // Data flows x, W -> matmul -> tanh -> sum; matmul's two inputs are numbered.
  for (const char* edge : {"p0 -> n2 [headlabel=\"0\"", "p1 -> n2 [headlabel=\"1\"", "n2 -> n1;", "n1 -> n0;"})
    EXPECT_NE(dot.find(edge), std::string::npos) << edge << "\n" << dot;
  EXPECT_EQ(dot_nodes(dot), 5u);
  EXPECT_EQ(dot_edges(dot), 4u);
}

TEST(GraphExport, OrdinaryBackwardRecordsNoGradientNorms) {
  Tensor x = Tensor::matrix({{1.0, -2.0}}).requires_grad_().set_name("x");
  Tensor y = sum(tanh(mul(x, 3.0)));
  y.backward({}, {.retain_graph = true});  // no NodeGradNorms alive: the engine computed none
  const std::string dot = to_dot(y);
  EXPECT_EQ(dot.find(R"(label="tanh\n[1, 2]\n|grad|)"), std::string::npos) << dot;
  EXPECT_NE(dot.find(R"(label="x\n[1, 2]\n|grad| = )"), std::string::npos) << dot;  // a leaf's .grad is known anyway
  {
    NodeGradNorms norms;
    y.backward({}, {.retain_graph = true});
    EXPECT_NE(to_dot(y, {"", true, false, &norms}).find(R"(label="tanh\n[1, 2]\n|grad| = )"), std::string::npos);
  }
  // The recorder is gone: later passes are not observed.
  y.backward({}, {.retain_graph = true});
}

TEST(GraphExport, DotNodeCountEqualsTheRecordedGraphOfMultiheadAttention) {
  Generator gen(3);
  nn::MultiheadAttention mha(8, 2, 0.0, true, /*batch_first=*/true, DType::Float32, gen);
  nn::name_parameters(mha);
  Tensor x = Tensor::randn({2, 5, 8}, DType::Float32, gen).requires_grad_().set_name("x");
  Tensor loss = sum(mha.forward(x, x, x, Tensor(), false, Tensor(), true, /*is_causal=*/true).output);
  NodeGradNorms norms;
  loss.backward({}, {.retain_graph = true});
  const Counted c = count_graph(loss);
  GraphStats stats;
  const std::string dot = to_dot(loss, {"MHA", true, false, &norms}, &stats);
  EXPECT_EQ(dot_nodes(dot), c.ops + c.leaves);
  EXPECT_EQ(stats.nodes(), c.ops + c.leaves);
  EXPECT_EQ(dot_edges(dot), c.edges);
  EXPECT_EQ(c.leaves, 5u);  // x and the four parameters
  for (const char* name : {"in_proj_weight\\n[24, 8]", "in_proj_bias\\n[24]", "out_proj.weight\\n[8, 8]",
                           "out_proj.bias\\n[8]", "x\\n[2, 5, 8]", "self_attention_qkv\\n[2, 5, 8]"})
    EXPECT_NE(dot.find(name), std::string::npos) << name;
  // Every op node carries a gradient norm after the retain_graph backward.
  EXPECT_EQ(count_matching(dot, std::regex(R"(^  n\d+ \[.*\|grad\| = )")), c.ops);
  EXPECT_NE(dot.find("label=\"MHA\""), std::string::npos);
}

TEST(GraphExport, EveryParameterOfTheModelIsANamedLeaf) {
  models::GPTConfig cfg;
  cfg.vocab_size = 7, cfg.n_layer = 2, cfg.n_head = 2, cfg.n_embd = 8, cfg.block_size = 6;
  Generator gen(1);
  models::TransformerLM model(cfg, DType::Float32, gen);
  nn::name_parameters(model);
  const Tensor idx = Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 4}, {1, 4});
  const Tensor tgt = Tensor::from_vector(std::vector<int64_t>{2, 3, 4, 5}, {1, 4});
  Tensor loss = model.loss(idx, tgt);
  const Counted c = count_graph(loss);
  const std::string dot = to_dot(loss);
  EXPECT_EQ(dot_nodes(dot), c.ops + c.leaves);
  EXPECT_EQ(c.leaves, model.named_parameters().size());  // tok_emb.weight (tied) counted once
  for (const auto& [name, p] : model.named_parameters()) {
    EXPECT_EQ(p.name(), name);
    EXPECT_NE(dot.find("label=\"" + name + "\\n" + shape_str(p.shape())), std::string::npos) << name;
  }
}

TEST(GraphExport, LeafRootAndErrors) {
  Tensor a = Tensor::ones({2}).requires_grad_().set_name("a");
  GraphStats s;
  const std::string dot = to_dot(a, {}, &s);
  EXPECT_EQ(s.op_nodes, 0u);
  EXPECT_EQ(s.leaf_nodes, 1u);
  EXPECT_EQ(dot_nodes(dot), 1u);
  EXPECT_THROW(to_dot(Tensor::ones({2})), std::invalid_argument);
  // Quotes and backslashes in names are escaped.
  Tensor q = Tensor::ones({1}).requires_grad_().set_name("say \"hi\" \\o/");
  EXPECT_NE(to_dot(q * 2.0).find(R"(say \"hi\" \\o/)"), std::string::npos);
}
