// Ported from PyTorch's test/cpp/api/tensor.cpp: the literal factories (torch::tensor), the
// autograd members (backward, is_leaf, _version, detach, requires_grad_) and to(), with
// upstream's inputs, expected values and assertions, respelled per docs/cpp_api.md
// (tests/libtorch_port.h says how).
//
// Left out, and why: the dtypes attograd does not have (int32, int8: at::tensor's and the
// ArrayRef<int>/std::vector<int> literals' kInt is attograd's int64, so those dtype assertions
// read Int64), the default-dtype switch (AutoDefaultDtypeMode: attograd's default floating
// dtype is float32 only), devices and layouts (REQUIRE_TENSOR_OPTIONS, the _CUDA cases),
// from_blob, set_data, detach_, output_nr, and the TensorDataContainer printing and accessor
// cases (its internals).
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/tensor_data.h"
#include "tests/libtorch_port.h"

using namespace ag;

namespace {
template <typename T>
bool exactly_equal(const Tensor& left, T right) {
  return left.item<T>() == right;
}

template <typename T>
bool almost_equal(const Tensor& left, T right, T tolerance = 1e-4) {
  return std::abs(left.item<T>() - right) < tolerance;
}

// torch::arange(start, end, dtype).view(sizes)
Tensor arange_view(int64_t start, int64_t end, DType dtype, const Shape& sizes) {
  return (Tensor::arange(end - start, DType::Float64) + static_cast<double>(start)).to(dtype).view(sizes);
}
}  // namespace

TEST(TensorTest, ToDoesNotCopyWhenOptionsAreAllTheSame) {
  auto tensor = Tensor::empty({3, 4}, DType::Float32);
  auto hopefully_not_copy = tensor.to(DType::Float32);
  ASSERT_EQ(hopefully_not_copy.data<float>(), tensor.data<float>());
}

TEST(TensorTest, ToOptionsWithRequiresGrad) {
  {
    // Respects requires_grad
    auto tensor = Tensor::empty({3, 4}).requires_grad_();
    ASSERT_TRUE(tensor.requires_grad());

    tensor = tensor.to(DType::Float64);
    ASSERT_TRUE(tensor.requires_grad());
  }
  {
    auto tensor = Tensor::empty({3, 4});
    ASSERT_FALSE(tensor.requires_grad());

    // Respects requires_grad
    tensor = tensor.to(DType::Float64);
    ASSERT_FALSE(tensor.requires_grad());
  }
}

TEST(TensorTest, TorchTensorCtorScalarIntegralType) {
  auto tensor = ag::tensor(123);
  ASSERT_EQ(tensor.numel(), 1);
  ASSERT_EQ(tensor.shape(), std::vector<int64_t>({}));
  ASSERT_EQ(tensor.dtype(), DType::Int64);
  ASSERT_EQ(tensor.item<int32_t>(), 123);
}

TEST(TensorTest, TorchTensorCtorScalarFloatingType) {
  auto tensor = ag::tensor(123.456f);
  ASSERT_EQ(tensor.numel(), 1);
  ASSERT_EQ(tensor.shape(), std::vector<int64_t>({}));
  ASSERT_EQ(tensor.dtype(), DType::Float32);
  ASSERT_TRUE(almost_equal(tensor, 123.456f));

  tensor = ag::tensor(123.456);
  ASSERT_EQ(tensor.numel(), 1);
  ASSERT_EQ(tensor.shape(), std::vector<int64_t>({}));
  ASSERT_EQ(tensor.dtype(), DType::Float32);  // the default dtype
  ASSERT_TRUE(almost_equal(tensor, 123.456));

  tensor = ag::tensor({123.456});
  ASSERT_EQ(tensor.numel(), 1);
  ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1}));
  ASSERT_EQ(tensor.dtype(), DType::Float32);
  ASSERT_TRUE(almost_equal(tensor[0], 123.456));
}

