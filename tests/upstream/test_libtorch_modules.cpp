// The modules attograd has (Identity, Linear, Embedding, Dropout, LayerNorm, the activations,
// Functional, the loss modules, MultiheadAttention) and named parameters, on the cases of
// PyTorch's C++ frontend suite (test/cpp/api/modules.cpp): the sizes, inputs, expected values,
// formulas and error texts are upstream's facts; the checks are written here in attograd's
// terms (plain modules, designated initializers for options). tests/upstream/README.md names
// the source of each file of this folder.
//
// Not covered: the modules attograd does not have (convolutions, pooling, the other norms,
// losses and activations, RNNs, padding, upsampling, ...), in-place activations and dropout,
// printing, and CUDA. Binding arguments into a Functional is shown with clamp (upstream binds
// elu's, which attograd lacks). MultiheadAttention is checked against the definition of
// attention written out below, with kdim = vdim = embed_dim and no bias_kv, zero attention or
// static keys (attograd's module has none of them); a query whose keys are all masked gets NaN
// in both, as in torch (AttentionOptions::fully_masked_rows); the sizes are drawn from a seeded
// std::mt19937.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <random>

#include "autograd/engine.h"
#include "autograd/indexing.h"
#include "autograd/tensor_data.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/functional.h"
#include "nn/functional_module.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "tests/upstream/libtorch_port.h"

using namespace ag;
using namespace ag::nn;

namespace {
struct ModuleCases : ag::testing_port::SeedingFixture {};

// Three layers under l1, l2, l3.
struct ThreeLinears : Module {
  ThreeLinears()
      : l1(register_module("l1", std::make_shared<Linear>(10, 3))),
        l2(register_module("l2", std::make_shared<Linear>(3, 5))),
        l3(register_module("l3", std::make_shared<Linear>(5, 100))) {}
  std::shared_ptr<Linear> l1, l2, l3;
};

// A parameter of its own, a layer, and ThreeLinears under "test".
struct Nested : Module {
  Nested()
      : own(register_parameter("param", Tensor::empty({3, 2, 21}))),
        l1(register_module("l1", std::make_shared<Linear>(5, 20))),
        inner(register_module("test", std::make_shared<ThreeLinears>())) {}
  Tensor own;
  std::shared_ptr<Linear> l1;
  std::shared_ptr<ThreeLinears> inner;
};

using ag::testing_port::coin_flips;
using ag::testing_port::expect_scalar_loss_with_gradient;

// `steps` evenly spaced float32 values from `first` to `last`.
Tensor evenly_spaced(double first, double last, int64_t steps) {
  return Tensor::arange(steps, DType::Float64).mul((last - first) / static_cast<double>(steps - 1)).add(first).to(DType::Float32);
}

// A module's output is `shape`, and after backward of its sum the input has a gradient of its shape.
void expect_shape_and_input_gradient(const std::function<Tensor(const Tensor&)>& run, const Tensor& x, const Shape& shape) {
  const Tensor y = run(x);
  EXPECT_EQ(y.shape(), shape);
  Tensor total = y.sum();
  total.backward();
  EXPECT_EQ(total.dim(), 0);
}


// out == value to 1e-4, and x has a gradient of its shape after backward of out.
void expect_loss_value(Tensor out, double value, const Tensor& x) {
  EXPECT_TRUE(out.allclose(ag::tensor(value, DType::Float32), 1e-04)) << out;
  out.backward();
  EXPECT_EQ(x.grad().shape(), x.shape());
}
}  // namespace

TEST_F(ModuleCases, IdentityPassesValuesAndGradientsThrough) {
  Identity identity;
  const Tensor x = ag::tensor({{1, 3, 4}, {2, 3, 4}}, DType::Float32).requires_grad_();
  const Tensor y = identity.forward(x);
  Tensor total = y.sum();
  total.backward();
  EXPECT_TRUE(ag::equal(y, ag::tensor({{1, 3, 4}, {2, 3, 4}}, DType::Float32)));
  EXPECT_TRUE(ag::equal(x.grad(), Tensor::ones(x.shape())));
}

