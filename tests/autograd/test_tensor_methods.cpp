// Issue 21's tensor API: the Tensor methods (each the op of ops.h with the same name, bit for
// bit), the spelling the issue gives compiling as written, and the comparisons (bool tensors,
// broadcast, never requiring grad). Values, gradients and second order against PyTorch are in
// test_ops_parity.cpp (fixtures) and the gradcheck table (test_ops_gradcheck.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <tuple>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace ag;
using ag::testing_util::error_of;

namespace {
Tensor rnd(Shape s, uint64_t seed, double lo = -1, double hi = 1) {
  Generator g(seed);
  return Tensor::rand(s, DType::Float64, g, lo, hi).requires_grad_();
}

void expect_same_values(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  EXPECT_EQ(a.to_double_vector(), b.to_double_vector()) << what;
}

std::vector<bool> bools(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::Bool);
  std::vector<bool> v;
  for (double d : t.to_double_vector()) v.push_back(d != 0);
  return v;
}
}  // namespace

// Each method returns what its op returns, and carries the op's graph (the gradient reaches x).
TEST(TensorMethods, EachMethodIsItsOp) {
  using Fn = std::function<Tensor(const Tensor&)>;
  const std::vector<std::tuple<std::string, Fn, Fn>> table = {
      {"sum", [](const Tensor& x) { return x.sum(); }, [](const Tensor& x) { return sum(x); }},
      {"sum dims keepdim", [](const Tensor& x) { return x.sum({0}, /*keepdim=*/true); },
       [](const Tensor& x) { return sum(x, {0}, true); }},
      {"mean", [](const Tensor& x) { return x.mean(); }, [](const Tensor& x) { return mean(x); }},
      {"mean dims", [](const Tensor& x) { return x.mean({-1}); }, [](const Tensor& x) { return mean(x, {-1}); }},
      {"var", [](const Tensor& x) { return x.var(); }, [](const Tensor& x) { return var(x); }},
      {"var dims", [](const Tensor& x) { return x.var({1}, 0.0, true); }, [](const Tensor& x) { return var(x, {1}, 0.0, true); }},
      {"amax", [](const Tensor& x) { return x.amax({1}); }, [](const Tensor& x) { return amax(x, {1}); }},
      {"amin", [](const Tensor& x) { return x.amin(); }, [](const Tensor& x) { return amin(x); }},
      {"max()", [](const Tensor& x) { return x.max(); }, [](const Tensor& x) { return amax(x); }},
      {"min()", [](const Tensor& x) { return x.min(); }, [](const Tensor& x) { return amin(x); }},
      {"max(dim)", [](const Tensor& x) { return std::get<0>(x.max(1)); }, [](const Tensor& x) { return max(x, 1); }},
      {"min(dim, keepdim)", [](const Tensor& x) { return std::get<0>(x.min(0, true)); },
       [](const Tensor& x) { return min(x, 0, true); }},
      {"norm", [](const Tensor& x) { return x.norm(); }, [](const Tensor& x) { return norm(x); }},
      {"norm dims", [](const Tensor& x) { return x.norm(2, {1}, true); }, [](const Tensor& x) { return norm(x, 2, {1}, true); }},
      {"exp", [](const Tensor& x) { return x.exp(); }, [](const Tensor& x) { return exp(x); }},
      {"log", [](const Tensor& x) { return (x * x + 0.5).log(); }, [](const Tensor& x) { return log(x * x + 0.5); }},
      {"sqrt", [](const Tensor& x) { return (x * x + 0.5).sqrt(); }, [](const Tensor& x) { return sqrt(x * x + 0.5); }},
      {"abs", [](const Tensor& x) { return x.abs(); }, [](const Tensor& x) { return abs(x); }},
      {"neg", [](const Tensor& x) { return x.neg(); }, [](const Tensor& x) { return -x; }},
      {"tanh", [](const Tensor& x) { return x.tanh(); }, [](const Tensor& x) { return tanh(x); }},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }, [](const Tensor& x) { return sigmoid(x); }},
      {"relu", [](const Tensor& x) { return x.relu(); }, [](const Tensor& x) { return relu(x); }},
      {"sin", [](const Tensor& x) { return x.sin(); }, [](const Tensor& x) { return sin(x); }},
      {"cos", [](const Tensor& x) { return x.cos(); }, [](const Tensor& x) { return cos(x); }},
      {"pow", [](const Tensor& x) { return x.pow(3.0); }, [](const Tensor& x) { return pow(x, 3.0); }},
      {"clamp", [](const Tensor& x) { return x.clamp(-0.5, 0.5); }, [](const Tensor& x) { return clamp(x, -0.5, 0.5); }},
      {"clamp min", [](const Tensor& x) { return x.clamp(0.0); }, [](const Tensor& x) { return clamp(x, 0.0, std::nullopt); }},
      {"softmax", [](const Tensor& x) { return x.softmax(0); }, [](const Tensor& x) { return softmax(x, 0); }},
      {"log_softmax", [](const Tensor& x) { return x.log_softmax(-1); }, [](const Tensor& x) { return log_softmax(x, -1); }},
      {"matmul", [](const Tensor& x) { return x.matmul(x.t()); }, [](const Tensor& x) { return matmul(x, transpose(x, 0, 1)); }},
      {"t", [](const Tensor& x) { return x.t(); }, [](const Tensor& x) { return transpose(x, 0, 1); }},
      {"transpose", [](const Tensor& x) { return x.transpose(-1, 0); }, [](const Tensor& x) { return transpose(x, 1, 0); }},
      {"permute", [](const Tensor& x) { return x.permute({1, 0}); }, [](const Tensor& x) { return permute(x, {1, 0}); }},
      {"view", [](const Tensor& x) { return x.view({4, 3}); }, [](const Tensor& x) { return view(x, {4, 3}); }},
      {"reshape", [](const Tensor& x) { return x.t().reshape({-1}); }, [](const Tensor& x) { return reshape(transpose(x, 0, 1), {12}); }},
      {"unsqueeze", [](const Tensor& x) { return x.unsqueeze(-1); }, [](const Tensor& x) { return unsqueeze(x, 2); }},
      {"squeeze()", [](const Tensor& x) { return x.unsqueeze(0).unsqueeze(2).squeeze(); }, [](const Tensor& x) { return x; }},
      {"squeeze(dim)", [](const Tensor& x) { return x.unsqueeze(1).squeeze(1); }, [](const Tensor& x) { return x; }},
      {"flip", [](const Tensor& x) { return x.flip({0, 1}); }, [](const Tensor& x) { return flip(x, {0, 1}); }},
      {"chunk", [](const Tensor& x) { return concat(x.chunk(3, 1), 0); }, [](const Tensor& x) { return concat(chunk(x, 3, 1), 0); }},
      {"split", [](const Tensor& x) { return concat(x.split(2), 0); }, [](const Tensor& x) { return concat(split(x, 2, 0), 0); }},
      {"unbind", [](const Tensor& x) { return concat(x.unbind(1), 0); }, [](const Tensor& x) { return concat(unbind(x, 1), 0); }},
  };
  for (const auto& [name, method, op] : table) {
    const Tensor x = rnd({3, 4}, 7);
    const Tensor a = method(x), b = op(x);
    expect_same_values(a, b, name);
    ASSERT_TRUE(a.requires_grad()) << name;
    a.sum().backward();
    EXPECT_TRUE(x.grad().defined()) << name;
  }
  const Tensor x = rnd({3, 4}, 8);
  expect_same_values(x.argmax(1), argmax(x, 1), "argmax");
  expect_same_values(x.argmin(0, true), argmin(x, 0, true), "argmin");
}

