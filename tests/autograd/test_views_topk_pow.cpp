// torch's view rule (ATen's computeStride) in view() and view_or_copy(), topk's order, pow with a
// tensor exponent, and inplace_op (autograd/inplace.h), which the Python package records its
// in-place ops through. Gradients of each are checked with the rest in test_ops_gradcheck.cpp.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/inplace.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace ag;
using ag::testing_util::error_of;
using ag::testing_util::expect_has;

namespace {
Tensor arange_3d() { return reshape(Tensor::arange(24, DType::Float64), {2, 3, 4}).clone(); }  // contiguous, no view
}  // namespace

TEST(Views, ViewOfStridedPiecesHasTorchsStrides) {
  // Strides and offsets as torch 2 gives them for the same expressions (python/tests/fixtures/view_inplace.json).
  const Tensor x = arange_3d();
  struct Case {
    Tensor view;
    Shape strides;
    int64_t offset;
  };
  const Tensor piece = split(x, 2, 2)[1];  // (2, 3, 2) with strides (12, 4, 1)
  for (const Case& c : {Case{view(piece, {2, 3, 1, 2}), {12, 4, 2, 1}, 2}, Case{view(piece, {6, 2}), {4, 1}, 2},
                        Case{view(chunk(x, 3, 1)[2], {2, 4}), {12, 1}, 8},
                        Case{view(transpose(x, 0, 1), {3, 2, 2, 2}), {4, 12, 2, 1}, 0},
                        Case{view(slice(x, 2, std::nullopt, std::nullopt, 2), {12}), {2}, 0},
                        Case{view(unsqueeze(select(x, 2, 1), 0), {1, 6}), {24, 4}, 1},
                        Case{view(transpose(x, 1, 2), {2, 4, 3}), {12, 1, 4}, 0}}) {
    EXPECT_EQ(c.view.strides(), c.strides) << shape_str(c.view.shape());
    EXPECT_EQ(c.view.impl().offset, c.offset);
    EXPECT_TRUE(c.view._base().same(x));
  }
  // The view shares memory: a write through it is a write into x.
  view(piece, {6, 2}).fill_(-1.0);
  EXPECT_EQ(x.at({1, 2, 3}), -1.0);
  EXPECT_EQ(x.at({1, 2, 1}), 21.0);
}

TEST(Views, ViewThatWouldSpanTwoRunsThrowsTorchsMessage) {
  const Tensor x = arange_3d();
  for (const Tensor& a : {transpose(x, 1, 2), select(x, 1, 0), narrow(x, 2, 1, 2)}) {
    const std::string msg = error_of<std::invalid_argument>([&] { view(a, {a.numel()}); });
    expect_has(msg, {"view size is not compatible with input tensor's size and stride", "Use .reshape(...) instead."});
  }
  EXPECT_THROW(view(split(x, 2, 2)[1], {3, 4}), std::invalid_argument);
}

TEST(Views, ViewOrCopyIsAViewWhenItCanBeAndAPrivateCopyOtherwise) {
  const Tensor x = arange_3d();
  const Tensor v = view_or_copy(narrow(x, 2, 1, 2), {6, 2});
  EXPECT_TRUE(v._base().same(x));
  const Tensor c = view_or_copy(transpose(x, 1, 2), {2, 12});
  EXPECT_FALSE(c.is_view());  // torch's reshape copy is no view of anything
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.at({0, 1}), 4.0);
  // reshape keeps its contract: always contiguous.
  EXPECT_TRUE(reshape(narrow(x, 2, 1, 2), {6, 2}).is_contiguous());
}

TEST(Topk, OrderTiesNaNAndIntegersAsTorch) {
  const double nan = NAN;
  auto [v, i] = topk(Tensor::from_vector(std::vector<double>{1, 2, 2, 1, 3}, {5}), 3);
  EXPECT_EQ(v.to_double_vector(), (std::vector<double>{3, 2, 2}));
  EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{4, 2, 1}));  // torch's order on this tie
  auto [vn, in] = topk(Tensor::from_vector(std::vector<double>{1, nan, 2, -1}, {4}), 2);
  EXPECT_TRUE(std::isnan(vn.to_double_vector()[0]));
  EXPECT_EQ(in.to_vector<int64_t>(), (std::vector<int64_t>{1, 2}));
  auto [vs, is] = topk(Tensor::from_vector(std::vector<double>{1, nan, 2, -1}, {4}), 2, -1, false);
  EXPECT_EQ(vs.to_double_vector(), (std::vector<double>{-1, 1}));
  auto [vi, ii] = topk(Tensor::from_vector(std::vector<int64_t>{3, 1, 2, 0, 5, 5}, {2, 3}), 2, 1);
  EXPECT_EQ(vi.dtype(), DType::Int64);
  EXPECT_EQ(vi.to_vector<int64_t>(), (std::vector<int64_t>{3, 2, 5, 5}));
  EXPECT_EQ(ii.to_vector<int64_t>(), (std::vector<int64_t>{0, 2, 1, 2}));
  auto [vu, iu] = topk(Tensor::from_vector(std::vector<double>{1, 5, 2, 4, 3, 5, 0}, {7}), 4, -1, true, false);
  EXPECT_EQ(iu.to_vector<int64_t>(), (std::vector<int64_t>{3, 1, 5, 4}));  // unsorted: torch's selection order
  auto [v0, i0] = topk(Tensor::scalar(7.0), 1);
  EXPECT_EQ(v0.dim(), 0);
  expect_has(error_of<std::invalid_argument>([] { topk(Tensor::ones({3}), 4); }), {"selected index k out of range"});
}