TEST_F(ModuleCases, LinearMapsFiveFeaturesToTwo) {
  Linear layer(5, 2);
  expect_shape_and_input_gradient([&](const Tensor& x) { return layer(x); }, Tensor::randn({10, 5}).requires_grad_(), {10, 2});
  EXPECT_EQ(layer.weight.grad().numel(), 2 * 5);
}

TEST_F(ModuleCases, EmbeddingOfAVectorOfIndicesGivesOneRowEach) {
  Embedding table(10, 2);
  EXPECT_TRUE(table.named_parameters().contains("weight"));
  EXPECT_EQ(table.weight.shape(), Shape({10, 2}));
  // The indices get no gradient; the table does.
  expect_shape_and_input_gradient([&](const Tensor& ids) { return table(ids); }, Tensor::full({10}, 9, DType::Int64), {10, 2});
  EXPECT_EQ(table.weight.grad().numel(), 2 * 10);
}

TEST_F(ModuleCases, EmbeddingOfAMatrixOfIndicesAddsALastDimension) {
  Embedding table(6, 4);
  expect_shape_and_input_gradient([&](const Tensor& ids) { return table(ids); }, Tensor::full({2, 3}, 5, DType::Int64), {2, 3, 4});
}

TEST_F(ModuleCases, EmbeddingFromPretrainedLooksUpTheGivenRows) {
  Embedding table = Embedding::from_pretrained(ag::tensor({{1., 2.3, 3.}, {4., 5.1, 6.3}}));
  EXPECT_TRUE(ag::allclose(table(ag::tensor({1}, DType::Int64)), ag::tensor({4.0000, 5.1000, 6.3000})));
}

TEST_F(ModuleCases, DropoutKeepsAboutHalfInTrainingAndEverythingInEval) {
  Dropout drop(0.5);
  const Tensor ones = Tensor::ones({100}).requires_grad_(true);
  Tensor y = drop(ones);
  EXPECT_EQ(y.shape(), Shape({100}));
  const float kept = y.sum().item<float>();  // kept elements are scaled by 2: the sum stays near 100
  EXPECT_GT(kept, 70);
  EXPECT_LT(kept, 130);
  y.backward(Tensor::ones(y.shape()));

  drop.eval();
  EXPECT_EQ(drop(Tensor::ones({100})).sum().item<float>(), 100);
}

TEST_F(ModuleCases, NestedModulesNameTheirParametersByPath) {
  const auto params = std::make_shared<Nested>()->named_parameters();
  const std::vector<std::pair<std::string, Shape>> want = {
      {"param", {3, 2, 21}},       {"l1.weight", {20, 5}},      {"l1.bias", {20}},
      {"test.l1.weight", {3, 10}}, {"test.l1.bias", {3}},       {"test.l2.weight", {5, 3}},
      {"test.l2.bias", {5}},       {"test.l3.weight", {100, 5}}, {"test.l3.bias", {100}}};
  for (const auto& [name, shape] : want) EXPECT_EQ(params[name].shape(), shape) << name;
}

TEST_F(ModuleCases, FunctionalCallsTheGivenCallableEachTime) {
  int calls = 0;
  Functional pass([&calls](Tensor x) {
    ++calls;
    return x;
  });
  for (int i = 1; i <= 2; ++i) {
    EXPECT_TRUE(pass(Tensor::ones({5}).requires_grad_()).equal(Tensor::ones({5})));
    EXPECT_EQ(calls, i);
  }
}

TEST_F(ModuleCases, FunctionalWrapsALibraryFunction) {
  Functional relu_module(ag::relu);
  EXPECT_EQ(relu_module(Tensor::ones({})).item<float>(), 1);
  EXPECT_EQ(relu_module(Tensor::ones({})).item<float>(), 1);
  EXPECT_EQ(relu_module(Tensor::ones({}) * -1).item<float>(), 0);
}

TEST_F(ModuleCases, FunctionalBindsTheArgumentsAfterTheInput) {
  Functional clamp_to_zero([](const Tensor& x, double lo, double hi) { return ag::clamp(x, lo, hi); }, /*lo=*/0.0, /*hi=*/0.0);
  EXPECT_EQ(clamp_to_zero(Tensor::ones({})).item<float>(), 0);
}