// The spelling of issue 21 compiles as written and gives torch's shapes and results.
TEST(TensorMethods, TheIssuesSpelling) {
  const Tensor x = Tensor::matrix({{1, 5, 2}, {7, 0, 7}}, DType::Float64);
  auto [values, indices] = x.max(1, /*keepdim=*/false);
  EXPECT_EQ(values.to_double_vector(), (std::vector<double>{5, 7}));
  EXPECT_EQ(indices.dtype(), DType::Int64);
  EXPECT_EQ(indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));  // the first of a tie, as torch
  auto [mins, argmins] = x.min(0, true);
  EXPECT_EQ(mins.shape(), (Shape{1, 3}));
  EXPECT_EQ(argmins.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(x.max().dim(), 0);
  EXPECT_EQ(x.max().item(), 7);
  EXPECT_EQ(x.min().item(), 0);
  EXPECT_EQ(x.amax({1}).to_double_vector(), (std::vector<double>{5, 7}));
  EXPECT_EQ(x.flip({0, 1}).to_double_vector(), (std::vector<double>{7, 0, 7, 2, 5, 1}));
  EXPECT_EQ(x.sum({0}, /*keepdim=*/true).shape(), (Shape{1, 3}));
  EXPECT_EQ(x.chunk(2, 1).size(), 2u);  // sizes ceil(3 / 2) = 2 and 1
  EXPECT_EQ(x.chunk(2, 1)[1].shape(), (Shape{2, 1}));
  EXPECT_EQ(x.unbind(0).size(), 2u);
  EXPECT_EQ(x.unbind(0)[1].to_double_vector(), (std::vector<double>{7, 0, 7}));
  EXPECT_NEAR(x.norm().item(), std::sqrt(1 + 25 + 4 + 49 + 49), 1e-12);
  EXPECT_NEAR(ag::sin(x).at({0, 0}), std::sin(1.0), 1e-15);
  EXPECT_NEAR(ag::cos(x).at({0, 1}), std::cos(5.0), 1e-15);
  EXPECT_EQ(x.t().shape(), (Shape{3, 2}));
  const Tensor s = x.sum();
  EXPECT_TRUE(s.t().same(s));  // a 0-d or 1-d tensor is its own t(), as torch
  EXPECT_NE(error_of<std::invalid_argument>([] { Tensor::zeros({2, 2, 2}).t(); }).find("t:"), std::string::npos);
  EXPECT_NE(error_of<std::invalid_argument>([&] { x.norm(1); }).find("only p = 2"), std::string::npos);
}

