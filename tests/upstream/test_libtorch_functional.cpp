// nn::functional, on the cases of PyTorch's C++ frontend suite (test/cpp/api/functional.cpp)
// for the functions attograd has (losses, layer_norm, softmax, log_softmax, linear, embedding):
// the inputs and expected numbers are upstream's facts; the checks are written here in
// attograd's terms. tests/upstream/README.md names the source of each file of this folder.
// Upstream's other cases are of functions attograd does not have (convolutions, pooling, the
// other losses and activations, interpolation, ...).
#include <gtest/gtest.h>

#include <functional>

#include "autograd/engine.h"
#include "autograd/tensor_data.h"
#include "nn/functional.h"
#include "tests/upstream/libtorch_port.h"

using namespace ag;
namespace F = ag::nn::functional;

namespace {
struct FunctionalCases : ag::testing_port::SeedingFixture {};

using ag::testing_port::coin_flips;
using ag::testing_port::expect_scalar_loss_with_gradient;

// start, start + 1, ..., end - 1 as float32.
Tensor float_range(double start, double end) { return Tensor::arange(static_cast<int64_t>(end - start), DType::Float32) + start; }


bool near(const Tensor& got, double want) { return got.allclose(ag::tensor(want, DType::Float32), 1e-04); }

// Row r of softmax(x) over dim 1, from its definition.
Tensor softmax_row(const Tensor& x, int r) { return exp(x[r]) / ag::sum(exp(x), {1})[r]; }
}  // namespace

TEST_F(FunctionalCases, L1LossIsAScalarWithAGradient) {
  expect_scalar_loss_with_gradient([](const Tensor& p, const Tensor& t) { return F::l1_loss(p, t); });
}

TEST_F(FunctionalCases, MseLossIsAScalarWithAGradient) {
  expect_scalar_loss_with_gradient([](const Tensor& p, const Tensor& t) { return F::mse_loss(p, t); });
}

TEST_F(FunctionalCases, BinaryCrossEntropyIsAScalarWithAGradient) {
  expect_scalar_loss_with_gradient([](const Tensor& p, const Tensor& t) { return F::binary_cross_entropy(p, t); });
}

TEST_F(FunctionalCases, NllLossOfThreeLogProbabilityRows) {
  const Tensor log_probs = ag::tensor(
      {{-0.1315, -3.1315, -2.5315}, {-3.7038, -0.1038, -2.6038}, {-2.3422, -1.3422, -0.4422}}, DType::Float32);
  const Tensor classes = ag::tensor({1, 0, 2}, DType::Int64);
  EXPECT_TRUE(near(F::nll_loss(log_probs, classes, {.ignore_index = -100, .reduction = kMean}), 2.4258));
  EXPECT_TRUE(near(F::nll_loss(log_probs, classes), 2.4258));  // the same options are the defaults
}

TEST_F(FunctionalCases, CrossEntropyPlainAndWithLabelSmoothing) {
  const Tensor classes = ag::tensor({0, 1}, DType::Int64);
  const Tensor tied = ag::tensor({{3., 3.}, {2., 2.}}, DType::Float32);  // every row a tie: log 2
  EXPECT_TRUE(near(F::cross_entropy(tied, classes, {.ignore_index = -100, .reduction = kMean}), 0.6931));
  EXPECT_TRUE(near(F::cross_entropy(tied, classes), 0.6931));

  const Tensor logits = ag::tensor({{3., 1.}, {1., 2.}}, DType::Float32);
  EXPECT_TRUE(near(F::cross_entropy(logits, classes, {.reduction = kMean, .label_smoothing = 0.15}), 0.3326));
  const Tensor soft_targets = ag::tensor({{0.8, 0.2}, {0.1, 0.9}}, DType::Float32);
  EXPECT_TRUE(near(F::cross_entropy(logits, soft_targets, {.reduction = kMean, .label_smoothing = 0.2}), 0.5701));
}

TEST_F(FunctionalCases, LayerNormOverTheWholeTensorMatchesItsDefinition) {
  // Upstream compares against torch::layer_norm, which is this very function here; the
  // definition (x − mean) / sqrt(var + eps) is the independent value.
  const Tensor x = Tensor::randn({2, 2});
  const Tensor mean = x.mean(), var = (x - mean).pow(2).mean();
  EXPECT_TRUE(ag::allclose(F::layer_norm(x, {2, 2}, Tensor(), Tensor(), 2e-5), (x - mean) / (var + 2e-5).sqrt()));
}

TEST_F(FunctionalCases, SoftmaxRowsMatchTheirDefinition) {
  const Tensor x = Tensor::arange(10, DType::Float32).reshape({2, 5});
  const Tensor y = F::softmax(x, /*dim=*/1);
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(ag::allclose(y[r], softmax_row(x, r))) << "row " << r;
}

TEST_F(FunctionalCases, LogSoftmaxRowsMatchTheLogOfTheDefinition) {
  const Tensor x = Tensor::arange(10, DType::Float32).reshape({2, 5});
  const Tensor y = F::log_softmax(x, /*dim=*/1);
  for (int r = 0; r < 2; ++r) EXPECT_TRUE(ag::allclose(y[r], log(softmax_row(x, r)))) << "row " << r;
}

TEST_F(FunctionalCases, LinearOfARank3InputWithAndWithoutBias) {
  const Tensor x = float_range(100., 118).reshape({3, 3, 2});
  const Tensor w = float_range(200., 206).reshape({3, 2});
  const Tensor b = float_range(300., 303);

  const Tensor with_bias = F::linear(x, w, b);
  ASSERT_EQ(with_bias.shape(), Shape({3, 3, 3}));
  EXPECT_TRUE(ag::allclose(with_bias, ag::tensor({{{40601, 41004, 41407}, {41403, 41814, 42225}, {42205, 42624, 43043}},
                                                  {{43007, 43434, 43861}, {43809, 44244, 44679}, {44611, 45054, 45497}},
                                                  {{45413, 45864, 46315}, {46215, 46674, 47133}, {47017, 47484, 47951}}},
                                                 DType::Float32)));

  const Tensor without = F::linear(x, w);
  ASSERT_EQ(without.shape(), Shape({3, 3, 3}));
  EXPECT_TRUE(ag::allclose(without, ag::tensor({{{40301, 40703, 41105}, {41103, 41513, 41923}, {41905, 42323, 42741}},
                                                {{42707, 43133, 43559}, {43509, 43943, 44377}, {44311, 44753, 45195}},
                                                {{45113, 45563, 46013}, {45915, 46373, 46831}, {46717, 47183, 47649}}},
                                               DType::Float32)));
}

TEST_F(FunctionalCases, EmbeddingLooksUpEachIndexsRow) {
  // Upstream compares against torch::embedding, this very function here; index_select of the
  // flattened indices is the independent value.
  const Tensor ids = ag::tensor({{1, 2, 4, 5}, {4, 3, 2, 9}}, DType::Int64);
  const Tensor table = Tensor::randn({10, 3});
  EXPECT_TRUE(ag::allclose(F::embedding(ids, table), index_select(table, 0, ids.reshape({-1})).reshape({2, 4, 3})));
}
