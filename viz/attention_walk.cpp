#include "viz/attention_walk.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <utility>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "reference/ops.h"
#include "viz/html_escape.h"

namespace ag::viz {

Matrix::Matrix(std::initializer_list<std::initializer_list<double>> rows_) {
  rows = static_cast<int>(rows_.size());
  cols = rows ? static_cast<int>(rows_.begin()->size()) : 0;
  for (const auto& r : rows_) {
    if (static_cast<int>(r.size()) != cols) throw std::invalid_argument("Matrix: ragged rows");
    v.insert(v.end(), r.begin(), r.end());
  }
}

double max_abs_diff(const Matrix& a, const Matrix& b) {
  if (a.rows != b.rows || a.cols != b.cols) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (size_t i = 0; i < a.v.size(); ++i) {
    // A NaN or an infinity on either side is a disagreement, never a difference of 0 (inf − inf
    // is NaN, and std::max would drop a NaN).
    if (!std::isfinite(a.v[i]) || !std::isfinite(b.v[i])) return std::numeric_limits<double>::infinity();
    m = std::max(m, std::fabs(a.v[i] - b.v[i]));
  }
  return m;
}

AttentionWalkInput AttentionWalkInput::seed() {
  AttentionWalkInput in;
  in.q = Matrix{{1, 0}, {0, 1}};
  in.k = Matrix{{1, 0}, {1, 1}, {0, 1}};
  in.v = Matrix{{10, 0}, {0, 5}, {0, 1}};
  in.g = Matrix{{1, 0}, {0, 1}};
  return in;
}

bool AttentionWalkInput::hidden(int i, int j) const {
  if (causal && j > i) return true;
  return !mask.empty() && mask[static_cast<size_t>(i) * k.rows + j];
}

void check_attention_walk_input(const AttentionWalkInput& in) {
  auto shape = [](const Matrix& m) { return "(" + std::to_string(m.rows) + ", " + std::to_string(m.cols) + ")"; };
  auto finite = [](const Matrix& m, const char* name) {
    for (double x : m.v)
      if (!std::isfinite(x)) throw std::invalid_argument(std::string(name) + " holds a value that is not finite");
  };
  if (in.q.rows < 1 || in.q.cols < 1) throw std::invalid_argument("Q must have at least one row and one column");
  if (in.k.rows < 1) throw std::invalid_argument("K must have at least one row");
  if (in.k.cols != in.q.cols)
    throw std::invalid_argument("K " + shape(in.k) + " must have as many columns as Q " + shape(in.q) + " (d)");
  if (in.v.rows != in.k.rows || in.v.cols < 1)
    throw std::invalid_argument("V " + shape(in.v) + " must have one row per key: K is " + shape(in.k));
  if (in.g.rows != in.q.rows || in.g.cols != in.v.cols)
    throw std::invalid_argument("G " + shape(in.g) + " must be shaped like the context (" + std::to_string(in.q.rows) +
                                ", " + std::to_string(in.v.cols) + ")");
  if (!in.mask.empty() && in.mask.size() != static_cast<size_t>(in.q.rows) * in.k.rows)
    throw std::invalid_argument("mask must be (" + std::to_string(in.q.rows) + ", " + std::to_string(in.k.rows) +
                                "): one row per query, one column per key");
  finite(in.q, "Q"), finite(in.k, "K"), finite(in.v, "V"), finite(in.g, "G");
  for (int i = 0; i < in.q.rows; ++i) {
    bool any = false;
    for (int j = 0; j < in.k.rows; ++j) any = any || !in.hidden(i, j);
    if (!any)
      throw std::invalid_argument("mask" + std::string(in.causal ? " (with the causal rule)" : "") + " hides every key from query " +
                                  std::to_string(i) + "; its softmax would have nothing to normalise");
  }
}

namespace {

ref::Tensor ref_of(const Matrix& m, bool requires_grad = false) {
  return ref::tensor({m.rows, m.cols}, m.v, requires_grad);
}
Matrix matrix_of(const std::vector<double>& v, int rows, int cols) {
  Matrix m(rows, cols);
  m.v = v;
  return m;
}
Matrix value_of(const ref::Tensor& t) {
  return matrix_of(t->data, static_cast<int>(t->shape[0]), static_cast<int>(t->shape[1]));
}
Matrix grad_of(const ref::Tensor& t) {
  return matrix_of(t->grad, static_cast<int>(t->shape[0]), static_cast<int>(t->shape[1]));
}

// hidden (L, S): 1 where query i may not see key j (the mask and the causal rule); null for none.
ref::Tensor hidden_of(const AttentionWalkInput& in) {
  ref::Tensor h = ref::zeros({in.q.rows, in.k.rows});
  bool any = false;
  for (int i = 0; i < in.q.rows; ++i)
    for (int j = 0; j < in.k.rows; ++j)
      if (in.hidden(i, j)) h->data[static_cast<size_t>(i) * in.k.rows + j] = 1, any = true;
  return any ? h : nullptr;
}

double loss_of_context(const Matrix& c, const Matrix& g) {
  double l = 0;
  for (size_t i = 0; i < c.v.size(); ++i) l += c.v[i] * g.v[i];
  return l;
}

// The walk's quantities as the reference core computes them (reference/ops.cpp's attention, then
// its backward walk from dL/dC = G): plain loops in float64.
struct ReferenceWalk {
  Matrix S, A, C, dC, dV, dA, dS, dQ, dK;
  double L = 0;
};
ReferenceWalk reference_walk(const AttentionWalkInput& in) {
  const ref::Tensor Q = ref_of(in.q, true), K = ref_of(in.k, true), V = ref_of(in.v, true);
  const ref::Attention a = ref::attention(Q, K, V, hidden_of(in));  // S = Q·Kᵀ/√d, A = softmax(S), C = A·V
  ref::backward(a.output, ref_of(in.g));                             // L = Σ C ⊙ G, so dL/dC = G
  ReferenceWalk w;
  w.S = value_of(a.scores), w.A = value_of(a.weights), w.C = value_of(a.output);
  w.L = loss_of_context(w.C, in.g);
  w.dC = grad_of(a.output), w.dV = grad_of(V), w.dA = grad_of(a.weights), w.dS = grad_of(a.scores);
  w.dQ = grad_of(Q), w.dK = grad_of(K);
  return w;
}

// L as a function of one quantity, the rest of the forward from there on recomputed by the reference.
double loss_from_context(const AttentionWalkInput& in, const Matrix& c) { return loss_of_context(c, in.g); }
double loss_from_weights(const AttentionWalkInput& in, const Matrix& a, const Matrix& v) {
  return loss_of_context(value_of(ref::matmul(ref_of(a), ref_of(v))), in.g);
}
double loss_from_scores(const AttentionWalkInput& in, const Matrix& s) {
  const ref::Tensor hidden = hidden_of(in), scores = ref_of(s);
  return loss_from_weights(in, value_of(ref::softmax(hidden ? ref::masked_fill(scores, hidden) : scores)), in.v);
}
double loss_from_inputs(const AttentionWalkInput& in, const Matrix& q, const Matrix& k) {
  return loss_of_context(value_of(ref::attention(ref_of(q), ref_of(k), ref_of(in.v), hidden_of(in)).output), in.g);
}

// Central differences of f at x, entry by entry.
Matrix finite_differences(const Matrix& x, double h, const std::function<double(const Matrix&)>& f) {
  Matrix d(x.rows, x.cols), xp = x;
  for (size_t i = 0; i < x.v.size(); ++i) {
    xp.v[i] = x.v[i] + h;
    const double up = f(xp);
    xp.v[i] = x.v[i] - h;
    const double down = f(xp);
    xp.v[i] = x.v[i];
    d.v[i] = (up - down) / (2 * h);
  }
  return d;
}

Tensor to_tensor(const Matrix& m) {
  return Tensor::from_vector(m.v, {m.rows, m.cols}, DType::Float64);
}
Matrix from_tensor(const Tensor& t) {
  if (!t.defined()) throw std::logic_error("explain attention: the engine computed no gradient for a quantity");
  Matrix m(static_cast<int>(t.size(0)), static_cast<int>(t.size(1)));
  m.v = t.to_double_vector();
  return m;
}

// MathML pieces.
std::string mi(const std::string& s) { return "<mi>" + s + "</mi>"; }
std::string mo(const std::string& s) {  // parentheses keep their size: they wrap one line
  return (s == "(" || s == ")" ? "<mo stretchy=\"false\">" : "<mo>") + s + "</mo>";
}
std::string dl(const std::string& x) {  // ∂L/∂x
  return "<mfrac><mrow><mo>∂</mo><mi>L</mi></mrow><mrow><mo>∂</mo>" + x + "</mrow></mfrac>";
}
std::string sup_t(const std::string& x) { return "<msup>" + x + "<mi>T</mi></msup>"; }
const std::string kSqrtD = "<msqrt><mi>d</mi></msqrt>";

}  // namespace

namespace {
// The first entry of m beyond ±largest (or NaN), as "1.0e+40"; "" when all fit.
std::string beyond(const Matrix& m, double largest) {
  for (double x : m.v)
    if (!(std::fabs(x) <= largest)) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1e", x);
      return buf;
    }
  return "";
}
}  // namespace

