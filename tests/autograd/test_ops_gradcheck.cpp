// Every differentiable op, gradchecked in float64 with torch.autograd.gradcheck's criterion:
// the cases are the one table of cli/harness/gradcheck_cases.h (which `attograd gradcheck ops`
// prints too), and a test fails when an op of autograd/ops.h has no case there.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "cli/harness/gradcheck_cases.h"
#include "autograd/ops.h"

using namespace ag;

namespace {
Generator& gen() {
  static Generator g(2024);
  return g;
}
Tensor rnd(Shape s, double lo = -1, double hi = 1) {
  return Tensor::rand(s, DType::Float64, gen(), lo, hi).requires_grad_();
}

void expect_gradcheck(const GradcheckFn& f, const std::vector<Tensor>& in) {
  const GradcheckReport r = gradcheck(f, in);
  EXPECT_TRUE(r.passed()) << r.table();
}
using V = const std::vector<Tensor>&;

// The function a line of ops.h declares ("" for none): a declaration starts the line with its
// return type, as every declaration in ops.h does.
std::string declared_function(const std::string& line) {
  for (const std::string type : {"Tensor ", "Shape ", "std::vector<Tensor> ", "std::pair<Tensor, Tensor> "}) {
    if (line.rfind(type, 0) != 0) continue;
    size_t b = line.find_first_not_of(' ', type.size()), e = b;
    while (e < line.size() && (std::isalnum(static_cast<unsigned char>(line[e])) || line[e] == '_')) ++e;
    if (b == std::string::npos || e == b || std::isdigit(static_cast<unsigned char>(line[b]))) return "";
    const size_t paren = line.find_first_not_of(' ', e);
    return paren != std::string::npos && line[paren] == '(' ? line.substr(b, e - b) : "";
  }
  return "";
}

// The names of the functions declared in autograd/ops.h (operators aside: they forward to
// named functions).
std::set<std::string> functions_of_ops_h() {
  std::ifstream in(std::string(ATTOGRAD_SOURCE_DIR) + "/autograd/ops.h");
  EXPECT_TRUE(in.good()) << "cannot read autograd/ops.h under " << ATTOGRAD_SOURCE_DIR;
  std::set<std::string> names;
  for (std::string line; std::getline(in, line);)
    if (const std::string n = declared_function(line); !n.empty()) names.insert(n);
  return names;
}

std::string test_name(const OpCase& c, size_t i) {
  std::string n = std::to_string(i) + "_" + c.title();
  for (char& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}
}  // namespace

TEST(GradcheckTable, CoversEveryOpOfOpsH) {
  const std::set<std::string> declared = functions_of_ops_h();
  ASSERT_GT(declared.size(), 40u) << "the parser found too few functions in ops.h";
  std::set<std::string> covered(ops_without_gradient().begin(), ops_without_gradient().end());
  for (const OpCase& c : op_cases()) covered.insert(c.op);
  for (const std::string& op : declared)
    EXPECT_TRUE(covered.count(op)) << op
                                   << " is declared in autograd/ops.h but has no case in cli/harness/gradcheck_cases.cpp";
  for (const std::string& op : covered)
    EXPECT_TRUE(declared.count(op)) << op << " has a case but is not a function of autograd/ops.h";
}

TEST(GradcheckTable, TheCoverageCheckSeesANewDeclaration) {
  // The parser must recognise each form of declaration that ops.h uses.
  for (const std::string line : {"Tensor foo(const Tensor& a);", "std::vector<Tensor> foo(const Tensor& a, int64_t n);",
                                 "std::pair<Tensor, Tensor> foo(const Tensor& a, int64_t k);",
                                 "Shape foo(const Shape& a, const Shape& b, const char* op);"})
    EXPECT_EQ(declared_function(line), "foo") << line;
  EXPECT_EQ(declared_function("inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }"), "");
  EXPECT_EQ(declared_function("// Tensor foo(a) in a comment"), "");
}

class OpCaseTest : public ::testing::TestWithParam<size_t> {};

TEST_P(OpCaseTest, FirstOrder) {
  const OpCase c = op_cases()[GetParam()];
  Generator g(1000 + GetParam());
  const std::vector<Tensor> in = draw_inputs(c, g);
  std::vector<std::string> names;
  for (const auto& a : c.args) names.push_back(a.first);
  const GradcheckReport r = gradcheck(c.f, in, {}, names);
  EXPECT_TRUE(r.passed()) << c.title() << "\n" << r.table();
}

// Second order (torch.autograd.gradgradcheck's criterion): the backward of each case is
// itself recorded under create_graph and checked against central differences.
TEST_P(OpCaseTest, SecondOrder) {
  const OpCase c = op_cases()[GetParam()];
  Generator g(3000 + GetParam());
  const std::vector<Tensor> in = draw_inputs(c, g);
  std::vector<std::string> names;
  for (const auto& a : c.args) names.push_back(a.first);
  const GradcheckReport r = gradgradcheck(c.f, in, {}, names);
  EXPECT_TRUE(r.passed()) << c.title() << "\n" << r.table();
}

// No gradient is dropped in silence: every input of every case that requires grad gets a
// gradient (the output is part of a graph, and backward reaches each input).
TEST_P(OpCaseTest, EveryInputGetsAGradient) {
  const OpCase c = op_cases()[GetParam()];
  Generator g(2000 + GetParam());
  const std::vector<Tensor> in = draw_inputs(c, g);
  const Tensor out = c.f(in);
  ASSERT_TRUE(out.requires_grad()) << c.title() << ": the output has no graph";
  out.backward(Tensor::randn(out.shape(), DType::Float64, g));
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_TRUE(in[i].grad().defined()) << c.title() << ": no gradient for " << c.args[i].first;
}

INSTANTIATE_TEST_SUITE_P(Table, OpCaseTest, ::testing::Range<size_t>(0, op_cases().size()),
                         [](const ::testing::TestParamInfo<size_t>& info) {
                           return test_name(op_cases()[info.param], info.param);
                         });

TEST(Gradcheck, ChainOfSeveralOps) {
  expect_gradcheck(
      [](V x) {
        Tensor h = gelu(linear(x[0], x[1], x[2]));
        Tensor n = layer_norm(h, Tensor(), Tensor());
        return mean(sum(tanh(n) * exp(x[0] * 0.1), {-1}));
      },
      {rnd({2, 4}), rnd({4, 4}), rnd({4})});
}

TEST(Gradcheck, DetectsAWrongBackward) {
  // A gradcheck that cannot fail would be worthless: feed it an op whose backward is off.
  auto wrong_square = [](V x) {
    Tensor out = mul(x[0].detach(), x[0].detach());
    return record(out, "wrong_square", {x[0]}, [a = x[0].detach()](const Tensor& g) {
      return Grads{mul(g, a) * 2.01};  // should be 2·a·g
    });
  };
  const GradcheckReport r = gradcheck(wrong_square, {rnd({3})});
  EXPECT_FALSE(r.passed()) << r.table();
  EXPECT_NE(r.table().find("FAIL"), std::string::npos);
}

TEST(Ops, MatmulMatchesNaiveReferenceOnStridedOperands) {
  Generator g(3);
  Tensor a = Tensor::randn({2, 5, 3}, DType::Float64, g), b = Tensor::randn({2, 4, 3}, DType::Float64, g);
  Tensor c = matmul(a, transpose(b, 1, 2));  // (2, 5, 4)
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 4; ++j) {
        double s = 0;
        for (int64_t k = 0; k < 3; ++k) s += a.at({n, i, k}) * b.at({n, j, k});
        EXPECT_NEAR(c.at({n, i, j}), s, 1e-12);
      }
}

