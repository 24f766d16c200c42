// The backward pass of one attention head, step by step, for `attograd explain attention`:
// the README's seed example (or the user's small Q, K, V) carried from the loss back to Q and K.
//
//   S = Q·Kᵀ/√d   (L, S)        A = softmax(S) row-wise, hidden keys at −inf   C = A·V   (L, dv)
//   loss L = Σ C ⊙ G for a given G (L, dv)
//
// Why this loss: dL/dC = G exactly, so the walk starts from a known upstream gradient, which is
// what attention receives from the layers above it in a network. Any differentiable loss on the
// context only changes G (a cross-entropy on it would give G = softmax(C) − onehot(target)),
// so nothing is lost by choosing G directly, and every later number stays readable.
//
// Each step holds the quantity three ways: computed by hand (by the reference core, reference/:
// plain loops in double under their formulas, at the lines each step names), as attograd's engine computed it (retain_grad() on the intermediates of a float64
// forward built from ops: matmul, mul by 1/√d, masked_fill, softmax, matmul, mul, sum), and by
// central finite differences of the loss as a function of that quantity (plain double loops).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "viz/reference_source.h"

namespace ag::viz {

// A small dense row-major matrix of doubles.
struct Matrix {
  int rows = 0, cols = 0;
  std::vector<double> v;
  Matrix() = default;
  Matrix(int r, int c, double fill = 0) : rows(r), cols(c), v(static_cast<size_t>(r) * c, fill) {}
  Matrix(std::initializer_list<std::initializer_list<double>> rows_);
  double& operator()(int i, int j) { return v[static_cast<size_t>(i) * cols + j]; }
  double operator()(int i, int j) const { return v[static_cast<size_t>(i) * cols + j]; }
};

double max_abs_diff(const Matrix& a, const Matrix& b);

struct AttentionWalkInput {
  Matrix q, k, v;           // (L, d), (S, d), (S, dv)
  Matrix g;                 // (L, dv): the loss is Σ context ⊙ g
  std::vector<bool> mask;   // empty, or L·S row-major: true = the query may NOT attend to that key
  bool causal = false;      // also hide key j from query i when j > i
  // The seed example of the README: Q = [[1,0],[0,1]], K = [[1,0],[1,1],[0,1]],
  // V = [[10,0],[0,5],[0,1]], and G = I (so L = context₀₀ + context₁₁).
  static AttentionWalkInput seed();
  // True where query i may not see key j (the mask, and the causal rule).
  bool hidden(int i, int j) const;
};

// Throws std::invalid_argument naming the matrix ("Q", "K", "V", "G", "mask") when shapes
// disagree, a value is not finite, or a query is left with no key to attend to.
void check_attention_walk_input(const AttentionWalkInput& in);

// A number of the walk (an input, or a quantity computed from them) beyond ±largest: the
// largest finite value of the type it runs in (DBL_MAX for explain, FLT_MAX for explore
// --dtype float32). Such a walk would compare infinities and NaNs, so it is refused instead.
struct AttentionWalkRangeProblem {
  std::vector<std::string> matrices;  // the inputs it is made of: "Q", "K", "V", "G"
  std::string quantity;               // "S = Q·Kᵀ/√d", or the input's name
  std::string value;                  // the first value beyond the range, "1.0e+40" or "inf"
};
std::optional<AttentionWalkRangeProblem> attention_walk_range_problem(const AttentionWalkInput& in, double largest);

struct AttentionWalkStep {
  std::string quantity;      // "dL/dV"
  std::string formula;       // "Aᵀ·G" (plain Unicode text)
  std::string formula_mathml;  // the same formula as MathML (inside <math>)
  Matrix by_hand, engine, finite_diff;
  double engine_diff = 0, fd_diff = 0;  // max |by_hand − engine|, max |by_hand − finite_diff|
  // The rounding floor of central differences of L (AttentionWalk::fd_floor): a difference
  // below it cannot be told from rounding, so it is not a disagreement.
  double fd_floor = 0;
  // The reference's lines that computed by_hand, in the order its backward walk ran them.
  std::vector<ReferenceLine> reference;
  double scale() const;   // max(1, max |by_hand|)
  // engine_diff <= kEngineTolerance·scale() and fd_diff <= kFiniteDiffTolerance·scale() + fd_floor
  // (a NaN or an infinity anywhere makes a difference infinite: it never agrees).
  bool agrees() const;
};

// What `explain attention` calls agreement (its exit status is 1 otherwise).
constexpr double kEngineTolerance = 1e-12, kFiniteDiffTolerance = 1e-6;

struct AttentionWalk {
  AttentionWalkInput in;
  Matrix scores, weights, context;  // S (scaled, before the mask), A, C
  double loss = 0;
  double fd_step = 1e-6;            // h of the central differences (f(x+h) − f(x−h)) / 2h
  // What rounding alone can make of those differences: L is a sum of n = S + L·dv + 8 rounded
  // steps over terms whose magnitudes add up to L_abs = Σ |G| ⊙ (A·|V|), so each f(x ± h) is off
  // by at most about n·u·L_abs (u = 2^-53), and their difference over 2h by n·u·L_abs/h. Far
  // below the tolerance for ordinary values (2.5e-8 for the seed example); for values near
  // 1e60 it is what finite differences can tell at all.
  double fd_floor = 0;
  std::vector<AttentionWalkStep> steps;  // dL/dcontext, dL/dV, dL/dA, dL/dS, dL/dQ, dL/dK
  bool agrees() const;  // every step
  double worst_engine_diff() const;
  double worst_fd_diff() const;
};

AttentionWalk walk_attention_backward(const AttentionWalkInput& in);

// "[[1.0000, 0.0000], [...]]" on one line per row, aligned: for the text walk.
std::string format_matrix(const Matrix& m, int indent);
// The walk as `attograd explain attention` prints it.
std::string attention_walk_text(const AttentionWalk& w);
// The same walk as one self-contained HTML page (formulas in MathML, no script, no network).
std::string attention_walk_html(const AttentionWalk& w);

}  // namespace ag::viz