std::optional<AttentionWalkRangeProblem> attention_walk_range_problem(const AttentionWalkInput& in, double largest) {
  // The inputs themselves, then every quantity of the walk in the order it is computed, each
  // blamed on the inputs it is made of. Computed in double: beyond DBL_MAX it is inf.
  for (const auto& [m, name] : {std::pair{&in.q, "Q"}, {&in.k, "K"}, {&in.v, "V"}, {&in.g, "G"}})
    if (const std::string x = beyond(*m, largest); !x.empty()) return AttentionWalkRangeProblem{{name}, name, x};
  const ReferenceWalk w = reference_walk(in);
  const Matrix L(1, 1, w.L);
  const std::vector<std::tuple<const Matrix*, std::vector<std::string>, const char*>> quantities = {
      {&w.S, {"Q", "K"}, "S = Q·Kᵀ/√d"},      {&L, {"V", "G"}, "L = Σ C ⊙ G"},
      {&w.dA, {"V", "G"}, "dL/dA = G·Vᵀ"},    {&w.dS, {"V", "G"}, "dL/dS"},
      {&w.dQ, {"K", "V", "G"}, "dL/dQ = dL/dS·K/√d"}, {&w.dK, {"Q", "V", "G"}, "dL/dK = (dL/dS)ᵀ·Q/√d"}};
  for (const auto& [m, blame, quantity] : quantities)
    if (const std::string x = beyond(*m, largest); !x.empty()) return AttentionWalkRangeProblem{blame, quantity, x};
  return std::nullopt;
}