TEST_F(ModuleCases, LayerNormModuleMatchesTheFunction) {
  LayerNorm norm(Shape{2, 2}, /*eps=*/2e-5);
  const Tensor x = Tensor::randn({2, 2}).requires_grad_();
  const Tensor want = layer_norm(x, {2, 2}, norm.weight, norm.bias, 2e-5);
  expect_shape_and_input_gradient([&](const Tensor& in) { return norm(in); }, x, {2, 2});
  EXPECT_EQ(norm.weight.grad().numel(), 2 * 2);
  EXPECT_TRUE(ag::allclose(norm(x), want));
}

TEST_F(ModuleCases, L1LossModuleIsAScalarWithAGradient) {
  L1Loss loss;
  expect_scalar_loss_with_gradient([&](const Tensor& p, const Tensor& t) { return loss.forward(p, t); });
}

TEST_F(ModuleCases, MseLossModuleIsAScalarWithAGradient) {
  MSELoss loss;
  expect_scalar_loss_with_gradient([&](const Tensor& p, const Tensor& t) { return loss.forward(p, t); });
}

TEST_F(ModuleCases, BceLossModuleIsAScalarWithAGradient) {
  BCELoss loss;
  expect_scalar_loss_with_gradient([&](const Tensor& p, const Tensor& t) { return loss.forward(p, t); });
}

TEST_F(ModuleCases, NllLossModuleOfThreeLogProbabilityRows) {
  const Tensor log_probs = ag::tensor(
      {{-0.1315, -3.1315, -2.5315}, {-3.7038, -0.1038, -2.6038}, {-2.3422, -1.3422, -0.4422}}, DType::Float32).requires_grad_(true);
  const Tensor classes = ag::tensor({1, 0, 2}, DType::Int64);
  expect_loss_value(NLLLoss().forward(log_probs, classes), 2.4258, log_probs);
  EXPECT_TRUE(NLLLoss({.ignore_index = -100, .reduction = kMean}).forward(log_probs, classes).allclose(ag::tensor(2.4258, DType::Float32), 1e-04));
}

TEST_F(ModuleCases, CrossEntropyLossModulePlainAndWithLabelSmoothing) {
  const Tensor classes = ag::tensor({0, 1}, DType::Int64);
  const Tensor tied = ag::tensor({{3., 3.}, {2., 2.}}, DType::Float32).requires_grad_(true);  // log 2 per row
  expect_loss_value(CrossEntropyLoss().forward(tied, classes), 0.6931, tied);
  EXPECT_TRUE(CrossEntropyLoss({.ignore_index = -100, .reduction = kMean}).forward(tied, classes).allclose(ag::tensor(0.6931, DType::Float32), 1e-04));

  const Tensor logits = ag::tensor({{3., 1.}, {1., 2.}}, DType::Float32).requires_grad_(true);
  expect_loss_value(CrossEntropyLoss({.reduction = kMean, .label_smoothing = 0.15}).forward(logits, classes), 0.3326, logits);
  const Tensor logits2 = ag::tensor({{3., 1.}, {1., 2.}}, DType::Float32).requires_grad_(true);
  const Tensor soft = ag::tensor({{0.8, 0.2}, {0.1, 0.9}}, DType::Float32);
  expect_loss_value(CrossEntropyLoss({.reduction = kMean, .label_smoothing = 0.2}).forward(logits2, soft), 0.5701, logits2);
}

