// Ported from PyTorch's test/cpp/api/functional.cpp: the cases of the functions attograd has
// (losses, layer_norm, softmax, linear, embedding), with upstream's inputs, expected values and
// assertions, respelled per docs/cpp_api.md (tests/libtorch_port.h says how). The other cases
// are of functions attograd does not have (convolutions, pooling, the other losses and
// activations, interpolation, ...).
#include <gtest/gtest.h>

#include "autograd/engine.h"
#include "autograd/tensor_data.h"
#include "nn/functional.h"
#include "tests/libtorch_port.h"

using namespace ag;
namespace F = ag::nn::functional;

namespace {
struct FunctionalTest : ag::testing_port::SeedingFixture {};

// torch::empty(shape).random_(2): zeros and ones.
Tensor random_bits(const Shape& shape) { return Tensor::randint(0, 2, shape).to(DType::Float32); }
// torch::arange(start, end) of floats (float32).
Tensor farange(double start, double end) { return Tensor::arange(static_cast<int64_t>(end - start), DType::Float32) + start; }
}  // namespace

TEST_F(FunctionalTest, L1Loss) {
  auto input = Tensor::randn({5, 6}).requires_grad_();
  auto target = random_bits({5, 6});
  auto output = F::l1_loss(sigmoid(input), target);
  auto s = output.sum();
  s.backward();

  ASSERT_EQ(output.shape(), Shape());
  ASSERT_EQ(input.shape(), input.grad().shape());
}

TEST_F(FunctionalTest, MSELoss) {
  auto input = Tensor::randn({5, 6}).requires_grad_();
  auto target = random_bits({5, 6});
  auto output = F::mse_loss(sigmoid(input), target);
  auto s = output.sum();
  s.backward();

  ASSERT_EQ(output.shape(), Shape());
  ASSERT_EQ(input.shape(), input.grad().shape());
}

TEST_F(FunctionalTest, BCELoss) {
  auto input = Tensor::randn({5, 6}).requires_grad_();
  auto target = random_bits({5, 6});
  auto output = F::binary_cross_entropy(sigmoid(input), target);
  auto s = output.sum();
  s.backward();

  ASSERT_EQ(output.shape(), Shape());
  ASSERT_EQ(input.shape(), input.grad().shape());
}

TEST_F(FunctionalTest, NLLLoss) {
  auto input = ag::tensor({{-0.1315, -3.1315, -2.5315}, {-3.7038, -0.1038, -2.6038}, {-2.3422, -1.3422, -0.4422}},
                          DType::Float32);
  auto target = ag::tensor({1, 0, 2}, DType::Int64);
  auto output = F::nll_loss(input, target, {.ignore_index = -100, .reduction = kMean});
  auto expected = ag::tensor(2.4258, DType::Float32);
  ASSERT_TRUE(output.allclose(expected, 1e-04));
  ASSERT_TRUE(F::nll_loss(input, target).allclose(expected, 1e-04));
}

TEST_F(FunctionalTest, CrossEntropy) {
  auto input = ag::tensor({{3., 3.}, {2., 2.}}, DType::Float32);
  auto target = ag::tensor({0, 1}, DType::Int64);
  auto output = F::cross_entropy(input, target, {.ignore_index = -100, .reduction = kMean});
  auto expected = ag::tensor(0.6931, DType::Float32);

  ASSERT_TRUE(output.allclose(expected, 1e-04));
  ASSERT_TRUE(F::cross_entropy(input, target).allclose(expected, 1e-04));

  // label smoothing with class indices
  input = ag::tensor({{3., 1.}, {1., 2.}}, DType::Float32);
  output = F::cross_entropy(input, target, {.reduction = kMean, .label_smoothing = 0.15});
  expected = ag::tensor(0.3326, DType::Float32);
  ASSERT_TRUE(output.allclose(expected, 1e-04));

  // label smoothing with target probabilities
  target = ag::tensor({{0.8, 0.2}, {0.1, 0.9}}, DType::Float32);
  output = F::cross_entropy(input, target, {.reduction = kMean, .label_smoothing = 0.2});
  expected = ag::tensor(0.5701, DType::Float32);
  ASSERT_TRUE(output.allclose(expected, 1e-04));
}