double AttentionWalkStep::scale() const {
  double m = 1;
  for (double x : by_hand.v) m = std::max(m, std::fabs(x));
  return m;
}
bool AttentionWalkStep::agrees() const {
  return engine_diff <= kEngineTolerance * scale() && fd_diff <= kFiniteDiffTolerance * scale() + fd_floor;
}
bool AttentionWalk::agrees() const {
  return std::all_of(steps.begin(), steps.end(), [](const AttentionWalkStep& s) { return s.agrees(); });
}

double AttentionWalk::worst_engine_diff() const {
  double m = 0;
  for (const auto& s : steps) m = std::max(m, s.engine_diff);
  return m;
}
double AttentionWalk::worst_fd_diff() const {
  double m = 0;
  for (const auto& s : steps) m = std::max(m, s.fd_diff);
  return m;
}

std::vector<ReferenceLine> reference_lines_of(const std::string& quantity, bool masked) {
  // Each step's gradient is made by these lines of the reference, in the order its walk runs them
  // (the forward: S = scale(matmul(Q, transpose(K))), masked_fill, A = softmax, C = matmul(A, V)).
  struct Line {
    const char* quantity;
    const char* section;
    const char* marker;
  };
  static const Line lines[] = {
      {"dL/dcontext", "the walk", "root->grad = seed"},
      {"dL/dV", "matmul", "// db = aᵀ·g"},
      {"dL/dA", "matmul", "// da = g·bᵀ"},
      {"dL/dS", "softmax", "// dx_j = y_j·(g_j − Σ_k g_k·y_k)"},
      {"dL/dS", "masked_fill", "// no gradient where hidden"},
      {"dL/dQ", "scale", "// da = s·g"},
      {"dL/dQ", "matmul", "// da = g·bᵀ"},
      {"dL/dK", "scale", "// da = s·g"},
      {"dL/dK", "matmul", "// db = aᵀ·g"},
      {"dL/dK", "transpose", "// da = g with the two dims swapped back"},
  };
  std::vector<ReferenceLine> out;
  for (const Line& l : lines)
    if (quantity == l.quantity && (masked || std::string(l.section) != "masked_fill"))
      out.push_back(reference_line(l.section, l.marker));
  return out;
}