TEST(TensorTest, TorchTensorCtorScalarBoolType) {
  auto tensor = ag::tensor(true);
  ASSERT_EQ(tensor.numel(), 1);
  ASSERT_EQ(tensor.shape(), std::vector<int64_t>({}));
  ASSERT_EQ(tensor.dtype(), DType::Bool);
  ASSERT_TRUE(exactly_equal(tensor, true));

  tensor = ag::tensor({true});
  ASSERT_EQ(tensor.numel(), 1);
  ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1}));
  ASSERT_EQ(tensor.dtype(), DType::Bool);
  ASSERT_TRUE(exactly_equal(tensor[0], true));
}

TEST(TensorTest, TorchTensorCtorSingleDimIntegralType) {
  auto tensor = ag::tensor({1, 2, 3});
  ASSERT_EQ(tensor.numel(), 3);
  ASSERT_EQ(tensor.shape(), std::vector<int64_t>({3}));
  ASSERT_EQ(tensor.dtype(), DType::Int64);
  ASSERT_TRUE(exactly_equal(tensor[0], 1));
  ASSERT_TRUE(exactly_equal(tensor[1], 2));
  ASSERT_TRUE(exactly_equal(tensor[2], 3));

  tensor = ag::tensor(std::vector<int>({1, 2, 3}));
  ASSERT_EQ(tensor.numel(), 3);
  ASSERT_EQ(tensor.shape(), std::vector<int64_t>({3}));
  ASSERT_EQ(tensor.dtype(), DType::Int64);  // torch: kInt
  ASSERT_TRUE(exactly_equal(tensor[0], 1));
  ASSERT_TRUE(exactly_equal(tensor[1], 2));
  ASSERT_TRUE(exactly_equal(tensor[2], 3));

  tensor = ag::tensor(std::vector<int64_t>({1, 2, 3}));
  ASSERT_EQ(tensor.numel(), 3);
  ASSERT_EQ(tensor.shape(), std::vector<int64_t>({3}));
  ASSERT_EQ(tensor.dtype(), DType::Int64);
  ASSERT_TRUE(exactly_equal(tensor[0], 1));
  ASSERT_TRUE(exactly_equal(tensor[1], 2));
  ASSERT_TRUE(exactly_equal(tensor[2], 3));
}

TEST(TensorTest, TorchTensorCtorSingleDimFloatingType) {
  auto tensor = ag::tensor({1.5, 2.25, 3.125});
  ASSERT_EQ(tensor.numel(), 3);
  ASSERT_EQ(tensor.shape(), std::vector<int64_t>({3}));
  ASSERT_EQ(tensor.dtype(), DType::Float32);
  ASSERT_TRUE(almost_equal(tensor[0], 1.5));
  ASSERT_TRUE(almost_equal(tensor[1], 2.25));
  ASSERT_TRUE(almost_equal(tensor[2], 3.125));

  tensor = ag::tensor({1.5f, 2.25f, 3.125f});
  ASSERT_EQ(tensor.numel(), 3);
  ASSERT_EQ(tensor.shape(), std::vector<int64_t>({3}));
  ASSERT_EQ(tensor.dtype(), DType::Float32);
  ASSERT_TRUE(almost_equal(tensor[0], 1.5f));
  ASSERT_TRUE(almost_equal(tensor[1], 2.25f));
  ASSERT_TRUE(almost_equal(tensor[2], 3.125f));

  tensor = ag::tensor(std::vector<float>({1.5, 2.25, 3.125}));
  ASSERT_EQ(tensor.numel(), 3);
  ASSERT_EQ(tensor.shape(), std::vector<int64_t>({3}));
  ASSERT_EQ(tensor.dtype(), DType::Float32);
  ASSERT_TRUE(almost_equal(tensor[0], 1.5));
  ASSERT_TRUE(almost_equal(tensor[1], 2.25));
  ASSERT_TRUE(almost_equal(tensor[2], 3.125));

  tensor = ag::tensor(std::vector<double>({1.5, 2.25, 3.125}));
  ASSERT_EQ(tensor.numel(), 3);
  ASSERT_EQ(tensor.shape(), std::vector<int64_t>({3}));
  ASSERT_EQ(tensor.dtype(), DType::Float64);
  ASSERT_TRUE(almost_equal(tensor[0], 1.5));
  ASSERT_TRUE(almost_equal(tensor[1], 2.25));
  ASSERT_TRUE(almost_equal(tensor[2], 3.125));
}

