// The newer ops' conventions and input checks, beyond what the gradcheck table and the PyTorch
// fixtures cover: errors name the op, the shapes and the dtypes; no op hands back a result
// without a graph when an input requires grad.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "tests/test_util.h"

using namespace ag;
using ag::testing_util::error_of;

namespace {
Tensor f64(std::vector<double> v, Shape s) { return Tensor::from_vector(v, s, DType::Float64); }
}  // namespace

TEST(OpsSemantics, ErrorsNameTheOpShapesAndDtypes) {
  const Tensor a = Tensor::zeros({2, 3}), idx = Tensor::from_vector(std::vector<int64_t>{0, 1, 2, 0, 1, 2}, {2, 3});
  auto has = [](const std::string& msg, std::initializer_list<const char*> parts) {
    for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  };
  has(error_of<std::invalid_argument>([&] { where(a, a, a); }), {"where", "cond must be bool", "float32[2, 3]"});
  has(error_of<std::invalid_argument>([&] {
        where(Tensor::zeros({3}, DType::Bool), a, Tensor::zeros({2, 3}, DType::Float64));
      }),
      {"where", "dtype mismatch", "float64[2, 3]"});
  has(error_of<std::invalid_argument>([&] { where(Tensor::zeros({4}, DType::Bool), a, a); }),
      {"where", "[4]", "[2, 3]"});
  has(error_of<std::invalid_argument>([&] { gather(a, 1, a); }), {"gather", "index must be int64", "float32[2, 3]"});
  has(error_of<std::invalid_argument>([&] { gather(a, 2, idx); }), {"gather", "dim 2 out of range", "float32[2, 3]"});
  has(error_of<std::invalid_argument>([&] { gather(a, 0, Tensor::zeros({3}, DType::Int64)); }),
      {"gather", "rank", "int64[3]"});
  has(error_of<std::invalid_argument>([&] {
        gather(Tensor::zeros({2, 2}), 0, idx);
      }),
      {"gather", "larger", "int64[2, 3]"});
  has(error_of<std::out_of_range>([&] {
        gather(a, 1, Tensor::from_vector(std::vector<int64_t>{3}, {1, 1}));
      }),
      {"gather", "index 3 out of range [0, 3)"});
  has(error_of<std::invalid_argument>([&] {
        scatter_add(a, 1, idx, Tensor::zeros({2, 2}));
      }),
      {"scatter_add", "float32[2, 2]", "int64[2, 3]"});
  has(error_of<std::invalid_argument>([&] {
        stack({a, Tensor::zeros({3, 2})}, 0);
      }),
      {"stack", "float32[2, 3]", "float32[3, 2]"});
  has(error_of<std::invalid_argument>([&] { stack({a}, 3); }), {"stack", "dim 3 out of range"});
  has(error_of<std::invalid_argument>([&] { maximum(a, Tensor::zeros({4})); }), {"maximum", "[2, 3]", "[4]"});
  has(error_of<std::invalid_argument>([&] { minimum(a, Tensor::zeros({3}, DType::Int64)); }), {"minimum", "int64[3]"});
  has(error_of<std::invalid_argument>([&] { clamp(a, std::nullopt, std::nullopt); }),
      {"clamp", "at least one", "float32[2, 3]"});
  has(error_of<std::invalid_argument>([&] { abs(idx); }), {"abs", "int64[2, 3]"});
  has(error_of<std::invalid_argument>([&] { sigmoid(idx); }), {"sigmoid", "int64[2, 3]"});
  has(error_of<std::invalid_argument>([&] { silu(idx); }), {"silu", "int64[2, 3]"});
  has(error_of<std::invalid_argument>([&] { var(a, {0, 0}); }), {"var", "listed twice"});
  has(error_of<std::invalid_argument>([&] { var(a, {}, -1.0); }), {"var", "correction"});
  has(error_of<std::invalid_argument>([&] { logsumexp(a, {5}); }),
      {"logsumexp", "dim 5 out of range", "float32[2, 3]"});
  has(error_of<std::invalid_argument>([&] { softmax(a, -3); }), {"softmax", "dim -3 out of range", "float32[2, 3]"});
  has(error_of<std::invalid_argument>([&] { log_softmax(Tensor::scalar(1.0), 0); }), {"log_softmax", "1-d"});
  has(error_of<std::invalid_argument>([&] { matmul(Tensor::zeros({3}), Tensor::zeros({4})); }),
      {"matmul", "inner dims differ", "float32[3]", "float32[4]"});
  has(error_of<std::invalid_argument>([&] {
        matmul(Tensor::zeros({2, 3}), Tensor::scalar(1.0));
      }),
      {"matmul", "at least 1 dim"});
  has(error_of<std::invalid_argument>([&] { max(Tensor::scalar(1.0), 0); }), {"max", "1-d"});
  has(error_of<std::invalid_argument>([&] { min(a, 2); }), {"min", "dim 2 out of range", "float32[2, 3]"});
}

TEST(OpsSemantics, MatmulWithAVectorFollowsPyTorchShapes) {
  EXPECT_EQ(matmul(Tensor::ones({4}), Tensor::ones({4})).shape(), Shape{});
  EXPECT_EQ(matmul(Tensor::ones({4}), Tensor::ones({4, 3})).shape(), Shape({3}));
  EXPECT_EQ(matmul(Tensor::ones({3, 4}), Tensor::ones({4})).shape(), Shape({3}));
  EXPECT_EQ(matmul(Tensor::ones({5, 3, 4}), Tensor::ones({4})).shape(), Shape({5, 3}));
  EXPECT_EQ(matmul(Tensor::ones({4}), Tensor::ones({5, 4, 2})).shape(), Shape({5, 2}));
  EXPECT_EQ(matmul(Tensor::ones({4}), Tensor::ones({4})).item(), 4.0);
}