AttentionWalk walk_attention_backward(const AttentionWalkInput& in) {
  check_attention_walk_input(in);
  if (const auto p = attention_walk_range_problem(in, std::numeric_limits<double>::max())) {
    std::string names;
    for (const std::string& m : p->matrices) names += (names.empty() ? "" : ", ") + m;
    throw std::invalid_argument(names + ": " + p->quantity + " reaches " + p->value + ", beyond float64's range");
  }
  AttentionWalk w;
  w.in = in;
  const double inv_sqrt_d = 1 / std::sqrt(static_cast<double>(in.q.cols));
  // ---- by hand: the reference core's plain loops (reference/) ------------------------------------
  const ReferenceWalk r = reference_walk(in);
  w.scores = r.S, w.weights = r.A, w.context = r.C, w.loss = r.L;
  const Matrix& A = w.weights;

  // ---- the engine: a float64 forward built from ops, intermediates kept with retain_grad ---------
  Matrix eC, eV, eA, eS, eQ, eK;
  {
    EnableGradGuard grad_on;
    const Tensor Q = to_tensor(in.q).requires_grad_(), K = to_tensor(in.k).requires_grad_(),
                 V = to_tensor(in.v).requires_grad_();
    const Tensor S = mul(matmul(Q, ag::transpose(K, 0, 1)), inv_sqrt_d);  // (L, S)
    Tensor Sm = S;
    bool any_hidden = false;
    std::vector<bool> hide(static_cast<size_t>(in.q.rows) * in.k.rows);
    for (int i = 0; i < in.q.rows; ++i)
      for (int j = 0; j < in.k.rows; ++j) any_hidden |= (hide[static_cast<size_t>(i) * in.k.rows + j] = in.hidden(i, j));
    if (any_hidden)
      Sm = masked_fill(S, Tensor::from_vector(hide, {in.q.rows, in.k.rows}), -std::numeric_limits<double>::infinity());
    const Tensor Aw = softmax(Sm, -1);  // (L, S)
    const Tensor C = matmul(Aw, V);     // (L, dv)
    S.retain_grad(), Aw.retain_grad(), C.retain_grad();
    sum(mul(C, to_tensor(in.g))).backward();
    eC = from_tensor(C.grad()), eV = from_tensor(V.grad()), eA = from_tensor(Aw.grad());
    eS = from_tensor(S.grad()), eQ = from_tensor(Q.grad()), eK = from_tensor(K.grad());
  }

  // ---- finite differences of L as a function of each quantity, downstream recomputed ------------
  const double h = w.fd_step;
  const Matrix fC = finite_differences(w.context, h, [&](const Matrix& c) { return loss_from_context(in, c); });
  const Matrix fV = finite_differences(in.v, h, [&](const Matrix& v) { return loss_from_weights(in, A, v); });
  const Matrix fA = finite_differences(A, h, [&](const Matrix& a) { return loss_from_weights(in, a, in.v); });
  const Matrix fS = finite_differences(w.scores, h, [&](const Matrix& s) { return loss_from_scores(in, s); });
  const Matrix fQ = finite_differences(in.q, h, [&](const Matrix& q) { return loss_from_inputs(in, q, in.k); });
  const Matrix fK = finite_differences(in.k, h, [&](const Matrix& k) { return loss_from_inputs(in, in.q, k); });

  double l_abs = 0;  // Σ |G| ⊙ (A·|V|): the magnitudes L's rounded steps add up
  for (int i = 0; i < in.g.rows; ++i)
    for (int j = 0; j < in.g.cols; ++j) {
      double c = 0;
      for (int k = 0; k < A.cols; ++k) c += A(i, k) * std::fabs(in.v(k, j));
      l_abs += std::fabs(in.g(i, j)) * c;
    }
  const double steps = static_cast<double>(in.k.rows + in.g.rows * in.g.cols + 8);
  w.fd_floor = steps * (std::numeric_limits<double>::epsilon() / 2) * l_abs / h;
  const bool masked = hidden_of(in) != nullptr;
  auto step = [&](std::string q, std::string f, std::string mml, Matrix hand, Matrix eng, Matrix fd) {
    AttentionWalkStep s{std::move(q), std::move(f), std::move(mml), std::move(hand), std::move(eng), std::move(fd), 0, 0, 0, {}};
    s.engine_diff = max_abs_diff(s.by_hand, s.engine);
    s.fd_diff = max_abs_diff(s.by_hand, s.finite_diff);
    s.fd_floor = w.fd_floor;
    s.reference = reference_lines_of(s.quantity, masked);
    w.steps.push_back(std::move(s));
  };
  const std::string dA_m = dl(mi("A"));
  step("dL/dcontext", "G", dl(mi("C")) + mo("=") + mi("G"), r.dC, eC, fC);
  step("dL/dV", "Aᵀ·G", dl(mi("V")) + mo("=") + sup_t(mi("A")) + mo("·") + mi("G"), r.dV, eV, fV);
  step("dL/dA", "G·Vᵀ", dA_m + mo("=") + mi("G") + mo("·") + sup_t(mi("V")), r.dA, eA, fA);
  step("dL/dS", "A ⊙ (dL/dA − rowsum(A ⊙ dL/dA))",
       dl(mi("S")) + mo("=") + mi("A") + mo("⊙") + "<mrow>" + mo("(") + dA_m + mo("−") + mi("rowsum") + mo("(") + mi("A") +
           mo("⊙") + dA_m + mo(")") + mo(")") + "</mrow>",
       r.dS, eS, fS);
  step("dL/dQ", "dL/dS·K/√d", dl(mi("Q")) + mo("=") + "<mfrac><mrow>" + dl(mi("S")) + mo("·") + mi("K") + "</mrow>" + kSqrtD + "</mfrac>",
       r.dQ, eQ, fQ);
  step("dL/dK", "(dL/dS)ᵀ·Q/√d",
       dl(mi("K")) + mo("=") + "<mfrac><mrow>" + sup_t("<mrow>" + mo("(") + dl(mi("S")) + mo(")") + "</mrow>") + mo("·") +
           mi("Q") + "</mrow>" + kSqrtD + "</mfrac>",
       r.dK, eK, fK);
  return w;
}

