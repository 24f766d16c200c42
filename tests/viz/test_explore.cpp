// `attograd explore` (viz/explore.h, viz/explore_html.h, viz/graph_layout.h,
// viz/backward_formulas.h): what one pass did node by node, and the page's data.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "models/transformer_lm.h"
#include "nn/attention.h"
#include "tests/test_util.h"
#include "viz/attention_maps.h"
#include "viz/attention_walk.h"
#include "viz/backward_formulas.h"
#include "viz/explore.h"
#include "viz/explore_html.h"
#include "viz/graph_layout.h"

using namespace ag;
using namespace ag::viz;
using namespace ag::testing_util;

namespace {

Tensor t64(const Matrix& m) { return Tensor::from_vector(m.v, {1, m.rows, m.cols}, DType::Float64); }

double max_diff(const Tensor& a, const std::vector<double>& b) {
  const auto v = a.to_double_vector();
  EXPECT_EQ(v.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < v.size() && i < b.size(); ++i) m = std::max(m, std::fabs(v[i] - b[i]));
  return m;
}

int find_op(const ExploreCapture& c, const std::string& op) {
  for (size_t i = 0; i < c.nodes.size(); ++i)
    if (c.nodes[i].op == op) return static_cast<int>(i);
  return -1;
}

// The seed example as one MultiheadAttention call with identity projections (what
// `explore --attention` runs), optionally built from primitive ops.
struct SeedMha {
  std::shared_ptr<nn::MultiheadAttention> mha = std::make_shared<nn::MultiheadAttention>(2, 1, 0.0, false, true, DType::Float64);
  AttentionWalkInput in = AttentionWalkInput::seed();
  Tensor q = t64(in.q).requires_grad_().set_name("query"), k = t64(in.k).requires_grad_().set_name("key"),
         v = t64(in.v).requires_grad_().set_name("value"), g = t64(in.g);
  SeedMha() {
    NoGradGuard no_grad;
    mha->in_proj_weight.copy_(Tensor::from_vector({1, 0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1}, {6, 2}, DType::Float64));
    mha->out_proj->weight.copy_(Tensor::from_vector({1, 0, 0, 1}, {2, 2}, DType::Float64));
    nn::name_parameters(*mha);
  }
  ExploreCapture capture(bool unfused) {
    std::vector<Tensor> leaves = {q, k, v};
    for (const Tensor& p : mha->parameters()) leaves.push_back(p);
    return capture_explore(
        [&] {
          std::optional<nn::UnfusedAttentionGuard> prim;
          if (unfused) prim.emplace();
          return sum(mul(mha->forward(q, k, v, Tensor(), false).output, g));
        },
        leaves);
  }
};

}  // namespace

// The unfused seed call has a softmax node whose value is explain's A and whose received
// gradient is explain's dL/dA; the leaves' gradients are explain's dL/dQ, dL/dK, dL/dV (the
// projections are identities): two commands, two graphs, the same numbers.
TEST(Explore, SeedAttentionMatchesTheExplainWalk) {
  SeedMha s;
  const ExploreCapture c = s.capture(/*unfused=*/true);
  const AttentionWalk w = walk_attention_backward(s.in);
  EXPECT_NEAR(c.loss, w.loss, 1e-12);
  const int sm = find_op(c, "softmax");
  ASSERT_GE(sm, 0) << "--unfused must give the softmax a node";
  EXPECT_LE(max_diff(c.nodes[sm].value, w.weights.v), 1e-15);
  EXPECT_LE(max_diff(c.nodes[sm].grad, w.steps[2].by_hand.v), 1e-12) << "dL/dA";
  EXPECT_LE(max_diff(c.nodes[sm].sent[0], w.steps[3].by_hand.v), 1e-12) << "dL/dS, sent by the softmax";
  for (const auto& [name, step] : std::vector<std::pair<std::string, int>>{{"query", 4}, {"key", 5}, {"value", 1}}) {
    const int leaf = find_op(c, name);
    ASSERT_GE(leaf, 0) << name;
    EXPECT_TRUE(c.nodes[leaf].leaf);
    EXPECT_LE(max_diff(c.nodes[leaf].grad, w.steps[static_cast<size_t>(step)].by_hand.v), 1e-12) << name;
    EXPECT_LE(c.nodes[leaf].leaf_sum_diff, 1e-15) << name;
  }
  // The formulas come from the sources: softmax's and matmul's comments.
  ASSERT_NE(c.nodes[sm].formula, nullptr);
  EXPECT_EQ(std::string(c.nodes[sm].formula->text), "y = softmax(x)  =>  dx = y ⊙ (g − Σ_j g_j y_j)");
  EXPECT_EQ(c.nodes[sm].where.rfind("autograd/ops/nn_functional.cpp:", 0), 0u) << c.nodes[sm].where;
  const int mm = find_op(c, "matmul");
  ASSERT_GE(mm, 0);
  ASSERT_NE(c.nodes[mm].formula, nullptr);
  EXPECT_EQ(std::string(c.nodes[mm].formula->text).rfind("out = a @ b  =>  da = g @ bᵀ, db = aᵀ @ g", 0), 0u);
  // Every node's finite-difference check ran and agrees.
  EXPECT_TRUE(c.fd_note.empty()) << c.fd_note;
  int checked = 0;
  for (const auto& n : c.nodes) {
    if (n.leaf) continue;
    EXPECT_TRUE(n.fd_checked) << n.op;
    EXPECT_LE(n.fd_relative_error(), 1e-7) << n.op << " " << n.fd_lhs << " vs " << n.fd_rhs;
    checked += n.fd_checked;
  }
  EXPECT_GT(checked, 8);
  EXPECT_EQ(c.fd_failures(), 0);

  // Fused, the same call has no softmax node, and the same gradients.
  const ExploreCapture fused = SeedMha().capture(false);
  EXPECT_EQ(find_op(fused, "softmax"), -1);
  EXPECT_GE(find_op(fused, "scaled_dot_product_attention"), 0);
  EXPECT_LE(max_diff(fused.nodes[find_op(fused, "query")].grad, w.steps[4].by_hand.v), 1e-12);
}

