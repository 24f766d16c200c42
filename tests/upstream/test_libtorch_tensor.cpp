// Tensor literals (ag::tensor), to(), and the autograd members of Tensor (backward, is_leaf,
// _version, detach, requires_grad_), on the cases of PyTorch's C++ frontend suite
// (test/cpp/api/tensor.cpp): the literals, the shapes, dtypes and values they give and the error
// texts are upstream's facts; the checks are written here in attograd's terms.
// tests/upstream/README.md names the source of each file of this folder.
//
// Where attograd differs: it has no int32 or int8, so a literal of ints (a std::vector<int>
// included) is int64 where torch gives kInt; its default floating dtype is float32 only. Not
// covered: devices and layouts, the default-dtype switch, from_blob, set_data, detach_,
// output_nr, and the printing and internals of torch's literal container.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/tensor_data.h"
#include "tests/upstream/libtorch_port.h"

using namespace ag;

namespace {
// start, start + 1, ..., end - 1 in `dtype`, viewed as `shape`.
Tensor counting(int64_t start, int64_t end, DType dtype, const Shape& shape) {
  return (Tensor::arange(end - start, DType::Float64) + static_cast<double>(start)).to(dtype).view(shape);
}

// t has this shape and dtype, does not require grad, and (for a non-empty t) holds
// start, start + 1, ... in order.
void expect_counting_literal(const Tensor& t, const Shape& shape, DType dtype, int64_t start = 1) {
  EXPECT_EQ(t.shape(), shape);
  EXPECT_EQ(t.dtype(), dtype);
  EXPECT_FALSE(t.requires_grad());
  EXPECT_TRUE(ag::allclose(t, counting(start, start + t.numel(), dtype, shape)));
}

// A one-dimensional literal: its shape, dtype and each element (within 1e-4).
void expect_vector_literal(const Tensor& t, DType dtype, const std::vector<double>& values) {
  ASSERT_EQ(t.shape(), Shape({static_cast<int64_t>(values.size())}));
  EXPECT_EQ(t.numel(), static_cast<int64_t>(values.size()));
  EXPECT_EQ(t.dtype(), dtype);
  for (size_t i = 0; i < values.size(); ++i) EXPECT_NEAR(t[i].item<double>(), values[i], 1e-4) << "element " << i;
}

// A scalar literal: no dimensions, one element, this dtype and value.
void expect_scalar_literal(const Tensor& t, DType dtype, double value) {
  EXPECT_EQ(t.numel(), 1);
  EXPECT_EQ(t.shape(), Shape());
  EXPECT_EQ(t.dtype(), dtype);
  EXPECT_NEAR(t.item<double>(), value, 1e-4);
}

// An empty literal: float32 (the default), no elements, this shape.
void expect_empty_literal(const Tensor& t, const Shape& shape) {
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.shape(), shape);
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_FALSE(t.requires_grad());
}

// x = 5 (float32, requiring grad) and y = x·x.
struct Square {
  Tensor x = ag::tensor({5}, DType::Float32).requires_grad_(true);
  Tensor y = x * x;
};
}  // namespace

TEST(TensorCases, ToTheSameDtypeReturnsTheSameStorage) {
  const Tensor t = Tensor::empty({3, 4}, DType::Float32);
  EXPECT_EQ(t.to(DType::Float32).data<float>(), t.data<float>());
}

TEST(TensorCases, ToAnotherDtypeKeepsRequiresGrad) {
  EXPECT_TRUE(Tensor::empty({3, 4}).requires_grad_().to(DType::Float64).requires_grad());
  EXPECT_FALSE(Tensor::empty({3, 4}).to(DType::Float64).requires_grad());
}

TEST(TensorCases, AnIntegerScalarIsInt64) {
  const Tensor t = ag::tensor(123);
  expect_scalar_literal(t, DType::Int64, 123);
  EXPECT_EQ(t.item<int32_t>(), 123);
}

TEST(TensorCases, AFloatingScalarIsFloat32) {
  expect_scalar_literal(ag::tensor(123.456f), DType::Float32, 123.456);
  expect_scalar_literal(ag::tensor(123.456), DType::Float32, 123.456);  // a double too: the default dtype
  expect_vector_literal(ag::tensor({123.456}), DType::Float32, {123.456});
}

TEST(TensorCases, ABoolScalarIsBool) {
  const Tensor t = ag::tensor(true);
  expect_scalar_literal(t, DType::Bool, 1);
  EXPECT_TRUE(t.item<bool>());
  const Tensor v = ag::tensor({true});
  expect_vector_literal(v, DType::Bool, {1});
  EXPECT_TRUE(v[0].item<bool>());
}

