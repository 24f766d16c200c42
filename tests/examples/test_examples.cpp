// The computations of the example programs (examples/*/ headers) against PyTorch 2's values
// (tests/parity/make_examples_fixtures.py → tests/parity/fixtures/examples/examples.json). The
// programs themselves are built against the installed package and run by install.example_*.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "examples/custom_function/softplus.h"
#include "examples/mlp_gradient_penalty/regression.h"

using namespace ag;

namespace {
nlohmann::json fixture(const char* key) {
  std::ifstream in(std::filesystem::path(ATTOGRAD_SOURCE_DIR) / "tests/parity/fixtures/examples/examples.json");
  EXPECT_TRUE(in.good()) << "cannot read tests/parity/fixtures/examples/examples.json";
  return nlohmann::json::parse(in).at(key);
}
}  // namespace

// Each Adam step's loss, the gradient penalty differentiated through create_graph, as torch's.
TEST(Examples, MlpGradientPenaltyLossesMatchTorch) {
  const nlohmann::json expected = fixture("mlp_gradient_penalty");
  const auto losses = expected.at("losses").get<std::vector<double>>();
  std::vector<double> got;
  mlp_gradient_penalty::train(expected.at("steps").get<int64_t>(), [&](int64_t, double loss) { got.push_back(loss); });
  ASSERT_EQ(got.size(), losses.size());
  for (size_t s = 0; s < got.size(); ++s) EXPECT_NEAR(got[s], losses[s], 1e-12 * std::abs(losses[s])) << "step " << s;
  EXPECT_LT(got.back(), 0.5 * got.front());  // it learns
}

// The penalty term matters: without create_graph its gradient would be missing from the loss's.
TEST(Examples, MlpGradientPenaltyIsDifferentiatedThroughTheGradient) {
  auto model = mlp_gradient_penalty::make_model();
  const auto data = mlp_gradient_penalty::make_data();
  mlp_gradient_penalty::loss_with_penalty(*model, data).backward();
  const Tensor with_penalty = model->parameters()[0].grad().clone();
  model->zero_grad();
  ag::nn::functional::mse_loss(model->forward(data.x), data.y).backward();
  EXPECT_GT((with_penalty - model->parameters()[0].grad()).abs().amax().item(), 1e-3);
}

// The custom Function's value, first and second derivatives (double backward through its
// backward written with ops), as torch.nn.functional.softplus's.
TEST(Examples, CustomSoftplusMatchesTorch) {
  const nlohmann::json expected = fixture("softplus");
  const auto xs = expected.at("x").get<std::vector<double>>();
  const Tensor x = Tensor::from_vector(xs, {static_cast<int64_t>(xs.size())}, DType::Float64).requires_grad_();
  const Tensor y = custom_function::Softplus::apply(x);
  const Tensor d1 = grad({y.sum()}, {x}, {}, {.create_graph = true})[0];
  const Tensor d2 = grad({d1.sum()}, {x})[0];
  for (const auto& [name, got] : {std::pair{"value", y}, {"grad", d1}, {"grad2", d2}}) {
    const auto want = expected.at(name).get<std::vector<double>>();
    const auto have = got.to_double_vector();
    // torch returns x itself above its threshold 20 and log1p below: 1e-13 apart there.
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(have[i], want[i], 1e-12 * (1 + std::abs(want[i]))) << name << " at x = " << xs[i];
  }
}

TEST(Examples, CustomSoftplusPassesGradcheckToSecondOrder) {
  Generator gen(0);
  const Tensor x = (Tensor::randn({8}, DType::Float64, gen) * 3.0).detach().requires_grad_();
  const GradcheckFn f = [](const std::vector<Tensor>& in) { return custom_function::Softplus::apply(in[0]); };
  EXPECT_TRUE(gradcheck(f, {x}).passed());
  EXPECT_TRUE(gradgradcheck(f, {x}).passed());
}
