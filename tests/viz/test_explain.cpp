// `attograd explain attention` (viz/attention_walk.h): the seed example carried through the
// backward pass, each step by hand, from the engine and by finite differences.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/test_util.h"
#include "viz/attention_walk.h"

using namespace ag;
using namespace ag::viz;
using namespace ag::testing_util;

namespace {

void expect_matrix_near(const Matrix& m, const Matrix& want, double tol, const std::string& what) {
  ASSERT_EQ(m.rows, want.rows) << what;
  ASSERT_EQ(m.cols, want.cols) << what;
  for (int i = 0; i < m.rows; ++i)
    for (int j = 0; j < m.cols; ++j) EXPECT_NEAR(m(i, j), want(i, j), tol) << what << " [" << i << ", " << j << "]";
}

const AttentionWalkStep& step(const AttentionWalk& w, const std::string& quantity) {
  for (const auto& s : w.steps)
    if (s.quantity == quantity) return s;
  throw std::logic_error("no step " + quantity);
}

}  // namespace

// The README's numbers, forward and backward (the README shows the command's output, which
// tests/cli/check_readme.cmake compares; these are the same numbers held to their digits).
TEST(ExplainAttention, TheSeedExampleHasTheReadmesNumbers) {
  const AttentionWalk w = walk_attention_backward(AttentionWalkInput::seed());
  const double r = 1 / std::sqrt(2.0);
  expect_matrix_near(w.scores, Matrix{{r, r, 0}, {0, r, r}}, 1e-15, "S");
  // softmax([r, r, 0]) = [e^r, e^r, 1] / (2e^r + 1)
  const double a = std::exp(r) / (2 * std::exp(r) + 1), b = 1 / (2 * std::exp(r) + 1);
  expect_matrix_near(w.weights, Matrix{{a, a, b}, {b, a, a}}, 1e-15, "A");
  expect_matrix_near(w.weights, Matrix{{0.401, 0.401, 0.198}, {0.198, 0.401, 0.401}}, 5e-4, "A as the README rounds it");
  expect_matrix_near(w.context, Matrix{{4.011, 2.203}, {1.978, 2.407}}, 5e-4, "context as the README rounds it");
  EXPECT_NEAR(w.loss, 4.011 + 2.407, 1e-3);  // G = I: L = context₀₀ + context₁₁

  // The backward, from the formulas worked out here by hand on the closed forms of A.
  expect_matrix_near(step(w, "dL/dcontext").by_hand, Matrix{{1, 0}, {0, 1}}, 0, "dL/dcontext = G");
  expect_matrix_near(step(w, "dL/dV").by_hand, Matrix{{a, b}, {a, a}, {b, a}}, 1e-15, "dL/dV = Aᵀ·G = Aᵀ");
  expect_matrix_near(step(w, "dL/dA").by_hand, Matrix{{10, 0, 0}, {0, 5, 1}}, 0, "dL/dA = G·Vᵀ");
  // dL/dS row i = A_i ⊙ (dA_i − A_i·dA_i)
  const double r0 = 10 * a, r1 = 5 * a + 1 * a;
  expect_matrix_near(step(w, "dL/dS").by_hand,
                     Matrix{{a * (10 - r0), a * (0 - r0), b * (0 - r0)}, {b * (0 - r1), a * (5 - r1), a * (1 - r1)}}, 1e-13,
                     "dL/dS");
  expect_matrix_near(step(w, "dL/dS").by_hand, Matrix{{2.4022, -1.6089, -0.7933}, {-0.4760, 1.0402, -0.5642}}, 5e-5,
                     "dL/dS as the README prints it");
  for (const auto& s : w.steps) {
    EXPECT_LE(s.engine_diff, 1e-12) << s.quantity << ": the engine's value";
    EXPECT_LE(s.fd_diff, 1e-6) << s.quantity << ": finite differences";
    EXPECT_TRUE(s.agrees()) << s.quantity;
  }
  EXPECT_TRUE(w.agrees());
  // Each row of dL/dS sums to 0: the softmax discards a constant added to a row of scores.
  const Matrix& dS = step(w, "dL/dS").by_hand;
  for (int i = 0; i < dS.rows; ++i) EXPECT_NEAR(dS(i, 0) + dS(i, 1) + dS(i, 2), 0.0, 1e-14) << "row " << i;
}