TEST(TensorCases, AVectorOfIntegersIsInt64HoweverGiven) {
  expect_vector_literal(ag::tensor({1, 2, 3}), DType::Int64, {1, 2, 3});
  expect_vector_literal(ag::tensor(std::vector<int>({1, 2, 3})), DType::Int64, {1, 2, 3});  // torch: kInt
  expect_vector_literal(ag::tensor(std::vector<int64_t>({1, 2, 3})), DType::Int64, {1, 2, 3});
}

TEST(TensorCases, AVectorOfFloatsIsFloat32UnlessAStdVectorOfDoubles) {
  const std::vector<double> v = {1.5, 2.25, 3.125};
  expect_vector_literal(ag::tensor({1.5, 2.25, 3.125}), DType::Float32, v);
  expect_vector_literal(ag::tensor({1.5f, 2.25f, 3.125f}), DType::Float32, v);
  expect_vector_literal(ag::tensor(std::vector<float>({1.5, 2.25, 3.125})), DType::Float32, v);
  expect_vector_literal(ag::tensor(std::vector<double>({1.5, 2.25, 3.125})), DType::Float64, v);
}

TEST(TensorCases, AVectorOfBoolsIsBool) {
  const Tensor t = ag::tensor({true, false, true});
  expect_vector_literal(t, DType::Bool, {1, 0, 1});
  EXPECT_TRUE(t[0].item<bool>() && !t[1].item<bool>() && t[2].item<bool>());
}