TEST_F(FunctionalTest, LayerNorm) {
  const auto input = Tensor::randn({2, 2});
  auto y = F::layer_norm(input, {2, 2}, Tensor(), Tensor(), 2e-5);
  // upstream compares with torch::layer_norm, the same function in attograd: check the definition instead
  const auto mu = input.mean(), var = (input - mu).pow(2).mean();
  auto y_exp = (input - mu) / (var + 2e-5).sqrt();
  ASSERT_TRUE(ag::allclose(y, y_exp));
}

TEST_F(FunctionalTest, Softmax) {
  auto input = Tensor::arange(10, DType::Float32).reshape({2, 5});
  auto output = F::softmax(input, /*dim=*/1);
  auto sum = ag::sum(exp(input), {1});

  for (int i = 0; i < 2; i++) {
    auto expected = exp(input[i]) / sum[i];
    ASSERT_TRUE(ag::allclose(output[i], expected));
  }
}

TEST_F(FunctionalTest, LogSoftmax) {
  auto input = Tensor::arange(10, DType::Float32).reshape({2, 5});
  auto output = F::log_softmax(input, /*dim=*/1);
  auto sum = ag::sum(exp(input), {1});

  for (int i = 0; i < 2; i++) {
    auto expected = log(exp(input[i]) / sum[i]);
    ASSERT_TRUE(ag::allclose(output[i], expected));
  }
}

TEST_F(FunctionalTest, Linear) {
  {
    const auto x = farange(100., 118).reshape({3, 3, 2});
    const auto w = farange(200., 206).reshape({3, 2});
    const auto b = farange(300., 303);
    const auto y = F::linear(x, w, b);
    ASSERT_EQ(y.dim(), 3);
    ASSERT_EQ(y.shape(), Shape({3, 3, 3}));
    const auto y_exp = ag::tensor({{{40601, 41004, 41407}, {41403, 41814, 42225}, {42205, 42624, 43043}},
                                   {{43007, 43434, 43861}, {43809, 44244, 44679}, {44611, 45054, 45497}},
                                   {{45413, 45864, 46315}, {46215, 46674, 47133}, {47017, 47484, 47951}}},
                                  DType::Float32);
    ASSERT_TRUE(ag::allclose(y, y_exp));
  }
  {
    const auto x = farange(100., 118).reshape({3, 3, 2});
    const auto w = farange(200., 206).reshape({3, 2});
    const auto y = F::linear(x, w);
    ASSERT_EQ(y.dim(), 3);
    ASSERT_EQ(y.shape(), Shape({3, 3, 3}));
    const auto y_exp = ag::tensor({{{40301, 40703, 41105}, {41103, 41513, 41923}, {41905, 42323, 42741}},
                                   {{42707, 43133, 43559}, {43509, 43943, 44377}, {44311, 44753, 45195}},
                                   {{45113, 45563, 46013}, {45915, 46373, 46831}, {46717, 47183, 47649}}},
                                  DType::Float32);
    ASSERT_TRUE(ag::allclose(y, y_exp));
  }
}

TEST_F(FunctionalTest, Embedding) {
  const auto input = ag::tensor({{1, 2, 4, 5}, {4, 3, 2, 9}}, DType::Int64);
  auto weight = Tensor::randn({10, 3});
  auto y = F::embedding(input, weight);
  // upstream compares with torch::embedding, the same function in attograd: rows looked up one by one
  auto y_exp = index_select(weight, 0, input.reshape({-1})).reshape({2, 4, 3});
  ASSERT_TRUE(ag::allclose(y, y_exp));
}