// ---- text --------------------------------------------------------------------------------------

namespace {
std::string num(double x, int decimals = 4) {
  if (x == 0) x = 0;  // no "-0.0000"
  char buf[64];
  // Large values in scientific notation: "%.4f" of 1e60 has 65 characters, and a buffer that
  // cut it printed a number 13 orders of magnitude smaller. Printed values are the values.
  std::snprintf(buf, sizeof buf, std::fabs(x) < 1e9 || !std::isfinite(x) ? "%.*f" : "%.*e", decimals, x);
  std::string s = buf;
  if (s[0] == '-' && s.find_first_not_of("0.", 1) == std::string::npos) s.erase(0, 1);  // -0.0000 (rounded) -> 0.0000
  return s;
}
std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1e", x);
  return buf;
}
// The engine runs BLAS, whose kernels (chosen by the CPU) may round the last bit differently:
// a difference at the level of rounding prints the same everywhere.
std::string engine_diff_text(double diff, double scale) { return diff <= 1e-15 * scale ? "≤ 1e-15" : sci(diff); }
std::string shape_of(const Matrix& m) { return "(" + std::to_string(m.rows) + ", " + std::to_string(m.cols) + ")"; }
// "softmax's backward, then masked_fill's", then each line with its place:
//      reference/ops.cpp:175  for (...) dx[r * C + j] = y[j] * (g[j] - gy);  // dx_j = ...
std::string reference_lines_text(const std::vector<ReferenceLine>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    const bool seed = lines[i].section == "the walk";
    out += (i ? ", then " : "") + lines[i].section + (seed ? "'s seed" : i ? "'s" : "'s backward");
  }
  for (const ReferenceLine& l : lines) out += "\n     " + l.at() + "  " + l.text;
  return out;
}

const char* kWhyLoss =
    "The loss: L = Σ context ⊙ G. Its gradient dL/dcontext is G itself, so the walk starts from a\n"
    "known upstream gradient, which is what attention receives from the layers above it. Any\n"
    "other loss on the context only changes G (a cross-entropy on it gives G = softmax(context) −\n"
    "onehot(target)); choosing G keeps every number readable. --g sets another G.\n";
}  // namespace

std::string format_matrix(const Matrix& m, int indent) {
  std::vector<std::string> cells;
  size_t width = 0;
  for (double x : m.v) width = std::max(width, (cells.emplace_back(num(x))).size());
  std::string out, pad(static_cast<size_t>(indent), ' ');
  for (int i = 0; i < m.rows; ++i) {
    out += pad + (i == 0 ? "[[" : " [");
    for (int j = 0; j < m.cols; ++j) {
      const std::string& c = cells[static_cast<size_t>(i) * m.cols + j];
      out += std::string(width - c.size(), ' ') + c + (j + 1 < m.cols ? ", " : "");
    }
    out += i + 1 < m.rows ? "],\n" : "]]\n";
  }
  return out;
}