TEST(OpsSemantics, SoftmaxOverAnyDimEqualsMovingThatDimLast) {
  Generator g(1);
  const Tensor x = Tensor::randn({3, 4, 5}, DType::Float32, g);
  for (int64_t d : {0, 1, -2}) {
    const Tensor moved = transpose(softmax(transpose(x, d, -1).contiguous(), -1), d, -1);
    // Bit for bit: softmax over dim d is the last-dim row kernel on the same values, moved.
    EXPECT_EQ(softmax(x, d).to_double_vector(), moved.to_double_vector()) << d;
    const Tensor lmoved = transpose(log_softmax(transpose(x, d, -1).contiguous(), -1), d, -1);
    EXPECT_EQ(log_softmax(x, d).to_double_vector(), lmoved.to_double_vector()) << d;
  }
  // the sums along the chosen dim are 1
  const Tensor s = sum(softmax(x.to(DType::Float64), 0), {0});
  for (double v : s.to_double_vector()) EXPECT_NEAR(v, 1.0, 1e-12);
}

TEST(OpsSemantics, StableValuesAtTheExtremes) {
  const Tensor big = f64({-1000, 0, 1000, -745, 745}, {5});
  const auto s = sigmoid(big).to_double_vector();
  EXPECT_EQ(s[0], 0.0);
  EXPECT_EQ(s[1], 0.5);
  EXPECT_EQ(s[2], 1.0);
  for (double v : s) EXPECT_TRUE(std::isfinite(v));
  EXPECT_NEAR(logsumexp(f64({1000, 1000}, {2}), {0}).item(), 1000 + std::log(2.0), 1e-12);
  EXPECT_EQ(logsumexp(f64({-INFINITY, -INFINITY}, {2}), {0}).item(), -INFINITY);
  EXPECT_TRUE(std::isnan(var(f64({3.0}, {1})).item()));  // N − correction = 0, as PyTorch
  EXPECT_EQ(var(f64({3.0}, {1}), {}, 0.0).item(), 0.0);
  EXPECT_NEAR(var(f64({1, 2, 3, 4}, {4})).item(), 5.0 / 3.0, 1e-15);
  EXPECT_TRUE(std::isnan(maximum(f64({NAN}, {1}), f64({1}, {1})).item()));  // NaN propagates
  EXPECT_TRUE(std::isnan(clamp(f64({NAN}, {1}), 0.0, 1.0).item()));
  EXPECT_EQ(clamp(f64({0.5}, {1}), 2.0, 1.0).item(), 1.0);  // lo > hi: hi, as PyTorch
}

TEST(OpsSemantics, MaxAndMinAlongADimAreDifferentiableNoLongerConstants) {
  // The silent case: max(x, dim) acted as a constant inside a graph.
  Tensor x = f64({1, 5, 2, 7, 7, 0}, {2, 3}).requires_grad_();
  Tensor y = max(x, 1);
  ASSERT_TRUE(y.requires_grad());
  sum(y).backward();
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{0, 1, 0, 1, 0, 0}));  // a tie: the first
  x.zero_grad();
  sum(min(x, 0, true)).backward();
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{1, 1, 0, 0, 0, 1}));
  EXPECT_FALSE(argmax(x, 1).requires_grad());  // int64 indices carry no gradient, as in PyTorch
}

TEST(OpsSemantics, PowZeroHasGradientZeroAtZero) {
  // The silent case: pow(x, 0.0) had gradient NaN at x = 0 (PyTorch: 0).
  Tensor x = f64({0.0, -0.0, 2.0}, {3}).requires_grad_();
  sum(pow(x, 0.0)).backward();
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{0, 0, 0}));
}

TEST(OpsSemantics, SavedIndexModifiedInPlaceIsAnError) {
  Tensor a = Tensor::randn({2, 3}, DType::Float64).requires_grad_();
  Tensor idx = Tensor::from_vector(std::vector<int64_t>{0, 2, 1, 1}, {2, 2});
  Tensor y = sum(gather(a, 1, idx));
  idx.fill_(0);  // the backward would scatter to the wrong places
  const std::string msg = error_of<std::runtime_error>([&] { y.backward(); });
  EXPECT_NE(msg.find("modified by an inplace operation"), std::string::npos) << msg;
}

// Σ over leading dims (a bias gradient) splits the kept columns across threads: each column is
// still summed over the rows in order, so 1 and 2 threads give the same bits, and they match
// a plain double sum.
TEST(OpsSemantics, SumOverLeadingDimsIsTheSameOnAnyThreadCount) {
  Generator g(21);
  const Tensor x = Tensor::randn({3, 300, 70}, DType::Float32, g);
  const int saved = parallel::num_threads();
  parallel::set_num_threads(1);
  const std::vector<double> one = sum(x, {0, 1}).to_double_vector();
  parallel::set_num_threads(2);
  const std::vector<double> two = sum(x, {0, 1}).to_double_vector();
  parallel::set_num_threads(saved);
  EXPECT_EQ(one, two);
  const std::vector<double> xv = x.to_double_vector();
  for (int c = 0; c < 70; ++c) {
    double ref = 0;
    for (int r = 0; r < 900; ++r) ref += xv[static_cast<size_t>(r * 70 + c)];
    EXPECT_FLOAT_EQ(static_cast<float>(ref), static_cast<float>(two[static_cast<size_t>(c)])) << c;
  }
}
