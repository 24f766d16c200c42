// Every differentiable op, gradchecked in float64 with torch.autograd.gradcheck's criterion.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
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
Tensor positive(Shape s) { return rnd(s, 0.5, 2.0); }

void expect_gradcheck(const GradcheckFn& f, const std::vector<Tensor>& in) {
  const GradcheckReport r = gradcheck(f, in);
  EXPECT_TRUE(r.passed()) << r.table();
}
using V = const std::vector<Tensor>&;
}  // namespace

TEST(Gradcheck, BinaryOpsSameShape) {
  Tensor a = rnd({2, 3}), b = positive({2, 3});
  expect_gradcheck([](V x) { return add(x[0], x[1]); }, {a, b});
  expect_gradcheck([](V x) { return sub(x[0], x[1]); }, {a, b});
  expect_gradcheck([](V x) { return sub(x[1], x[0]); }, {a, b});
  expect_gradcheck([](V x) { return mul(x[0], x[1]); }, {a, b});
  expect_gradcheck([](V x) { return div(x[0], x[1]); }, {a, b});
  expect_gradcheck([](V x) { return div(x[1], x[0] + 3.0); }, {a, b});
}

TEST(Gradcheck, BroadcastingInBothDirections) {
  Tensor a = rnd({2, 3, 4}), row = positive({4}), col = positive({2, 1, 4}), mid = positive({3, 1});
  for (const Tensor& b : {row, col, mid}) {
    expect_gradcheck([](V x) { return add(x[0], x[1]); }, {a, b});
    expect_gradcheck([](V x) { return add(x[1], x[0]); }, {a, b});
    expect_gradcheck([](V x) { return sub(x[0], x[1]); }, {a, b});
    expect_gradcheck([](V x) { return sub(x[1], x[0]); }, {a, b});
    expect_gradcheck([](V x) { return mul(x[1], x[0]); }, {a, b});
    expect_gradcheck([](V x) { return div(x[0], x[1]); }, {a, b});
    expect_gradcheck([](V x) { return div(x[1], x[0] * x[0] + 1.0); }, {a, b});
  }
  // (3, 1) with (1, 4): both operands broadcast
  expect_gradcheck([](V x) { return mul(x[0], x[1]); }, {rnd({3, 1}), rnd({1, 4})});
  // against a 0-d scalar tensor
  expect_gradcheck([](V x) { return mul(x[0], x[1]); }, {rnd({2, 2}), rnd({})});
}

TEST(Gradcheck, UnaryAndScalarOps) {
  Tensor a = rnd({2, 3}), p = positive({2, 3});
  expect_gradcheck([](V x) { return neg(x[0]); }, {a});
  expect_gradcheck([](V x) { return x[0] + 2.5; }, {a});
  expect_gradcheck([](V x) { return x[0] * -1.5; }, {a});
  expect_gradcheck([](V x) { return 3.0 - x[0]; }, {a});
  expect_gradcheck([](V x) { return 2.0 / x[0]; }, {p});
  expect_gradcheck([](V x) { return pow(x[0], 3.0); }, {a});
  expect_gradcheck([](V x) { return pow(x[0], -0.5); }, {p});
  expect_gradcheck([](V x) { return exp(x[0]); }, {a});
  expect_gradcheck([](V x) { return log(x[0]); }, {p});
  expect_gradcheck([](V x) { return sqrt(x[0]); }, {p});
  expect_gradcheck([](V x) { return tanh(x[0]); }, {a});
  expect_gradcheck([](V x) { return gelu(x[0] * 3.0); }, {a});
  expect_gradcheck([](V x) { return gelu(x[0] * 3.0, /*approximate=*/true); }, {a});
  // relu away from the kink at 0, where the derivative is undefined
  Tensor r = Tensor::from_vector(std::vector<double>{-1.5, -0.2, 0.3, 2.0}, {4}, DType::Float64).requires_grad_();
  expect_gradcheck([](V x) { return relu(x[0]); }, {r});
}

TEST(Gradcheck, Reductions) {
  Tensor a = rnd({2, 3, 4});
  expect_gradcheck([](V x) { return sum(x[0]); }, {a});
  expect_gradcheck([](V x) { return mean(x[0]); }, {a});
  expect_gradcheck([](V x) { return sum(x[0], {1}); }, {a});
  expect_gradcheck([](V x) { return sum(x[0], {0, 2}, true); }, {a});
  expect_gradcheck([](V x) { return mean(x[0], {-1}); }, {a});
  expect_gradcheck([](V x) { return mean(x[0], {0, 1}, true); }, {a});
}

TEST(Gradcheck, MatmulAllForms) {
  expect_gradcheck([](V x) { return matmul(x[0], x[1]); }, {rnd({3, 4}), rnd({4, 2})});
  expect_gradcheck([](V x) { return matmul(x[0], x[1]); }, {rnd({2, 3, 4}), rnd({2, 4, 5})});
  expect_gradcheck([](V x) { return matmul(x[0], x[1]); }, {rnd({2, 2, 3, 4}), rnd({2, 2, 4, 2})});
  expect_gradcheck([](V x) { return matmul(x[0], x[1]); }, {rnd({2, 3, 4}), rnd({4, 5})});       // broadcast b
  expect_gradcheck([](V x) { return matmul(x[0], x[1]); }, {rnd({3, 4}), rnd({2, 4, 2})});       // broadcast a
  expect_gradcheck([](V x) { return matmul(x[0], x[1]); }, {rnd({2, 1, 3, 4}), rnd({3, 4, 2})});  // both
  // transposed operands go to BLAS with the transpose flag
  expect_gradcheck([](V x) { return matmul(transpose(x[0], 0, 1), transpose(x[1], 0, 1)); }, {rnd({4, 3}), rnd({2, 4})});
  expect_gradcheck([](V x) { return linear(x[0], x[1], x[2]); }, {rnd({2, 3, 4}), rnd({5, 4}), rnd({5})});
  expect_gradcheck([](V x) { return linear(x[0], x[1]); }, {rnd({3, 4}), rnd({2, 4})});
}