std::string attention_walk_text(const AttentionWalk& w) {
  std::ostringstream os;
  const auto& in = w.in;
  os << "one attention head, d = " << in.q.cols << ", no projections, float64";
  if (in.causal) os << ", causal";
  if (!in.mask.empty()) os << ", masked";
  os << "\n\ninputs\n";
  os << "  Q " << shape_of(in.q) << " =\n" << format_matrix(in.q, 4);
  os << "  K " << shape_of(in.k) << " =\n" << format_matrix(in.k, 4);
  os << "  V " << shape_of(in.v) << " =\n" << format_matrix(in.v, 4);
  if (const ReferenceSection* a = reference_section("attention"))
    os << "\nforward, as the reference's attention computes it (" << a->at() << ")\n";
  os << "  S = Q·Kᵀ/√d " << shape_of(w.scores) << " =\n" << format_matrix(w.scores, 4);
  if (in.causal || !in.mask.empty()) {
    os << "  hidden keys (S → −∞ before the softmax; x = hidden):\n";
    for (int i = 0; i < w.scores.rows; ++i) {
      os << "    query " << i << ": ";
      for (int j = 0; j < w.scores.cols; ++j) os << (in.hidden(i, j) ? "x" : ".");
      os << "\n";
    }
  }
  os << "  A = softmax(S), row by row =\n" << format_matrix(w.weights, 4);
  os << "  context = A·V " << shape_of(w.context) << " =\n" << format_matrix(w.context, 4);
  os << "  L = Σ context ⊙ G = " << num(w.loss) << ", with G =\n" << format_matrix(in.g, 4);
  os << "\n" << kWhyLoss;
  os << "\nbackward: each gradient by hand (by the reference core's plain loops, at the lines named),\n"
        "then the difference from attograd's engine (retain_grad on a float64 forward built from ops)\n"
        "and from central finite differences of L (h = "
     << sci(w.fd_step) << ")\n";
  int n = 1;
  for (const auto& s : w.steps) {
    os << "\n" << n++ << ". " << s.quantity << " = " << s.formula << " " << shape_of(s.by_hand) << " =\n"
       << format_matrix(s.by_hand, 4);
    os << "   reference: " << reference_lines_text(s.reference) << "\n";
    os << "   engine: max |difference| " << engine_diff_text(s.engine_diff, s.scale())
       << "   finite differences: max |difference| " << sci(s.fd_diff) << "\n";
  }
  double scale = 1;
  for (const auto& s : w.steps) scale = std::max(scale, s.scale());
  if (w.fd_floor > kFiniteDiffTolerance)
    os << "\nL's terms are large: finite differences of L cannot tell apart values closer than " << sci(w.fd_floor)
       << " (their rounding floor), which the check allows\n";
  if (w.agrees())
    os << "\nevery gradient equals the engine's to " << engine_diff_text(w.worst_engine_diff(), scale)
       << " and finite differences to " << sci(w.worst_fd_diff()) << "\n";
  else
    os << "\nsome gradient disagrees: the largest difference from the engine's is "
       << engine_diff_text(w.worst_engine_diff(), scale) << ", from finite differences " << sci(w.worst_fd_diff()) << "\n";
  return os.str();
}

// ---- HTML --------------------------------------------------------------------------------------

namespace {
std::string mathml_matrix(const Matrix& m, const AttentionWalkInput* hide = nullptr) {
  std::string s = "<mrow><mo>[</mo><mtable>";
  for (int i = 0; i < m.rows; ++i) {
    s += "<mtr>";
    for (int j = 0; j < m.cols; ++j) {
      const bool h = hide && hide->hidden(i, j);
      s += h ? "<mtd class=\"hidden\"><mn>" : "<mtd><mn>";
      s += num(m(i, j)) + "</mn></mtd>";
    }
    s += "</mtr>";
  }
  return s + "</mtable><mo>]</mo></mrow>";
}
std::string math(const std::string& body) { return "<math display=\"block\">" + body + "</math>"; }
// The reference's lines of a step, each with its place.
std::string reference_lines_html(const std::vector<ReferenceLine>& lines) {
  std::string s = "<pre class=\"ref\">";
  for (const ReferenceLine& l : lines) s += html_text(l.at() + " (" + l.section + ")") + "\n    " + html_text(l.text) + "\n";
  return s + "</pre>\n";
}
}  // namespace