TEST(Ops, SoftmaxIsStableAndFullyMaskedRowsAreZero) {
  const double inf = INFINITY;
  Tensor a = Tensor::from_vector(std::vector<double>{1000, 1001, 1002, -inf, -inf, -inf}, {2, 3}, DType::Float64);
  Tensor s = softmax(a);
  EXPECT_NEAR(s.at({0, 2}), std::exp(0) / (std::exp(-2) + std::exp(-1) + 1), 1e-12);
  EXPECT_EQ(s.at({1, 0}), 0.0);
  Tensor ls = log_softmax(narrow(a, 0, 0, 1));
  EXPECT_NEAR(ls.at({0, 0}), -2 - std::log(std::exp(-2) + std::exp(-1) + 1), 1e-12);
}

TEST(Ops, CrossEntropyValue) {
  Tensor logits = Tensor::matrix({{0, 0, 0}, {1, 2, 3}}, DType::Float64);
  Tensor t = Tensor::from_vector(std::vector<int64_t>{1, 2}, {2});
  const double l1 = std::log(3.0), l2 = std::log(std::exp(1) + std::exp(2) + std::exp(3)) - 3;
  EXPECT_NEAR(cross_entropy(logits, t).item(), (l1 + l2) / 2, 1e-12);
  Tensor ti = Tensor::from_vector(std::vector<int64_t>{-1, 2}, {2});
  EXPECT_NEAR(cross_entropy(logits, ti, {.ignore_index = -1}).item(), l2, 1e-12);
  EXPECT_THROW(cross_entropy(logits, Tensor::from_vector(std::vector<int64_t>{3, 0}, {2})), std::out_of_range);
}