TEST(Gradcheck, ShapeOps) {
  Tensor a = rnd({2, 3, 4});
  expect_gradcheck([](V x) { return reshape(x[0], {4, -1}) * 2.0; }, {a});
  expect_gradcheck([](V x) { return transpose(x[0], 0, 2) * 2.0; }, {a});
  expect_gradcheck([](V x) { return permute(x[0], {1, 2, 0}) * 2.0; }, {a});
  expect_gradcheck([](V x) { return reshape(permute(x[0], {2, 0, 1}), {4, 6}) * 2.0; }, {a});
  expect_gradcheck([](V x) { return narrow(x[0], 2, 1, 2) * 2.0; }, {a});
  expect_gradcheck([](V x) { return unsqueeze(x[0], 1) * 2.0; }, {a});
  expect_gradcheck([](V x) { return squeeze(unsqueeze(x[0], 0), 0) * 2.0; }, {a});
  expect_gradcheck([](V x) { return expand(x[0], {3, 2, 4}) * 2.0; }, {rnd({2, 1})});
  expect_gradcheck([](V x) { return concat({x[0], x[1], x[0]}, 1); }, {rnd({2, 1, 3}), rnd({2, 2, 3})});
  expect_gradcheck([](V x) {
    auto parts = split(x[0], 2, 1);  // sizes 2, 1
    return concat({parts[1] * 3.0, parts[0]}, 1);
  }, {rnd({2, 3})});
}

TEST(Gradcheck, LookupsAndMasks) {
  Tensor idx = Tensor::from_vector(std::vector<int64_t>{2, 0, 2, 1}, {4});  // repeated: scatter-add
  expect_gradcheck([idx](V x) { return index_select(x[0], 0, idx); }, {rnd({3, 2})});
  expect_gradcheck([idx](V x) { return index_select(x[0], 1, idx); }, {rnd({2, 3})});
  Tensor ids = Tensor::from_vector(std::vector<int64_t>{1, 1, 0, 3, 2, 1}, {2, 3});
  expect_gradcheck([ids](V x) { return embedding(ids, x[0]); }, {rnd({4, 3})});
  Tensor mask = Tensor::from_vector(std::vector<bool>{true, false, false, true}, {1, 4});
  expect_gradcheck([mask](V x) { return masked_fill(x[0], mask, -2.0) * x[0]; }, {rnd({3, 4})});
}

TEST(Gradcheck, FusedOps) {
  Tensor a = rnd({3, 5}, -2, 2);
  expect_gradcheck([](V x) { return softmax(x[0]); }, {a});
  expect_gradcheck([](V x) { return log_softmax(x[0]); }, {a});
  Tensor t = Tensor::from_vector(std::vector<int64_t>{4, 0, 2}, {3});
  expect_gradcheck([t](V x) { return cross_entropy(x[0], t); }, {a});
  Tensor ti = Tensor::from_vector(std::vector<int64_t>{4, -100, 2}, {3});
  expect_gradcheck([ti](V x) { return cross_entropy(x[0], ti, -100); }, {a});
  expect_gradcheck([](V x) { return layer_norm(x[0], x[1], x[2]); }, {rnd({2, 3, 6}), rnd({6}), rnd({6})});
  expect_gradcheck([](V x) { return layer_norm(x[0], Tensor(), Tensor()); }, {rnd({4, 5})});
  // dropout: re-seeding inside f keeps the same mask for every evaluation
  expect_gradcheck([](V x) {
    Generator g(5);
    return dropout(x[0], 0.4, true, g);
  }, {rnd({4, 6})});
}

TEST(Gradcheck, AttentionProbs) {
  const double scale = 1 / std::sqrt(3.0);
  Tensor q = rnd({2, 4, 3}), k = rnd({2, 5, 3});
  expect_gradcheck([scale](V x) { return attention_probs(x[0], x[1], Tensor(), scale, false); }, {q, k});
  expect_gradcheck([scale](V x) { return attention_probs(x[0], x[1], Tensor(), scale, true); }, {q, k});
  Tensor m = Tensor::rand({4, 5}, DType::Float64, gen(), -1, 1);
  expect_gradcheck([scale, m](V x) { return attention_probs(x[0], x[1], m, scale, true); }, {q, k});
}

TEST(Gradcheck, ChainOfSeveralOps) {
  expect_gradcheck([](V x) {
    Tensor h = gelu(linear(x[0], x[1], x[2]));
    Tensor n = layer_norm(h, Tensor(), Tensor());
    return mean(sum(tanh(n) * exp(x[0] * 0.1), {-1}));
  }, {rnd({2, 4}), rnd({4, 4}), rnd({4})});
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
  EXPECT_NEAR(cross_entropy(logits, ti, -1).item(), l2, 1e-12);
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
  EXPECT_THROW(softmax(Tensor::zeros({2, 3}), 0), std::invalid_argument);
  EXPECT_THROW(masked_fill(Tensor::zeros({2, 3}), Tensor::zeros({2, 3}), 0), std::invalid_argument);  // not bool
}