std::string attention_walk_html(const AttentionWalk& w) {
  const auto& in = w.in;
  const bool masked = in.causal || !in.mask.empty();
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
        "<title>attograd explain attention: the backward pass, step by step</title>\n<style>\n"
        "body{font-family:'DejaVu Sans',sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}\n"
        "math{font-size:1.15em} .hidden{color:#aaa;background:#eee}\n"
        ".step{border-top:1px solid #ccc;margin-top:1.5em;padding-top:.5em}\n"
        "table.three{border-collapse:collapse} table.three td{padding:0 1.5em 0 0;vertical-align:top}\n"
        ".ok{color:#1a7f37} .bad{color:#b00020;font-weight:bold} .small{font-size:.9em;color:#555}\n"
        "pre.ref{background:#f6f8fa;padding:.4em .8em;font-size:.85em;overflow-x:auto}\n"
        "</style></head><body>\n";
  os << "<h1>The backward pass of one attention head</h1>\n<p>One head, d = " << in.q.cols
     << ", no projections, float64" << (in.causal ? ", causal" : "") << (!in.mask.empty() ? ", with a mask" : "")
     << ". Written by <code>attograd explain attention --html</code>; every number below was computed by the program "
        "that wrote this page.</p>\n";
  os << "<h2>Forward</h2>\n";
  if (const ReferenceSection* a = reference_section("attention"))
    os << "<p>As the reference's attention computes it (" << html_text(a->at()) << "):</p>\n<pre class=\"ref\">"
       << html_text(a->text) << "</pre>\n";
  os << math(mi("Q") + mo("=") + mathml_matrix(in.q) + mo(",") + mi("K") + mo("=") + mathml_matrix(in.k) + mo(",") + mi("V") +
             mo("=") + mathml_matrix(in.v));
  os << math(mi("S") + mo("=") + "<mfrac><mrow>" + mi("Q") + sup_t(mi("K")) + "</mrow>" + kSqrtD + "</mfrac>" + mo("=") +
             mathml_matrix(w.scores, masked ? &in : nullptr));
  if (masked) os << "<p class=\"small\">Grey entries are hidden keys: they become −∞ before the softmax, so their weight is 0.</p>\n";
  os << math(mi("A") + mo("=") + mi("softmax") + mo("(") + mi("S") + mo(")") + mo("=") +
             mathml_matrix(w.weights, masked ? &in : nullptr));
  os << math(mi("C") + mo("=") + mi("A") + mo("·") + mi("V") + mo("=") + mathml_matrix(w.context));
  os << math(mi("L") + mo("=") + "<munder><mo>∑</mo><mrow></mrow></munder>" + mi("C") + mo("⊙") + mi("G") + mo("=") + "<mn>" +
             num(w.loss) + "</mn>" + mo(",") + mi("G") + mo("=") + mathml_matrix(in.g));
  os << "<p>" << html_text(kWhyLoss) << "</p>\n";
  os << "<h2>Backward</h2>\n<p>Each gradient three ways: by hand (by the reference core's plain loops, <code>reference/</code>, "
        "at the lines shown), as attograd's engine computed it (<code>retain_grad()</code> on a float64 forward built "
        "from ops), and by central finite differences of L (h = "
     << sci(w.fd_step) << ").</p>\n";
  int n = 1;
  for (const auto& s : w.steps) {
    const bool ok = s.agrees();
    os << "<div class=\"step\" id=\"step" << n << "\"><h3>" << n << ". " << html_text(s.quantity) << "</h3>\n"
       << math(s.formula_mathml) << reference_lines_html(s.reference) << "<table class=\"three\"><tr><td>by hand" << math(mathml_matrix(s.by_hand))
       << "</td><td>engine" << math(mathml_matrix(s.engine)) << "</td><td>finite differences"
       << math(mathml_matrix(s.finite_diff)) << "</td></tr></table>\n<p class=\"" << (ok ? "ok" : "bad")
       << "\">max |by hand − engine| " << engine_diff_text(s.engine_diff, s.scale())
       << ", max |by hand − finite differences| " << sci(s.fd_diff)
       << "</p></div>\n";
    ++n;
  }
  os << "</body></html>\n";
  return os.str();
}

}  // namespace ag::viz