TEST(TensorMethods, ChunkAndSplitFollowTorchOnUnevenAndEmptyDims) {
  // torch.chunk: pieces of ceil(n / chunks), so 6 into 4 gives 3 pieces of 2
  const auto c = Tensor::zeros({6}).chunk(4);
  ASSERT_EQ(c.size(), 3u);
  for (const Tensor& p : c) EXPECT_EQ(p.shape(), (Shape{2}));
  // an empty dim: chunk gives `chunks` empty pieces, split one, as torch
  EXPECT_EQ(Tensor::zeros({2, 0}).chunk(3, 1).size(), 3u);
  EXPECT_EQ(Tensor::zeros({0}).split(2).size(), 1u);
  EXPECT_THROW(Tensor::zeros({4}).chunk(0), std::invalid_argument);
}

TEST(TensorMethods, FlipIsACopyOnAnyLayout) {
  Tensor base = Tensor::from_vector(std::vector<double>{0, 1, 2, 3, 4, 5}, {2, 3}, DType::Float64);
  const Tensor f = base.t().flip({0});  // a transposed view, flipped along its dim 0
  EXPECT_EQ(f.to_double_vector(), (std::vector<double>{2, 5, 1, 4, 0, 3}));
  EXPECT_TRUE(f.is_contiguous());
  // flipping only size-1 dims changes no value, but still gives a tensor of its own
  const Tensor row = Tensor::zeros({1, 3});
  EXPECT_NE(row.flip({0}).impl().storage, row.impl().storage);
}