TEST(TensorTest, TorchTensorCtorSingleDimBoolType) {
  auto tensor = ag::tensor({true, false, true});
  ASSERT_EQ(tensor.numel(), 3);
  ASSERT_EQ(tensor.shape(), std::vector<int64_t>({3}));
  ASSERT_EQ(tensor.dtype(), DType::Bool);
  ASSERT_TRUE(exactly_equal(tensor[0], true));
  ASSERT_TRUE(exactly_equal(tensor[1], false));
  ASSERT_TRUE(exactly_equal(tensor[2], true));
}

TEST(TensorTest, TorchTensorCtorMultiDimIntegralType) {
  {
    auto tensor = ag::tensor({{1, 2}});
    ASSERT_EQ(tensor.dtype(), DType::Int64);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1, 2}));
    ASSERT_TRUE(ag::allclose(tensor, arange_view(1, 3, DType::Int64, tensor.shape())));
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{1}, {2}});
    ASSERT_EQ(tensor.dtype(), DType::Int64);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({2, 1}));
    ASSERT_TRUE(ag::allclose(tensor, arange_view(1, 3, DType::Int64, tensor.shape())));
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{{1, 2}}});
    ASSERT_EQ(tensor.dtype(), DType::Int64);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1, 1, 2}));
    ASSERT_TRUE(ag::allclose(tensor, arange_view(1, 3, DType::Int64, tensor.shape())));
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{{1}, {2}}});
    ASSERT_EQ(tensor.dtype(), DType::Int64);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1, 2, 1}));
    ASSERT_TRUE(ag::allclose(tensor, arange_view(1, 3, DType::Int64, tensor.shape())));
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{1, 2}, {3, 4}});
    ASSERT_EQ(tensor.dtype(), DType::Int64);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({2, 2}));
    ASSERT_TRUE(ag::allclose(tensor, arange_view(1, 5, DType::Int64, tensor.shape())));
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{{{{{{{{{1}}}}}}}}}});
    ASSERT_EQ(tensor.dtype(), DType::Int64);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
    ASSERT_TRUE(ag::allclose(tensor, Tensor::full({1}, 1, DType::Int64).view(tensor.shape())));
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{{{{{{{{{1, 2}}}}}}}}}});
    ASSERT_EQ(tensor.dtype(), DType::Int64);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1, 1, 1, 1, 1, 1, 1, 1, 1, 2}));
    ASSERT_TRUE(ag::allclose(tensor, arange_view(1, 3, DType::Int64, tensor.shape())));
    ASSERT_FALSE(tensor.requires_grad());
  }
}

TEST(TensorTest, TorchTensorCtorMultiDimFloatingType) {
  {
    auto tensor = ag::tensor({{1.0, 2.0}});
    ASSERT_EQ(tensor.dtype(), DType::Float32);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1, 2}));
    ASSERT_TRUE(ag::allclose(tensor, arange_view(1, 3, DType::Float32, tensor.shape())));
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{{{{{{{1.0, 2.0, 3.0}}}}}, {{{{{4.0, 5.0, 6.0}}}}}, {{{{{7.0, 8.0, 9.0}}}}}}}});
    ASSERT_EQ(tensor.dtype(), DType::Float32);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1, 1, 3, 1, 1, 1, 1, 3}));
    ASSERT_TRUE(ag::allclose(tensor, arange_view(1, 10, DType::Float32, tensor.shape())));
    ASSERT_FALSE(tensor.requires_grad());
  }
}