TEST(ExplainAttention, CausalAndMaskedWalksAgreeAndHiddenScoresGetNoGradient) {
  AttentionWalkInput causal = AttentionWalkInput::seed();
  causal.causal = true;
  const AttentionWalk c = walk_attention_backward(causal);
  EXPECT_TRUE(c.agrees());
  EXPECT_DOUBLE_EQ(c.weights(0, 0), 1.0);  // query 0 sees key 0 alone
  const Matrix& dS = step(c, "dL/dS").by_hand;
  EXPECT_EQ(dS(0, 0), 0.0) << "a single visible key: its weight is 1 whatever its score";
  EXPECT_EQ(dS(0, 1), 0.0);
  EXPECT_EQ(dS(0, 2), 0.0);
  EXPECT_EQ(dS(1, 2), 0.0);
  EXPECT_EQ(step(c, "dL/dS").engine(1, 2), 0.0);

  AttentionWalkInput masked = AttentionWalkInput::seed();
  masked.mask = {false, true, false, false, false, true};  // query 0 may not see key 1, query 1 not key 2
  const AttentionWalk m = walk_attention_backward(masked);
  EXPECT_TRUE(m.agrees());
  EXPECT_EQ(m.weights(0, 1), 0.0);
  EXPECT_EQ(step(m, "dL/dS").engine(0, 1), 0.0);
  EXPECT_GT(std::fabs(step(m, "dL/dS").by_hand(0, 0)), 0.1);
  for (const auto& s : m.steps) EXPECT_LE(s.engine_diff, 1e-12) << s.quantity;
}

TEST(ExplainAttention, UsersMatricesAndClearErrors) {
  AttentionWalkInput in;
  in.q = Matrix{{0.5, -1, 2}};
  in.k = Matrix{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1}};
  in.v = Matrix{{1}, {-2}, {3}, {0.5}};
  in.g = Matrix{{2}};
  const AttentionWalk w = walk_attention_backward(in);
  EXPECT_TRUE(w.agrees());
  EXPECT_LE(w.worst_engine_diff(), 1e-12);

  AttentionWalkInput bad = AttentionWalkInput::seed();
  bad.k = Matrix{{1, 0, 0}};
  EXPECT_EQ(error_of<std::invalid_argument>([&] { check_attention_walk_input(bad); }).rfind("K (1, 3) must have as many", 0), 0u);
  bad = AttentionWalkInput::seed();
  bad.v = Matrix{{1, 0}};
  EXPECT_EQ(error_of<std::invalid_argument>([&] { check_attention_walk_input(bad); }).rfind("V (1, 2)", 0), 0u);
  bad = AttentionWalkInput::seed();
  bad.mask = {true, true, true, false, false, false};
  EXPECT_NE(error_of<std::invalid_argument>([&] { check_attention_walk_input(bad); }).find("hides every key from query 0"),
            std::string::npos);
  bad = AttentionWalkInput::seed();
  bad.q(0, 0) = std::nan("");
  EXPECT_EQ(error_of<std::invalid_argument>([&] { walk_attention_backward(bad); }).rfind("Q holds a value", 0), 0u);
}

TEST(ExplainAttention, TextAndPageShowEveryStep) {
  const AttentionWalk w = walk_attention_backward(AttentionWalkInput::seed());
  const std::string text = attention_walk_text(w);
  for (const char* s : {"1. dL/dcontext = G", "2. dL/dV = Aᵀ·G", "3. dL/dA = G·Vᵀ", "4. dL/dS = A ⊙ (dL/dA − rowsum(A ⊙ dL/dA))",
                        "5. dL/dQ = dL/dS·K/√d", "6. dL/dK = (dL/dS)ᵀ·Q/√d", "[[10.0000,  0.0000,  0.0000],"})
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  const std::string html = attention_walk_html(w);
  EXPECT_NE(html.find("<math display=\"block\">"), std::string::npos);
  // Self-contained: nothing to fetch.
  for (const char* s : {"<script", "http://", "https://", "<link", "src="}) EXPECT_EQ(html.find(s), std::string::npos) << s;
  EXPECT_EQ(html.find("class=\"bad\""), std::string::npos) << "every step agrees";
  EXPECT_EQ(format_matrix(Matrix{{-0.00001, 2}}, 2), "  [[0.0000, 2.0000]]\n") << "no -0.0000";
}