TEST(PowTensor, ValuesAndTorchsZerosAtTheEdges) {
  const Tensor a = Tensor::from_vector(std::vector<double>{0, 0, 2, -2}, {4}, DType::Float64).requires_grad_();
  const Tensor b = Tensor::from_vector(std::vector<double>{0, 2, 3, 2}, {4}, DType::Float64).requires_grad_();
  const Tensor y = pow(a, b);
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{1, 0, 8, 4}));
  sum(y).backward();
  // da = b·a^(b−1): 0 where b = 0 (0^0 is constant 1); db = a^b·log a: 0 where a = 0 and b ≥ 0.
  EXPECT_EQ(a.grad().to_double_vector(), (std::vector<double>{0, 0, 12, -4}));
  const std::vector<double> db = b.grad().to_double_vector();
  EXPECT_EQ(db[0], 0.0);
  EXPECT_EQ(db[1], 0.0);
  EXPECT_NEAR(db[2], 8 * std::log(2.0), 1e-12);
  EXPECT_TRUE(std::isnan(db[3]));  // log of a negative base, as torch's
}

TEST(InplaceOp, RecordsTheComputationAndRefusesALeaf) {
  const Tensor w = Tensor::from_vector(std::vector<double>{1, 2, 3}, {3}, DType::Float64).requires_grad_();
  const Tensor h = mul(w, 2.0);
  const uint64_t before = h.version();
  inplace_op(h, {w}, true, [&](const Tensor& cur) { return mul(cur, w); });  // h *= w
  EXPECT_EQ(h.version(), before + 1);
  EXPECT_EQ(h.grad_fn()->op, "mul");
  sum(h).backward();
  EXPECT_EQ(w.grad().to_double_vector(), (std::vector<double>{4, 8, 12}));  // d(2w²)/dw
  expect_has(error_of([&] { inplace_op(w, {}, false, [](const Tensor& cur) { return add(cur, 1.0); }); }),
             {"a leaf Variable that requires grad is being used in an in-place operation."});
  {
    NoGradGuard plain;  // an optimizer's update: only written
    inplace_op(w, {}, false, [](const Tensor& cur) { return add(cur, 1.0); });
  }
  EXPECT_EQ(w.to_double_vector(), (std::vector<double>{2, 3, 4}));
  EXPECT_TRUE(w.is_leaf());
}

TEST(InplaceOp, AWriteThroughAViewGivesTheBaseCopySlices) {
  const Tensor w = Tensor::from_vector(std::vector<double>{1, 2, 3, 4}, {4}, DType::Float64).requires_grad_();
  const Tensor h = mul(w, 1.0);
  inplace_op(narrow(h, 0, 1, 2), {}, false, [](const Tensor& cur) { return mul(cur, 10.0); });
  EXPECT_EQ(h.to_double_vector(), (std::vector<double>{1, 20, 30, 4}));
  EXPECT_EQ(h.grad_fn()->op, "copy_slices");
  sum(h).backward();
  EXPECT_EQ(w.grad().to_double_vector(), (std::vector<double>{1, 10, 10, 1}));
}

// torch names the saved input's node at the time of the error: b's, now the add_'s.
TEST(InplaceOp, ASavedTensorWrittenAfterwardsGivesTorchsMessage) {
  const Tensor w = Tensor::ones({3}, DType::Float32).requires_grad_();
  const Tensor b = mul(w, 1.0);
  const Tensor c = mul(b, b);
  b.add_(1.0);
  const std::string msg = error_of([&] { sum(c).backward(); });
  expect_has(msg, {"one of the variables needed for gradient computation has been modified by an inplace operation: "
                   "[torch.FloatTensor [3]], which is output 0 of Add, is at version 1; expected version 0 instead.",
                   "Hint: enable anomaly detection"});
}