TEST_F(ModuleCases, BceWithLogitsIsSigmoidThenBceWithoutItsInstability) {
  // Shapes must match exactly: (5) against (5, 1) either way round is refused.
  ASSERT_THROWS_WITH(BCEWithLogitsLoss()(Tensor::rand({5, 1}), Tensor::rand({5})), "must be the same as input size");
  ASSERT_THROWS_WITH(BCEWithLogitsLoss()(Tensor::rand({5}), Tensor::rand({5, 1})), "must be the same as input size");

  // The same values as BCELoss of the sigmoid, plain, weighted, unreduced, and at logits of −100.
  Sigmoid sig;
  auto same_as_bce = [&](const Tensor& logits, const Tensor& target, const BCEWithLogitsLossOptions& with_logits,
                         const BCELossOptions& plain) {
    return ag::allclose(BCEWithLogitsLoss(with_logits)(logits, target), BCELoss(plain)(sig(logits), target));
  };
  {
    const Tensor target = Tensor::rand({64, 4});
    const Tensor logits = Tensor::rand({64, 4}) - 0.5;
    EXPECT_TRUE(same_as_bce(logits, target, {}, {}));
    const Tensor w = Tensor::rand({4});
    EXPECT_TRUE(same_as_bce(logits, target, {.weight = w}, {.weight = w}));
  }
  {
    const Tensor target = Tensor::zeros({4, 1}, DType::Float32);
    const Tensor logits = Tensor::full({4, 1}, -100, DType::Float32);
    EXPECT_TRUE(same_as_bce(logits, target, {}, {}));
    EXPECT_TRUE(same_as_bce(logits, target, {.reduction = kNone}, {.reduction = kNone}));
    const Tensor w = Tensor::rand({1}, DType::Float32);
    EXPECT_TRUE(same_as_bce(logits, target, {.weight = w}, {.weight = w}));
  }

  // At logit 0 against target 0, the summed loss has gradient σ(0) = 0.5, with or without a
  // pos_weight of ones.
  for (bool with_pos_weight : {false, true}) {
    const Tensor logits = Tensor::zeros({3, 1}).requires_grad_();
    BCEWithLogitsLossOptions o{.reduction = kSum};
    if (with_pos_weight) o.pos_weight = Tensor::ones({3, 1});
    Tensor loss = BCEWithLogitsLoss(o)(logits, Tensor::zeros({3, 1}));
    loss.backward();
    EXPECT_TRUE(ag::allclose(logits.grad(), Tensor::full({3, 1}, 0.5))) << "pos_weight " << with_pos_weight;
  }

  // A weight broadcasts: (4) and (16, 1) give what their expansion to (16, 4) gives.
  {
    const Tensor target = Tensor::rand({16, 4});
    const Tensor logits = Tensor::rand({16, 4}) - 0.5;
    for (const Shape& shape : {Shape{4}, Shape{16, 1}}) {
      const Tensor w = Tensor::rand(shape);
      EXPECT_TRUE(ag::allclose(BCEWithLogitsLoss({.weight = w})(logits, target),
                               BCEWithLogitsLoss({.weight = expand(w, {16, 4}).contiguous()})(logits, target)));
    }
  }
  // A pos_weight of ones changes nothing; one of shape (4) gives what its expansions give.
  {
    const Tensor target = Tensor::rand({64, 4});
    const Tensor logits = Tensor::rand({64, 4}) - 0.5;
    EXPECT_TRUE(ag::allclose(BCEWithLogitsLoss()(logits, target),
                             BCEWithLogitsLoss({.pos_weight = Tensor::ones({64, 4})})(logits, target)));
  }
  {
    const Tensor target = Tensor::rand({64, 4});
    const Tensor logits = Tensor::rand({64, 4}) - 0.5;
    const Tensor pw = Tensor::rand({4});
    const Tensor base = BCEWithLogitsLoss({.pos_weight = pw})(logits, target);
    EXPECT_TRUE(ag::allclose(base, BCEWithLogitsLoss({.pos_weight = expand(pw, {1, 4}).contiguous()})(logits, target)));
    EXPECT_TRUE(ag::allclose(base, BCEWithLogitsLoss({.pos_weight = expand(pw, {64, 4}).contiguous()})(logits, target)));
  }
  // A logit of −120 against target 1 stays finite.
  {
    const Tensor logits = ag::tensor({0., -120.});
    const Tensor target = ag::tensor({0., 1.});
    EXPECT_TRUE(std::isfinite(BCEWithLogitsLoss()(logits, target).item()));
    EXPECT_TRUE(std::isfinite(BCEWithLogitsLoss({.pos_weight = ag::tensor({1., 1.})})(logits, target).item()));
  }
}