TEST(Ops, LayerNormAndGeluValues) {
  Tensor x = Tensor::matrix({{1, 2, 3, 4}}, DType::Float64);
  Tensor y = layer_norm(x, Tensor(), Tensor(), 1e-5);
  const double m = 2.5, v = 1.25;
  EXPECT_NEAR(y.at({0, 0}), (1 - m) / std::sqrt(v + 1e-5), 1e-12);
  Tensor g = gelu(Tensor::from_vector(std::vector<double>{1.0}, {1}, DType::Float64));
  EXPECT_NEAR(g.item(), 0.8413447460685429, 1e-12);  // x·Φ(x) at 1
  Tensor gt = gelu(Tensor::from_vector(std::vector<double>{1.0}, {1}, DType::Float64), true);
  EXPECT_NEAR(gt.item(), 0.8411919906082768, 1e-12);
}

TEST(Ops, DropoutKeepsExpectationAndIsIdentityInEval) {
  Generator g(11);
  Tensor x = Tensor::ones({10000});
  Tensor y = dropout(x, 0.25, true, g);
  double s = 0;
  int zeros = 0;
  for (double v : y.to_double_vector()) {
    s += v;
    zeros += v == 0;
  }
  EXPECT_NEAR(s / 10000, 1.0, 0.03);
  EXPECT_NEAR(zeros / 10000.0, 0.25, 0.02);
  EXPECT_TRUE(dropout(x, 0.5, false, g).same(x));
}

TEST(Ops, BadInputsNameTheOpShapesAndDtypes) {
  auto msg = [](auto fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  const std::string m1 = msg([] { add(Tensor::zeros({2, 3}), Tensor::zeros({4})); });
  EXPECT_NE(m1.find("add"), std::string::npos) << m1;
  EXPECT_NE(m1.find("[2, 3]"), std::string::npos) << m1;
  const std::string m2 = msg([] { matmul(Tensor::zeros({2, 3}), Tensor::zeros({4, 5})); });
  EXPECT_NE(m2.find("matmul"), std::string::npos) << m2;
  EXPECT_NE(m2.find("float32[4, 5]"), std::string::npos) << m2;
  const std::string m3 = msg([] { mul(Tensor::zeros({2}), Tensor::zeros({2}, DType::Float64)); });
  EXPECT_NE(m3.find("dtype mismatch"), std::string::npos) << m3;
  EXPECT_NE(m3.find("float64[2]"), std::string::npos) << m3;
  const std::string m4 = msg([] { exp(Tensor::zeros({2}, DType::Int64)); });
  EXPECT_NE(m4.find("exp"), std::string::npos) << m4;
  EXPECT_NE(m4.find("int64"), std::string::npos) << m4;
  EXPECT_THROW(embedding(Tensor::from_vector(std::vector<int64_t>{5}, {1}), Tensor::zeros({3, 2})), std::out_of_range);
  EXPECT_THROW(reshape(Tensor::zeros({2, 3}), {4, 2}), std::invalid_argument);
  EXPECT_THROW(narrow(Tensor::zeros({2, 3}), 1, 2, 2), std::invalid_argument);
  EXPECT_THROW(concat({Tensor::zeros({2, 3}), Tensor::zeros({3, 3})}, 1), std::invalid_argument);
  EXPECT_THROW(softmax(Tensor::zeros({2, 3}), 2), std::invalid_argument);  // dim out of range
  EXPECT_THROW(masked_fill(Tensor::zeros({2, 3}), Tensor::zeros({2, 3}), 0), std::invalid_argument);  // not bool
}