TEST(TensorCases, NestedIntegerListsGiveTheirShape) {
  expect_counting_literal(ag::tensor({{1, 2}}), {1, 2}, DType::Int64);
  expect_counting_literal(ag::tensor({{1}, {2}}), {2, 1}, DType::Int64);
  expect_counting_literal(ag::tensor({{{1, 2}}}), {1, 1, 2}, DType::Int64);
  expect_counting_literal(ag::tensor({{{1}, {2}}}), {1, 2, 1}, DType::Int64);
  expect_counting_literal(ag::tensor({{1, 2}, {3, 4}}), {2, 2}, DType::Int64);
  expect_counting_literal(ag::tensor({{{{{{{{{{1}}}}}}}}}}), {1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, DType::Int64);
  expect_counting_literal(ag::tensor({{{{{{{{{{1, 2}}}}}}}}}}), {1, 1, 1, 1, 1, 1, 1, 1, 1, 2}, DType::Int64);
}

TEST(TensorCases, NestedFloatingListsGiveTheirShape) {
  expect_counting_literal(ag::tensor({{1.0, 2.0}}), {1, 2}, DType::Float32);
  expect_counting_literal(ag::tensor({{{{{{{{1.0, 2.0, 3.0}}}}}, {{{{{4.0, 5.0, 6.0}}}}}, {{{{{7.0, 8.0, 9.0}}}}}}}}),
                          {1, 1, 3, 1, 1, 1, 1, 3}, DType::Float32);
}

TEST(TensorCases, NestedBoolListsGiveTheirShapeAndValues) {
  const Tensor row = ag::tensor({{true, false}});
  EXPECT_EQ(row.shape(), Shape({1, 2}));
  EXPECT_EQ(row.dtype(), DType::Bool);
  EXPECT_FALSE(row.requires_grad());
  EXPECT_TRUE(row[0][0].item<bool>() && !row[0][1].item<bool>());

  const Tensor column = ag::tensor({{true}, {false}});
  EXPECT_EQ(column.shape(), Shape({2, 1}));
  EXPECT_EQ(column.dtype(), DType::Bool);
  EXPECT_FALSE(column.requires_grad());
  EXPECT_TRUE(column[0][0].item<bool>() && !column[1][0].item<bool>());
}

TEST(TensorCases, ANestedListTakesAGivenDtype) {
  expect_counting_literal(ag::tensor({{1, 2}}, DType::Int64), {1, 2}, DType::Int64);  // torch: kInt
  const Tensor t = ag::tensor({{1, 2}, {3, 4}}, DType::Float32).requires_grad_(true);
  EXPECT_EQ(t.shape(), Shape({2, 2}));
  EXPECT_EQ(t.dtype(), DType::Float32);
  EXPECT_TRUE(t.requires_grad());
  EXPECT_TRUE(ag::allclose(t, counting(1, 5, DType::Float32, {2, 2})));
}

TEST(TensorCases, ARaggedOrMixedListIsRefusedWithWhatDiffers) {
  ASSERT_THROWS_WITH(ag::tensor({{{2, 3, 4}, {{5, 6}, {7}}}}),
                     "Expected all sub-lists to have sizes: 2 (e.g. {5, 6}), but got sub-list {7} with sizes: 1");
  const std::string mixed = "Expected all elements of the tensor to have the same scalar type: ";
  ASSERT_THROWS_WITH(ag::tensor({{{1, 2.0}, {1, 2.0}}}), mixed + "Long, but got element of scalar type: Float");
  ASSERT_THROWS_WITH(ag::tensor({{{true, 2.0, 3}, {true, 2.0, 3}}}), mixed + "Bool, but got element of scalar type: Float");
  ASSERT_THROWS_WITH(ag::tensor({{{true}, {2}}}), mixed + "Bool, but got element of scalar type: Long");
  ASSERT_THROWS_WITH(ag::tensor({{{true, 2}}}), mixed + "Bool, but got element of scalar type: Long");
}

TEST(TensorCases, EmptyListsGiveAZeroLastDimension) {
  expect_empty_literal(ag::tensor({}), {0});
  expect_empty_literal(ag::tensor({{}, {}}), {2, 0});
  expect_empty_literal(ag::tensor({{{}, {}}}), {1, 2, 0});
  expect_empty_literal(ag::tensor({{{}}}), {1, 1, 0});
  expect_empty_literal(ag::tensor({{{{{{{{}}}}}}}}), {1, 1, 1, 1, 1, 1, 1, 0});
  expect_empty_literal(ag::tensor({{{{{{{{}}}}, {{{{}}}}}}}}), {1, 1, 1, 2, 1, 1, 1, 0});
  expect_empty_literal(ag::tensor({{{{{{{{{{}}}}}}}}}}), {1, 1, 1, 1, 1, 1, 1, 1, 1, 0});
}

TEST(TensorCases, TheDtypeOfALiteralFollowsItsElements) {
  EXPECT_EQ(ag::tensor({1, 2, 3}).dtype(), DType::Int64);
  EXPECT_EQ(ag::tensor({{1, 2, 3}}).dtype(), DType::Int64);
  EXPECT_EQ(ag::tensor({1., 2., 3.}).dtype(), DType::Float32);
  EXPECT_EQ(ag::tensor({{1., 2., 3.}}).dtype(), DType::Float32);
}

TEST(TensorCases, ItemReadsTheOneElement) {
  EXPECT_NEAR(ag::tensor(3.14).item<float>(), 3.14, 1e-5);
  EXPECT_EQ(ag::tensor(123).item<int>(), 123);
}

TEST(TensorCases, DetachHoldsTheSameValues) {
  const Tensor t = Tensor::rand({3, 3});
  EXPECT_TRUE(ag::equal(t, t.detach()));  // upstream reads tensor.data()
}

TEST(TensorCases, TheGradientOfXSquaredAtFiveIsTen) {
  Square s;
  s.y.backward();
  EXPECT_EQ(s.x.grad().item<float>(), 10.0);
}

TEST(TensorCases, BackwardOfALeafGivesAGradientOfOnes) {
  const Tensor x = ag::tensor({5}, DType::Float32).requires_grad_(true);
  x.backward();
  EXPECT_TRUE(ag::equal(x.grad(), Tensor::ones(x.shape())));
}

TEST(TensorCases, BackwardOfANonScalarNeedsAGradient) {
  const Tensor x = Tensor::randn({5, 5}).requires_grad_();
  Tensor product = x * x;
  ASSERT_THROWS_WITH(product.backward(), "grad can be implicitly created only for scalar outputs");
}

TEST(TensorCases, OnlyTheInputIsALeaf) {
  const Square s;
  EXPECT_TRUE(s.x.is_leaf());
  EXPECT_FALSE(s.y.is_leaf());
}

TEST(TensorCases, EachInPlaceWriteBumpsTheVersion) {
  Tensor t = Tensor::ones({3});
  EXPECT_EQ(t._version(), 0);
  t.mul_(2);
  EXPECT_EQ(t._version(), 1);
  t.add_(1);
  EXPECT_EQ(t._version(), 2);
}

TEST(TensorCases, ADetachedResultIsALeafWithoutGrad) {
  const Square s;
  const Tensor cut = s.y.detach();
  EXPECT_FALSE(s.y.is_leaf());
  EXPECT_TRUE(cut.is_leaf());
  EXPECT_FALSE(cut.requires_grad());
}

TEST(TensorCases, RequiresGradChangesOnFloatingLeavesOnly) {
  Tensor x = ag::tensor({5.0});
  x.requires_grad_(true);
  EXPECT_TRUE(x.requires_grad());
  Tensor y = x * x;
  ASSERT_THROWS_WITH(y.requires_grad_(false), "you can only change requires_grad flags of leaf variables.");
  x.requires_grad_(false);
  EXPECT_FALSE(x.requires_grad());

  const Tensor ints = ag::tensor({5}, DType::Int64);  // torch: kInt
  ASSERT_THROWS_WITH(ints.requires_grad_(true), "Only Tensors of floating point and complex dtype can require gradients");
}
