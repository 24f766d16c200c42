// Broadcast reduction happens in one place: the engine sums a gradient returned in a broadcast
// shape back to the input's shape (engine.cpp, reduce_to_input), and throws for any other shape.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace ag;
using ag::testing_util::leaf;

namespace {
// An op of one input whose backward returns `grad_for_input` whatever the input's shape: what a
// backward function does for an input that was broadcast in its forward.
Tensor op_returning(const Tensor& in, const Shape& out_shape, const Tensor& grad_for_input) {
  Tensor out = Tensor::zeros(out_shape, DType::Float64);
  return record(out, "returns_a_fixed_gradient", {in}, [grad_for_input](const Tensor&) { return Grads{grad_for_input}; });
}

Tensor iota(Shape s) {
  std::vector<double> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i + 1);
  return Tensor::from_vector(v, s, DType::Float64);
}
}  // namespace

TEST(BroadcastReduction, TheEngineSumsALeadingDimAway) {
  Tensor b = leaf({0, 0, 0}, {3});
  const Tensor g = iota({2, 3});  // [[1, 2, 3], [4, 5, 6]]
  op_returning(b, {2, 3}, g).backward(Tensor::ones({2, 3}, DType::Float64));
  EXPECT_EQ(b.grad().shape(), (Shape{3}));
  EXPECT_EQ(b.grad().to_double_vector(), (std::vector<double>{5, 7, 9}));
}

TEST(BroadcastReduction, TheEngineSumsSizeOneDimsAndLeadingDimsToAnIntermediate) {
  Tensor a = leaf({1, 2, 3}, {3, 1});
  const Tensor h = mul(a, 2.0);  // (3, 1): the reduced gradient reaches a through h's node
  op_returning(h, {2, 3, 4}, iota({2, 3, 4})).backward(Tensor::ones({2, 3, 4}, DType::Float64));
  // Σ over dims 0 and 2 of 1..24 laid out (2, 3, 4): rows 1..4 + 13..16 = 68, then 100, 132; × 2
  EXPECT_EQ(a.grad().to_double_vector(), (std::vector<double>{136, 200, 264}));
}

TEST(BroadcastReduction, AShapeThatDoesNotBroadcastToTheGradientThrows) {
  for (const Shape& wrong : {Shape{4}, Shape{2, 3}, Shape{1}}) {
    Tensor b = leaf({0, 0, 0, 0, 0, 0}, {6});  // (6) broadcasts to none of (4), (2, 3), (1)
    try {
      op_returning(b, {2}, Tensor::ones(wrong, DType::Float64)).backward(Tensor::ones({2}, DType::Float64));
      ADD_FAILURE() << "no error for a gradient of shape " << shape_str(wrong);
    } catch (const std::logic_error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("backward of 'returns_a_fixed_gradient' produced a gradient"), std::string::npos) << m;
      EXPECT_NE(m.find("[6] does not broadcast to " + shape_str(wrong)), std::string::npos) << m;
    }
    EXPECT_FALSE(b.grad().defined());
  }
}

TEST(BroadcastReduction, UnderCreateGraphTheReductionIsRecorded) {
  // y = Σ (x + b)² for x (2, 3), b (3): dy/db = Σ_rows 2(x + b), reduced by the engine; its
  // derivative with respect to x is 2 everywhere, which needs the reduction in the graph.
  Tensor x = leaf({1, 2, 3, 4, 5, 6}, {2, 3}), b = leaf({0.5, -1, 2}, {3});
  const Tensor s = add(x, b);
  const Tensor db = grad({sum(mul(s, s))}, {b}, {}, {.create_graph = true})[0];
  EXPECT_EQ(db.shape(), (Shape{3}));
  EXPECT_EQ(db.to_double_vector(), (std::vector<double>{2 * (1 + 4 + 1), 2 * (2 + 5 - 2), 2 * (3 + 6 + 4)}));
  ASSERT_TRUE(db.requires_grad());
  const Tensor dx = grad({sum(db)}, {x})[0];
  EXPECT_EQ(dx.to_double_vector(), (std::vector<double>(6, 2.0)));
}