TEST_F(ModuleCases, GeluMatchesTheErfDefinition) {
  GELU gelu(/*approximate_tanh=*/false);
  const Tensor x = evenly_spaced(-3.0, 3.0, 100);
  Tensor want = x.clone();
  {
    NoGradGuard no_grad;
    float* v = want.data<float>();
    for (int64_t i = 0; i < want.numel(); ++i) v[i] = static_cast<float>(0.5 * v[i] * (1.0 + std::erf(v[i] / std::sqrt(2.0))));
  }
  EXPECT_TRUE(ag::allclose(gelu(x), want, 1.4e-06, 1e-05));
}

TEST_F(ModuleCases, TanhGeluMatchesItsFormula) {
  GELU gelu(/*approximate_tanh=*/true);
  const Tensor x = evenly_spaced(-3.0, 3.0, 100);
  const Tensor want = 0.5 * x * (1.0 + (std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x.pow(3.0))).tanh());
  EXPECT_TRUE(ag::allclose(gelu(x), want, 1.4e-06, 1e-05));
}

TEST_F(ModuleCases, SigmoidMatchesItsFormula) {
  Sigmoid sig;
  const Tensor x = Tensor::randn({100}) * 10;
  EXPECT_TRUE(ag::allclose(sig(x), 1 / (1 + exp(-x))));
}

TEST_F(ModuleCases, TanhMatchesItsFormula) {
  Tanh th;
  const Tensor x = Tensor::randn({100}) * 10;
  EXPECT_TRUE(ag::allclose(th(x), (x.exp() - (-x).exp()) / (x.exp() + (-x).exp())));
}

TEST_F(ModuleCases, ReluZeroesTheNegativesAndKeepsTheRest) {
  ReLU relu;
  const Tensor x = evenly_spaced(-10.0, 10.0, 27).reshape({3, 3, 3}).requires_grad_(true);
  const Tensor want = (x.detach() >= 0).to(DType::Float32) * x.detach();
  expect_shape_and_input_gradient([&](const Tensor& in) { return relu(in); }, x, {3, 3, 3});
  EXPECT_TRUE(ag::allclose(relu(x), want));
}

// ---- MultiheadAttention against the definition -----------------------------------------------