// The execution order is the engine's: the root first, every op after all its consumers; what
// each node sent adds up to what its input received.
TEST(Explore, OrderAndSentGradientsAreTheEnginesOwn) {
  const ExploreCapture c = SeedMha().capture(true);
  ASSERT_FALSE(c.order.empty());
  EXPECT_EQ(c.order.front(), 0);
  std::vector<int> pos(c.nodes.size(), -1);
  for (size_t s = 0; s < c.order.size(); ++s) {
    pos[c.order[s]] = static_cast<int>(s);
    EXPECT_EQ(c.nodes[c.order[s]].step, int(s));
  }
  std::vector<Tensor> sums(c.nodes.size());
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const ExploreNode& n = c.nodes[i];
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const int in = n.inputs[k];
      if (in < 0) continue;
      if (!c.nodes[in].leaf) {
        EXPECT_GT(pos[in], pos[i]) << n.op << " -> " << c.nodes[in].op;
      }
      ASSERT_TRUE(n.sent[k].defined()) << n.op << " input " << k;
      EXPECT_EQ(n.sent[k].shape(), c.nodes[in].shape);
      sums[in] = sums[in].defined() ? add(sums[in], n.sent[k]) : n.sent[k];
    }
  }
  for (size_t i = 1; i < c.nodes.size(); ++i) {
    if (sums[i].defined()) {
      EXPECT_LE(max_diff(sums[i], c.nodes[i].grad.to_double_vector()), 1e-15) << c.nodes[i].op;
    }
  }
}

// The check can fail: a backward that drops a gradient, or gets one wrong, is caught.
TEST(Explore, FiniteDifferenceCheckCatchesDroppedAndWrongGradients) {
  const Tensor a = leaf({1.0, -2.0, 0.5}).set_name("a"), b = leaf({0.3, 0.7, -1.1}).set_name("b");
  for (int broken = 0; broken < 3; ++broken) {
    const ExploreCapture c = capture_explore(
        [&] {
          Tensor y;
          {
            NoGradGuard no_grad;
            y = mul(a, b);
          }
          record(y, "my_mul", {a, b}, [a, b, broken](const Tensor& g) {
            // out = a * b  =>  da = g * b, db = g * a  (broken 1: db dropped; broken 2: da doubled)
            return Grads{mul(g, b.detach()) * (broken == 2 ? 2.0 : 1.0), broken == 1 ? Tensor() : mul(g, a.detach())};
          });
          return sum(exp(y));
        },
        {a, b});
    const int my = find_op(c, "my_mul");
    ASSERT_GE(my, 0);
    EXPECT_TRUE(c.nodes[my].fd_checked);
    if (broken == 0) {
      EXPECT_LE(c.nodes[my].fd_relative_error(), 1e-8);
    } else {
      EXPECT_GT(c.nodes[my].fd_relative_error(), 1e-2) << "broken " << broken;
    }
    EXPECT_EQ(c.fd_failures(), broken ? 1 : 0);
    EXPECT_EQ(c.nodes[my].formula, nullptr) << "a record() call outside the op sources has no formula";
    EXPECT_LE(c.nodes[find_op(c, "exp")].fd_relative_error(), 1e-8);
  }
  // The leaves are back where they were.
  EXPECT_EQ(a.to_double_vector(), (std::vector<double>{1.0, -2.0, 0.5}));
}