TEST(TensorTest, TorchTensorCtorMultiDimBoolType) {
  {
    auto tensor = ag::tensor({{true, false}});
    ASSERT_EQ(tensor.dtype(), DType::Bool);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1, 2}));
    auto expected = Tensor::empty(tensor.shape(), DType::Bool);
    expected[0][0] = true;
    expected[0][1] = false;
    ASSERT_TRUE(ag::equal(tensor, expected));
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{true}, {false}});
    ASSERT_EQ(tensor.dtype(), DType::Bool);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({2, 1}));
    auto expected = Tensor::empty(tensor.shape(), DType::Bool);
    expected[0][0] = true;
    expected[1][0] = false;
    ASSERT_TRUE(ag::equal(tensor, expected));
    ASSERT_FALSE(tensor.requires_grad());
  }
}

TEST(TensorTest, TorchTensorCtorMultiDimWithOptions) {
  {
    auto tensor = ag::tensor({{1, 2}}, DType::Int64);  // torch: kInt
    ASSERT_EQ(tensor.dtype(), DType::Int64);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1, 2}));
    ASSERT_TRUE(ag::allclose(tensor, arange_view(1, 3, DType::Int64, tensor.shape())));
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{1, 2}, {3, 4}}, DType::Float32).requires_grad_(true);
    ASSERT_EQ(tensor.dtype(), DType::Float32);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({2, 2}));
    ASSERT_TRUE(ag::allclose(tensor, arange_view(1, 5, DType::Float32, tensor.shape())));
    ASSERT_TRUE(tensor.requires_grad());
  }
}

TEST(TensorTest, TorchTensorCtorMultiDimErrorChecks) {
  {
    ASSERT_THROWS_WITH(ag::tensor({{{2, 3, 4}, {{5, 6}, {7}}}}),
                       "Expected all sub-lists to have sizes: 2 (e.g. {5, 6}), but got sub-list {7} with sizes: 1");
  }
  {
    ASSERT_THROWS_WITH(ag::tensor({{{1, 2.0}, {1, 2.0}}}),
                       "Expected all elements of the tensor to have the same scalar type: Long, but got element of "
                       "scalar type: Float");
  }
  {
    ASSERT_THROWS_WITH(ag::tensor({{{true, 2.0, 3}, {true, 2.0, 3}}}),
                       "Expected all elements of the tensor to have the same scalar type: Bool, but got element of "
                       "scalar type: Float");
  }
  {
    ASSERT_THROWS_WITH(ag::tensor({{{true}, {2}}}),
                       "Expected all elements of the tensor to have the same scalar type: Bool, but got element of "
                       "scalar type: Long");
  }
  {
    ASSERT_THROWS_WITH(ag::tensor({{{true, 2}}}),
                       "Expected all elements of the tensor to have the same scalar type: Bool, but got element of "
                       "scalar type: Long");
  }
}

TEST(TensorTest, TorchTensorCtorZeroSizedDim) {
  {
    auto tensor = ag::tensor({});
    ASSERT_EQ(tensor.numel(), 0);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({0}));
    ASSERT_EQ(tensor.dtype(), DType::Float32);
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{}, {}});
    ASSERT_EQ(tensor.numel(), 0);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({2, 0}));
    ASSERT_EQ(tensor.dtype(), DType::Float32);
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{{}, {}}});
    ASSERT_EQ(tensor.numel(), 0);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1, 2, 0}));
    ASSERT_EQ(tensor.dtype(), DType::Float32);
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{{}}});
    ASSERT_EQ(tensor.numel(), 0);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1, 1, 0}));
    ASSERT_EQ(tensor.dtype(), DType::Float32);
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{{{{{{{}}}}}}}});
    ASSERT_EQ(tensor.numel(), 0);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1, 1, 1, 1, 1, 1, 1, 0}));
    ASSERT_EQ(tensor.dtype(), DType::Float32);
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{{{{{{{}}}}, {{{{}}}}}}}});
    ASSERT_EQ(tensor.numel(), 0);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1, 1, 1, 2, 1, 1, 1, 0}));
    ASSERT_EQ(tensor.dtype(), DType::Float32);
    ASSERT_FALSE(tensor.requires_grad());
  }
  {
    auto tensor = ag::tensor({{{{{{{{{{}}}}}}}}}});
    ASSERT_EQ(tensor.numel(), 0);
    ASSERT_EQ(tensor.shape(), std::vector<int64_t>({1, 1, 1, 1, 1, 1, 1, 1, 1, 0}));
    ASSERT_EQ(tensor.dtype(), DType::Float32);
    ASSERT_FALSE(tensor.requires_grad());
  }
}