namespace {
// Attention of one query per batch element, written out: project with the module's in_proj,
// for each batch element b and head h the scores q·k/√d over the S keys, −∞ where a key is
// masked (attn01[n] == 0, or key_padding[b][n]), softmax, the weighted sum of the values, the
// heads side by side through out_proj. Returns the output (N, E) and the weights (N, 1, S)
// averaged over heads or (N, H, 1, S).
struct Attended {
  Tensor output, weights;
};
Attended attention_by_definition(const MultiheadAttention& mha, const Tensor& query /*(N, E)*/, const Tensor& kv /*(N, S, E)*/,
                                 const Tensor& attn01 /*(1, S)*/, const Tensor& key_padding /*(N, S) or undefined*/,
                                 bool average) {
  NoGradGuard values_only;
  const int64_t N = kv.size(0), S = kv.size(1), E = kv.size(2), H = mha.num_heads, D = E / H;
  using indexing::Slice;
  auto project = [&](const Tensor& x, int64_t part) {
    const Tensor w = mha.in_proj_weight.index({Slice(part * E, (part + 1) * E)});
    const Tensor b = mha.in_proj_bias.index({Slice(part * E, (part + 1) * E)});
    return (matmul(x, w.t()) + b).contiguous().to(DType::Float64);
  };
  const Tensor q = project(query, 0), k = project(kv, 1), v = project(kv, 2);
  const Tensor mask = attn01.contiguous().to(DType::Float64);
  const Tensor pad = key_padding.defined() ? key_padding.to(DType::Float64).contiguous() : Tensor::zeros({N, S}, DType::Float64);
  const double* Q = q.data<double>();
  const double* K = k.data<double>();
  const double* V = v.data<double>();
  const double* M = mask.data<double>();
  const double* P = pad.data<double>();

  Tensor heads = Tensor::zeros({N, E}, DType::Float64);
  Tensor probs = Tensor::zeros({N, H, 1, S}, DType::Float64);
  double* out = heads.data<double>();
  double* w = probs.data<double>();
  for (int64_t b = 0; b < N; ++b)
    for (int64_t h = 0; h < H; ++h) {
      std::vector<double> s(S);
      double top = -std::numeric_limits<double>::infinity();
      for (int64_t n = 0; n < S; ++n) {
        double dot = 0;
        for (int64_t d = 0; d < D; ++d) dot += Q[b * E + h * D + d] * K[(b * S + n) * E + h * D + d];
        s[n] = (M[n] == 0 || P[b * S + n] != 0) ? -std::numeric_limits<double>::infinity() : dot / std::sqrt(double(D));
        top = std::max(top, s[n]);
      }
      double total = 0;
      for (int64_t n = 0; n < S; ++n) total += (s[n] = std::exp(s[n] - top));  // all masked: exp(nan), as torch
      for (int64_t n = 0; n < S; ++n) {
        const double p = s[n] / total;
        w[(b * H + h) * S + n] = p;
        for (int64_t d = 0; d < D; ++d) out[b * E + h * D + d] += p * V[(b * S + n) * E + h * D + d];
      }
    }
  const Tensor proj_w = mha.out_proj->weight.to(DType::Float64), proj_b = mha.out_proj->bias.to(DType::Float64);
  Attended r;
  r.output = (matmul(heads, proj_w.t()) + proj_b).to(DType::Float32);
  r.weights = (average ? ag::sum(probs, {1}) / static_cast<double>(H) : probs).to(DType::Float32);
  return r;
}

// 100 random sizes (batch and keys 2..10, head size and heads 3..10): one query per batch
// element against keys that are also the values, a random 0/1 mask over the keys (0: masked),
// and with `key_padding` a random padding mask shared by the batch.
void check_against_definition(bool key_padding, bool average) {
  std::mt19937 rng(0);
  std::uniform_int_distribution<int> two_to_ten(2, 10), three_to_ten(3, 10);
  for (int round = 0; round < 100; ++round) {
    const int64_t N = two_to_ten(rng), S = two_to_ten(rng), D = three_to_ten(rng), H = three_to_ten(rng), E = D * H;
    SCOPED_TRACE("N " + std::to_string(N) + ", S " + std::to_string(S) + ", heads " + std::to_string(H) + " of " + std::to_string(D));
    Tensor padding;
    if (key_padding) padding = expand(Tensor::randint(0, 2, {1, S}).to(DType::Float32), {N, S}) == 1.0;  // true: masked
    const Tensor query = Tensor::rand({N, E});
    const Tensor kv = Tensor::rand({N, S, E});
    const Tensor attn01 = Tensor::randint(0, 2, {1, S}).to(DType::Float32);
    // The module's additive form of the same mask: 0 where a key is seen, −∞ where not.
    const Tensor additive = masked_fill(masked_fill(attn01, attn01 == 0, -std::numeric_limits<double>::infinity()), attn01 > 0, 0.0);

    MultiheadAttention mha(E, H, 0.0, true, false, DType::Float32, default_generator(), {.fully_masked_rows = FullyMaskedRows::NaN});
    if (round == 0) {
      EXPECT_TRUE(mha.named_parameters().contains("in_proj_weight"));
      EXPECT_TRUE(mha.named_children().contains("out_proj"));
    }
    // Sequence-first: query (1, N, E), keys and values (S, N, E).
    auto [out, weights] = mha.forward(query.unsqueeze(1).transpose(0, 1), kv.transpose(0, 1), kv.transpose(0, 1), padding,
                                      /*need_weights=*/true, additive, average);
    const Attended want = attention_by_definition(mha, query, kv, attn01, padding, average);
    const Tensor got = out.squeeze(0).detach();
    ASSERT_EQ(got.shape(), Shape({N, E}));
    ASSERT_TRUE(ag::allclose(got, want.output, 1e-5, 1e-5, /*equal_nan=*/true));
    ASSERT_EQ(weights.shape(), want.weights.shape());
    ASSERT_TRUE(ag::allclose(weights.detach(), want.weights, 1e-5, 1e-5, /*equal_nan=*/true));
  }
}
}  // namespace

TEST_F(ModuleCases, MultiheadAttentionMatchesTheDefinitionWithAndWithoutKeyPadding) {
  for (bool average : {false, true}) {
    check_against_definition(/*key_padding=*/false, /*average=*/true);
    check_against_definition(/*key_padding=*/true, average);
  }
}