// A GPT, float64, built from primitive ops: a softmax node per layer, whose received gradient
// is dLoss/dWeights as `attend --grads` computes it (capture_attention_grads, ag::grad on the
// fused kernel's weights), and every node's check agrees.
TEST(Explore, GptSoftmaxNodesReceiveAttendsGradients) {
  const std::string text = "the cat sat";
  const auto tok = data::CharTokenizer::from_text(data::decode_utf8(text, "t"));
  models::GPTConfig cfg;
  cfg.vocab_size = tok.vocab_size(), cfg.n_layer = 2, cfg.n_head = 2, cfg.n_embd = 8, cfg.block_size = 16;
  Generator gen(3);
  models::TransformerLM model(cfg, DType::Float64, gen);
  model.eval();
  nn::name_parameters(model);
  const auto ids = tok.encode(std::string_view(text));
  const int64_t T = static_cast<int64_t>(ids.size()) - 1;
  const Tensor x = Tensor::from_vector(std::vector<int64_t>(ids.begin(), ids.end() - 1), {1, T});
  const Tensor y = Tensor::from_vector(std::vector<int64_t>(ids.begin() + 1, ids.end()), {1, T});
  const ExploreCapture c = capture_explore(
      [&] {
        nn::UnfusedAttentionGuard prim;
        return model.loss(x, y);
      },
      model.parameters());
  EXPECT_EQ(c.fd_failures(), 0);
  EXPECT_TRUE(c.fd_note.empty()) << c.fd_note;
  std::vector<int> softmax;
  for (size_t i = 0; i < c.nodes.size(); ++i)
    if (c.nodes[i].op == "softmax") softmax.push_back(static_cast<int>(i));
  ASSERT_EQ(softmax.size(), 2u);
  // attend on the whole text: its T+1 positions make the same T predictions, and its positions
  // before the last see exactly what explore's T positions see (causal).
  const AttentionGrads gp = capture_attention_grads(model, tok, text);
  // Topological order puts the last layer's softmax first.
  for (int l = 0; l < 2; ++l) {
    const ExploreNode& n = c.nodes[softmax[1 - l]];
    ASSERT_EQ(n.grad.shape(), (Shape{2, T, T}));  // (N·H, L, S)
    // gp uses T+1 positions with T predictions: its first T rows and columns are this text's.
    const auto full = gp.grads[static_cast<size_t>(l)].to_double_vector();  // (H, T+1, T+1), float32
    std::vector<double> cut;
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) cut.push_back(full[static_cast<size_t>((h * (T + 1) + i) * (T + 1) + j)]);
    EXPECT_LE(max_diff(n.grad, cut), 1e-6) << "layer " << l;
  }
}

TEST(BackwardFormulas, EveryRecordCallInTheOpSourcesHasOneAndTheLookupMatchesByPlace) {
  const auto all = backward_formulas();
  // Count the record( calls independently of the generator: every line with "record(" that is
  // not should_record( or a comment.
  size_t calls = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(ATTOGRAD_SOURCE_DIR) + "/autograd/ops"))
    for (const std::string& line : read_lines(entry.path())) {
      const auto first = line.find_first_not_of(' ');
      if (first == std::string::npos || line.compare(first, 2, "//") == 0) continue;
      for (auto at = line.find("record("); at != std::string::npos; at = line.find("record(", at + 1))
        calls += at == 0 || !(std::isalnum(static_cast<unsigned char>(line[at - 1])) || line[at - 1] == '_');
    }
  size_t in_ops = 0;
  for (const BackwardFormula& f : all) {
    EXPECT_GT(std::string(f.text).size(), 8u) << f.file << ":" << f.line;
    in_ops += std::string(f.file).rfind("autograd/ops/", 0) == 0;
  }
  EXPECT_EQ(in_ops, calls);
  const BackwardFormula* mm = nullptr;
  for (const BackwardFormula& f : all)
    if (std::string(f.text).rfind("out = a @ b", 0) == 0) mm = &f;
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(backward_formula(std::string("/somewhere/") + mm->file, mm->line), mm);
  EXPECT_EQ(backward_formula(std::string("../") + mm->file, mm->line), mm);
  EXPECT_EQ(backward_formula(mm->file, mm->line + 1), nullptr);
  EXPECT_EQ(backward_formula(std::string("/x/not") + mm->file, mm->line), nullptr) << "whole path parts only";
}