TEST(TensorTest, TorchTensorCtorWithoutSpecifyingDtype) {
  ASSERT_EQ(ag::tensor({1, 2, 3}).dtype(), DType::Int64);
  ASSERT_EQ(ag::tensor({{1, 2, 3}}).dtype(), DType::Int64);
  ASSERT_EQ(ag::tensor({1., 2., 3.}).dtype(), DType::Float32);
  ASSERT_EQ(ag::tensor({{1., 2., 3.}}).dtype(), DType::Float32);
}

TEST(TensorTest, Item) {
  {
    Tensor tensor = ag::tensor(3.14);
    ASSERT_NEAR(tensor.item<float>(), 3.14, 1e-5);
  }
  {
    Tensor tensor = ag::tensor(123);
    ASSERT_EQ(tensor.item<int>(), 123);
  }
}

TEST(TensorTest, Data) {
  const auto tensor = Tensor::rand({3, 3});
  ASSERT_TRUE(ag::equal(tensor, tensor.detach()));  // upstream: tensor.data()
}

TEST(TensorTest, BackwardAndGrad) {
  auto x = ag::tensor({5}, DType::Float32).requires_grad_(true);
  auto y = x * x;
  y.backward();
  ASSERT_EQ(x.grad().item<float>(), 10.0);
}

TEST(TensorTest, BackwardCreatesOnesGrad) {
  const auto x = ag::tensor({5}, DType::Float32).requires_grad_(true);
  x.backward();
  ASSERT_TRUE(ag::equal(x.grad(), Tensor::ones(x.shape())));
}

TEST(TensorTest, BackwardNonScalarOutputs) {
  auto x = Tensor::randn({5, 5}).requires_grad_();
  auto y = x * x;
  ASSERT_THROWS_WITH(y.backward(), "grad can be implicitly created only for scalar outputs");
}

TEST(TensorTest, IsLeaf) {
  auto x = ag::tensor({5}, DType::Float32).requires_grad_(true);
  auto y = x * x;
  ASSERT_TRUE(x.is_leaf());
  ASSERT_FALSE(y.is_leaf());
}

TEST(TensorTest, Version) {
  auto x = Tensor::ones({3});
  ASSERT_EQ(x._version(), 0);
  x.mul_(2);
  ASSERT_EQ(x._version(), 1);
  x.add_(1);
  ASSERT_EQ(x._version(), 2);
}

TEST(TensorTest, Detach) {
  auto x = ag::tensor({5}, DType::Float32).requires_grad_(true);
  auto y = x * x;
  const auto y_detached = y.detach();
  ASSERT_FALSE(y.is_leaf());
  ASSERT_TRUE(y_detached.is_leaf());
  ASSERT_FALSE(y_detached.requires_grad());
}

TEST(TensorTest, RequiresGradInplace) {
  auto x = ag::tensor({5.0});
  x.requires_grad_(true);
  ASSERT_TRUE(x.requires_grad());

  auto y = x * x;
  ASSERT_THROWS_WITH(y.requires_grad_(false), "you can only change requires_grad flags of leaf variables.");

  x.requires_grad_(false);
  ASSERT_FALSE(x.requires_grad());

  const auto int_tensor = ag::tensor({5}, DType::Int64);  // torch: kInt
  ASSERT_THROWS_WITH(int_tensor.requires_grad_(true), "Only Tensors of floating point and complex dtype can require gradients");
}