// Comparisons give bool tensors of the broadcast shape and never require grad, even when their
// inputs do and even while a backward pass is being recorded.
TEST(Comparisons, BoolResultsThatNeverRequireGrad) {
  const Tensor a = Tensor::matrix({{0.5, -1, 2}, {1, 0.25, -3}}, DType::Float64).requires_grad_();
  const Tensor b = Tensor::from_vector(std::vector<double>{0.5, 0, 2.5}, {3}, DType::Float64).requires_grad_();
  for (const Tensor& m : {a < b, a <= b, a > b, a >= b, a == b, a != b, a > 0, 0 < a, a == 0.5, 1.0 >= a}) {
    EXPECT_EQ(m.dtype(), DType::Bool);
    EXPECT_EQ(m.shape(), (Shape{2, 3}));
    EXPECT_FALSE(m.requires_grad());
    EXPECT_TRUE(m.is_leaf());
  }
  EXPECT_EQ(bools(a == b), (std::vector<bool>{true, false, false, false, false, false}));
  EXPECT_EQ(bools(a <= b), (std::vector<bool>{true, true, true, false, false, true}));
  EXPECT_EQ(bools(0 < a), bools(a > 0));
  EXPECT_EQ(bools(0.5 >= a), bools(a <= 0.5));
  // inside a recorded backward (create_graph) too
  const Tensor y = sum(mul(where(a > 0, a, mul(a, 0.1)), a));
  const Tensor g = grad({y}, {a}, {}, {.create_graph = true})[0];
  EXPECT_TRUE(g.requires_grad());
  EXPECT_FALSE((g > 0).requires_grad());
}

TEST(Comparisons, DtypesNanAndScalars) {
  const double nan = std::nan("");
  const Tensor f = Tensor::from_vector(std::vector<double>{nan, 1, -2}, {3}, DType::Float64);
  EXPECT_EQ(bools(f != f), (std::vector<bool>{true, false, false}));  // nan differs from itself, as IEEE
  EXPECT_EQ(bools(f < 5), (std::vector<bool>{false, true, true}));
  // a float32 tensor compares with the scalar cast to float32, as torch: 0.1f == 0.1
  EXPECT_EQ(bools(Tensor::full({1}, 0.1) == 0.1), (std::vector<bool>{true}));
  // int64: exact with a whole number (targets == ignore_index), as a double otherwise
  const Tensor t = Tensor::from_vector(std::vector<int64_t>{-100, 3, (int64_t{1} << 53) + 1}, {3});
  EXPECT_EQ(bools(t == -100), (std::vector<bool>{true, false, false}));
  EXPECT_EQ(bools(t > 1.5), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(bools(t == static_cast<double>(int64_t{1} << 53)), (std::vector<bool>{false, false, false}));
  // different dtypes compare as float64; bool tensors compare too
  EXPECT_EQ(bools(Tensor::full({2}, 3.0) == Tensor::from_vector(std::vector<int64_t>{3, 4}, {2})),
            (std::vector<bool>{true, false}));
  EXPECT_EQ(bools((t == 3) == Tensor::from_vector(std::vector<bool>{false, true, false}, {3})),
            (std::vector<bool>{true, true, true}));
  // broadcasting: (2, 1) against (3) is (2, 3); a 0-d result stays 0-d
  EXPECT_EQ((Tensor::zeros({2, 1}) < Tensor::ones({3})).shape(), (Shape{2, 3}));
  EXPECT_EQ((Tensor::scalar(1) == Tensor::scalar(1)).dim(), 0);
  EXPECT_NE(error_of<std::invalid_argument>([] { Tensor::zeros({2}) < Tensor::zeros({3}); }).find("lt"), std::string::npos);
}