TEST(GraphLayout, InputsAboveConsumersNoOverlapsAndEdgesThroughEachLayer) {
  // 0 <- 1 <- 2 <- 3, 3 -> 0 (a long edge), 4 -> 1, 4 -> 2, 5 -> 0
  const std::vector<LayoutEdge> edges = {{1, 0}, {2, 1}, {3, 2}, {3, 0}, {4, 1}, {4, 2}, {5, 0}};
  const std::vector<double> w = {80, 60, 60, 100, 40, 70}, h(6, 30);
  const GraphLayout L = layered_layout(w, h, edges);
  EXPECT_EQ(L.layer, (std::vector<int>{0, 1, 2, 3, 3, 1}));
  for (const LayoutEdge& e : edges) EXPECT_LT(L.y[e.from], L.y[e.to]) << e.from << " -> " << e.to;
  for (int a = 0; a < 6; ++a)
    for (int b = a + 1; b < 6; ++b)
      if (L.layer[a] == L.layer[b]) {
        EXPECT_GE(std::fabs(L.x[a] - L.x[b]), (w[a] + w[b]) / 2) << a << " and " << b;
      }
  ASSERT_EQ(L.edge_points.size(), edges.size());
  EXPECT_EQ(L.edge_points[3].size(), 4u) << "3 -> 0 spans three layers: two bend points";
  EXPECT_DOUBLE_EQ(L.edge_points[3].front().second, L.y[3] + 15);
  EXPECT_DOUBLE_EQ(L.edge_points[3].back().second, L.y[0] - 15);
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(L.x[i] - w[i] / 2 >= 0 && L.x[i] + w[i] / 2 <= L.width) << i;
  EXPECT_THROW(layered_layout({1, 1}, {1, 1}, {{0, 1}, {1, 0}}), std::invalid_argument);
}

TEST(ExplorePage, SelfContainedWithTheCapturesNumbersEachTensorOnce) {
  const ExploreCapture c = SeedMha().capture(true);
  const std::string html = explore_html(c, {"attograd explore --attention --unfused --out x.html"});
  for (const char* s : {"src=", "<link", "https://", "@import", "url(h", "url(\"", "url('", "url(/"})
    EXPECT_EQ(html.find(s), std::string::npos) << s;  // url(#arrow), a marker in the page itself, is fine
  // The one "http://" is the SVG namespace, a name, not an address the page loads.
  size_t at = 0;
  while ((at = html.find("http://", at)) != std::string::npos) {
    EXPECT_EQ(html.compare(at, 26, "http://www.w3.org/2000/svg"), 0);
    at += 7;
  }
  const auto j = nlohmann::json::parse(explore_json(c));
  ASSERT_EQ(j["nodes"].size(), c.nodes.size());
  size_t edges = 0, refs = 0;
  for (const auto& n : c.nodes) {
    for (int in : n.inputs) edges += in >= 0;
    refs += n.value.defined() + n.grad.defined();
    for (const Tensor& s : n.sent) refs += s.defined();
  }
  EXPECT_EQ(j["edges"].size(), edges);
  EXPECT_LT(j["tensors"].size(), refs) << "identical tensors are stored once";
  const int sm = find_op(c, "softmax");
  const auto& t = j["tensors"][j["nodes"][sm]["grad"].get<int>()];
  double s2 = 0;
  for (double v : c.nodes[sm].grad.to_double_vector()) s2 += v * v;
  EXPECT_EQ(t["norm"].get<double>(), std::sqrt(s2));
  EXPECT_EQ(t["values"].size(), 6u);
  EXPECT_EQ(t["amax"].get<double>(), 10.0);
  EXPECT_EQ(t["amax_at"], nlohmann::json::array({0, 0, 0}));
  // The grid: half precision of value / scale, base64; within half's rounding of the values.
  const std::string b64 = t["data"];
  std::vector<unsigned char> bytes;
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i + 3 < b64.size(); i += 4) {
    uint32_t b = 0;
    for (int k = 0; k < 4; ++k) b = b << 6 | (b64[i + k] == '=' ? 0 : static_cast<uint32_t>(alphabet.find(b64[i + k])));
    bytes.push_back(static_cast<unsigned char>(b >> 16)), bytes.push_back(static_cast<unsigned char>(b >> 8)),
        bytes.push_back(static_cast<unsigned char>(b));
  }
  const auto want = c.nodes[sm].grad.to_double_vector();
  for (size_t i = 0; i < want.size(); ++i) {
    const uint32_t h = bytes[2 * i] | bytes[2 * i + 1] << 8, e = h >> 10 & 31, m = h & 1023;
    const double x = (h & 0x8000 ? -1 : 1) * (e ? (1 + m / 1024.0) * std::ldexp(1.0, int(e) - 15) : m * std::ldexp(1.0, -24));
    EXPECT_NEAR(x * t["scale"].get<double>(), want[i], 10.0 / 2048) << i;  // half: 11 significant bits of 10
  }
  EXPECT_EQ(j["order"].size(), c.order.size());
  EXPECT_EQ(j["nodes"][sm]["formula"]["kind"], 0);
}
