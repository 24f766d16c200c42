// SGD, Adam and AdamW and the API around them, on the cases of PyTorch's C++ frontend suite
// (test/cpp/api/optim.cpp): the option values, the XOR task and its loss threshold, the starting
// parameters and input of the exact trajectories, the learning rates a scheduler must give and
// the options a partial group must end with are upstream's facts; the checks are written here
// in attograd's terms. tests/upstream/README.md names the source of each file of this folder.
//
// The exact trajectories: upstream's expected values come from its optim_baseline.py; the same
// computation run by torch 2 is in tests/parity/fixtures/cpp_api2/optim.safetensors
// (tests/parity/make_cpp_api2_fixtures.py). A group's options are complete once the optimizer
// holds them (torch 2's rule), so a state_dict round trip carries them whole.
// Not covered: Adagrad, RMSprop, LBFGS and ReduceLROnPlateau (attograd does not have them),
// libtorch's deprecated interface and its warnings, a user class deriving libtorch's Optimizer
// with add_parameters()/size() (attograd's Optimizer is an interface over typed groups,
// docs/cpp_api.md), and a state that exists before the first step (Adagrad's).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "autograd/engine.h"
#include "autograd/safetensors.h"
#include "autograd/tensor_data.h"
#include "nn/functional.h"
#include "nn/functional_module.h"
#include "nn/linear.h"
#include "nn/sequential.h"
#include "optim/adam.h"
#include "optim/lr_scheduler.h"
#include "optim/sgd.h"
#include "tests/upstream/libtorch_port.h"

using namespace ag;
using namespace ag::optim;
using nn::Functional;
using nn::Linear;
using nn::Sequential;

namespace {

// Trains a 2-8-1 sigmoid network on XOR (batches of 200 random bit pairs, one step each) and
// says whether a running average of the loss falls below 0.1 within 3000 steps.
template <class Opt, class Options> bool learns_xor(Options options) {
  ag::manual_seed(0);
  Sequential net(Linear(2, 8), Functional(ag::sigmoid), Linear(8, 1), Functional(ag::sigmoid));
  Opt opt(net.parameters(), std::move(options));
  constexpr int64_t kBatch = 200;
  double smoothed = 1;
  for (int steps = 0; smoothed > 0.1; ++steps) {
    if (steps > 3000) {
      ADD_FAILURE() << "XOR loss still " << smoothed << " after " << steps << " steps";
      return false;
    }
    Tensor bits = Tensor::empty({kBatch, 2});
    Tensor target = Tensor::empty({kBatch});
    for (int64_t i = 0; i < kBatch; ++i) {
      bits[i] = Tensor::randint(0, 2, {2});
      target[i] = static_cast<double>(bits[i][0].item<int64_t>() ^ bits[i][1].item<int64_t>());
    }
    bits.requires_grad_(true);
    opt.zero_grad();
    Tensor loss = binary_cross_entropy(net.forward(bits), target);  // (200, 1) against (200), as ATen squeezes
    loss.backward();
    opt.step();
    smoothed = 0.99 * smoothed + 0.01 * loss.item<double>();
  }
  return true;
}

const SafeTensorsFile& trajectories() {
  static const SafeTensorsFile f = SafeTensorsFile::load(
      (std::filesystem::path(ATTOGRAD_SOURCE_DIR) / "tests/parity/fixtures/cpp_api2/optim.safetensors").string());
  return f;
}

// The 2-3-1 sigmoid network in float64 from fixed parameters, trained on one fixed input with
// loss = sum of the outputs, 1001 steps; after every 100th step its four parameters must match
// the fixture's `exact.<name>.<sample>.<parameter>` (rtol 1e-3, atol 5e-4).
template <class Opt, class Options> void follows_torchs_trajectory(const std::string& name, Options options) {
  ag::manual_seed(0);
  Sequential net(Linear(2, 3), Functional(ag::sigmoid), Linear(3, 1), Functional(ag::sigmoid));
  net.to(DType::Float64);
  const auto named = net.named_parameters();
  const std::map<std::string, std::vector<double>> start = {
      {"0.weight", {-0.2109, -0.4976, -0.1413, -0.3420, -0.2524, 0.6976}},
      {"0.bias", {-0.1085, -0.2979, 0.6892}},
      {"2.weight", {-0.0508, -0.3941, -0.2843}},
      {"2.bias", {-0.0711}}};
  {
    NoGradGuard no_grad;
    for (const auto& [key, values] : start) {
      Tensor p = named[key];
      p.reshape({-1}).copy_(ag::tensor(values, DType::Float64));
    }
  }
  const std::vector<Tensor> params = named.values();
  Opt opt(params, std::move(options));
  const Tensor x = ag::tensor({0.1, 0.2, 0.3, 0.4, 0.5, 0.6}, DType::Float64).reshape({3, 2});

  for (int step = 0; step <= 1000; ++step) {
    opt.zero_grad();
    Tensor loss = net.forward(x).sum();
    loss.backward();
    opt.step();
    if (step % 100 != 0) continue;
    for (size_t p = 0; p < params.size(); ++p) {
      const Tensor want = trajectories().get("exact." + name + "." + std::to_string(step / 100) + "." + std::to_string(p));
      const Tensor got = params[p].reshape({-1}).to(DType::Float64);
      ASSERT_TRUE(got.allclose(want.to(DType::Float64), /*rtol=*/1e-3, /*atol=*/5e-4))
          << name << ", step " << step << ", parameter " << p << ": " << got << " against " << want;
    }
  }
}

// Steps an optimizer and its scheduler, checking the first group's learning rate at the steps
// `want` names (to a double's epsilon).
void expect_lrs(Optimizer& opt, lr_scheduler::LRScheduler& sched, const std::map<unsigned, double>& want) {
  const unsigned last = want.rbegin()->first;
  for (unsigned step = 0; step <= last; ++step) {
    if (auto it = want.find(step); it != want.end()) {
      EXPECT_LT(std::fabs(opt.get_lr(0) - it->second), std::numeric_limits<double>::epsilon()) << "step " << step;
    }
    opt.step();
    sched.step();
  }
}

// Two leaves to put in two groups.
struct TwoLeaves {
  Tensor a = Tensor::randn({2, 2}).requires_grad_(true);
  Tensor b = Tensor::randn({3, 3}).requires_grad_(true);
};
}  // namespace

TEST(OptimCases, DefaultsAndGroupsAreReachableAndAParameterBelongsToOneGroup) {
  const SGDOptions options{.lr = 1.0};  // upstream's case uses Adagrad, which attograd lacks
  std::vector<Tensor> params;
  for (int i = 0; i < 3; ++i) params.push_back(Tensor::randn({10}));
  SGD opt(params, options);
  EXPECT_TRUE(opt.defaults() == options);

  auto& groups = opt.param_groups();  // writable: a group pushed here is the optimizer's
  groups.push_back({params, options});
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(ag::equal(opt.param_groups()[1].params[i], params[i]));

  ASSERT_THROWS_WITH(opt.add_param_group(params), "some parameters appear in more than one parameter group");

  const SGD& read_only = opt;  // and readable through a const optimizer
  (void)read_only.defaults();
  (void)read_only.param_groups();
}

TEST(OptimCases, SgdWithNesterovLearnsXor) {
  EXPECT_TRUE(learns_xor<SGD>(SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-6, .nesterov = true}));
}
TEST(OptimCases, AdamLearnsXor) { EXPECT_TRUE(learns_xor<Adam>(AdamOptions{.lr = 0.1, .weight_decay = 1e-6})); }
TEST(OptimCases, AdamWithAmsgradLearnsXor) {
  EXPECT_TRUE(learns_xor<Adam>(AdamOptions{.lr = 0.1, .weight_decay = 1e-6, .amsgrad = true}));
}
TEST(OptimCases, AdamWLearnsXor) { EXPECT_TRUE(learns_xor<AdamW>(AdamWOptions{.lr = 0.1})); }
TEST(OptimCases, AdamWWithAmsgradLearnsXor) { EXPECT_TRUE(learns_xor<AdamW>(AdamWOptions{.lr = 0.1, .amsgrad = true})); }

TEST(OptimCases, AdamFollowsTorch) { follows_torchs_trajectory<Adam>("Adam", AdamOptions{.lr = 1.0}); }
TEST(OptimCases, AdamWithWeightDecayFollowsTorch) {
  follows_torchs_trajectory<Adam>("Adam_with_weight_decay", AdamOptions{.lr = 1.0, .weight_decay = 1e-2});
}
TEST(OptimCases, AdamWithWeightDecayAndAmsgradFollowsTorch) {
  follows_torchs_trajectory<Adam>("Adam_with_weight_decay_and_amsgrad",
                                  AdamOptions{.lr = 1.0, .weight_decay = 1e-6, .amsgrad = true});
}
TEST(OptimCases, AdamWFollowsTorch) { follows_torchs_trajectory<AdamW>("AdamW", AdamWOptions{.lr = 1.0}); }
TEST(OptimCases, AdamWWithoutWeightDecayFollowsTorch) {
  follows_torchs_trajectory<AdamW>("AdamW_without_weight_decay", AdamWOptions{.lr = 1.0, .weight_decay = 0});
}
TEST(OptimCases, AdamWWithAmsgradFollowsTorch) {
  follows_torchs_trajectory<AdamW>("AdamW_with_amsgrad", AdamWOptions{.lr = 1.0, .amsgrad = true});
}
TEST(OptimCases, SgdFollowsTorch) { follows_torchs_trajectory<SGD>("SGD", SGDOptions{.lr = 0.1}); }
TEST(OptimCases, SgdWithWeightDecayFollowsTorch) {
  follows_torchs_trajectory<SGD>("SGD_with_weight_decay", SGDOptions{.lr = 0.1, .weight_decay = 1e-2});
}
TEST(OptimCases, SgdWithWeightDecayAndMomentumFollowsTorch) {
  follows_torchs_trajectory<SGD>("SGD_with_weight_decay_and_momentum",
                                 SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-2});
}
TEST(OptimCases, SgdWithWeightDecayAndNesterovFollowsTorch) {
  follows_torchs_trajectory<SGD>("SGD_with_weight_decay_and_nesterov_momentum",
                                 SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-6, .nesterov = true});
}

TEST(OptimCases, ZeroGradLeavesEveryGradientUndefined) {
  ag::manual_seed(0);
  Linear layer(2, 8);
  SGD opt(layer.parameters(), {.lr = 0.1});
  for (const Tensor& p : layer.parameters()) EXPECT_FALSE(p.grad().defined());
  Tensor loss = layer.forward(Tensor::ones({5, 2})).sum();
  loss.backward();
  for (const Tensor& p : layer.parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_GT(p.grad().sum().item<float>(), 0);
  }
  opt.zero_grad();
  for (const Tensor& p : layer.parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(OptimCases, AStepUpdatesTensorsGivenAsAPlainVector) {
  ag::manual_seed(0);
  std::vector<Tensor> params = {Tensor::randn({2, 2}), Tensor::randn({3, 3}), Tensor::randn({4, 4})};
  std::vector<Tensor> before;
  for (Tensor& p : params) {
    before.push_back(p.clone());
    p.set_grad(Tensor::ones(p.shape()));
  }
  SGD opt(params, {.lr = 1.0});
  opt.step();
  for (size_t i = 0; i < params.size(); ++i) EXPECT_TRUE(params[i].allclose(before[i] - 1.0)) << "tensor " << i;
}

TEST(OptimCases, StepLRHalvesAdamsRateAfterTwentySteps) {
  Tensor w = Tensor::zeros({1});
  Adam opt({w}, {.lr = 1e-3});
  lr_scheduler::StepLR sched(opt, /*step_size=*/20, /*gamma=*/0.5);
  expect_lrs(opt, sched, {{1, 1e-3}, {25, 5e-4}});
}

// A group given in part takes the rest of its options from the optimizer's defaults.
TEST(OptimCases, AdamGroupsGivenInPartTakeTheRestFromTheDefaults) {
  TwoLeaves t;
  const AdamOptions d{.lr = 0.002, .betas = std::make_tuple(0.8, 0.88), .eps = 1e-12, .weight_decay = 0.05, .amsgrad = true};
  Adam opt(std::vector<Adam::PartialParamGroup>{{{t.a}, {.weight_decay = 0.11}}, {{t.b}, {.eps = 1e-6}}}, d);
  const auto& g0 = opt.param_groups()[0].options;
  EXPECT_EQ(g0.lr, 0.002);
  EXPECT_EQ(g0.betas, std::make_tuple(0.8, 0.88));
  EXPECT_EQ(g0.eps, 1e-12);
  EXPECT_EQ(g0.weight_decay, 0.11);  // given
  EXPECT_TRUE(g0.amsgrad);
  const auto& g1 = opt.param_groups()[1].options;
  EXPECT_EQ(g1.lr, 0.002);
  EXPECT_EQ(g1.betas, std::make_tuple(0.8, 0.88));
  EXPECT_EQ(g1.eps, 1e-6);  // given
  EXPECT_EQ(g1.weight_decay, 0.05);
  EXPECT_TRUE(g1.amsgrad);
}

TEST(OptimCases, SgdGroupsGivenInPartTakeTheRestFromTheDefaults) {
  TwoLeaves t;
  const SGDOptions d{.lr = 0.001, .momentum = 0.9, .dampening = 0.0, .weight_decay = 0.05, .nesterov = true};
  SGD opt(std::vector<SGD::PartialParamGroup>{{{t.a}, {.lr = 0.01, .weight_decay = 0.22}}, {{t.b}, {.lr = 0.02}}}, d);
  const auto& g0 = opt.param_groups()[0].options;
  EXPECT_EQ(g0.lr, 0.01);  // given
  EXPECT_EQ(g0.momentum, 0.9);
  EXPECT_EQ(g0.dampening, 0.0);
  EXPECT_EQ(g0.weight_decay, 0.22);  // given
  EXPECT_TRUE(g0.nesterov);
  const auto& g1 = opt.param_groups()[1].options;
  EXPECT_EQ(g1.lr, 0.02);  // given
  EXPECT_EQ(g1.momentum, 0.9);
  EXPECT_EQ(g1.dampening, 0.0);
  EXPECT_EQ(g1.weight_decay, 0.05);
  EXPECT_TRUE(g1.nesterov);
}

TEST(OptimCases, AdamWGroupsGivenInPartTakeTheRestFromTheDefaults) {
  TwoLeaves t;
  const AdamWOptions d{.lr = 0.003, .betas = std::make_tuple(0.9, 0.98), .eps = 1e-8, .weight_decay = 0.02, .amsgrad = false};
  AdamW opt(std::vector<AdamW::PartialParamGroup>{{{t.a}, {.eps = 1e-6}}, {{t.b}, {.betas = std::make_tuple(0.95, 0.999)}}}, d);
  const auto& g0 = opt.param_groups()[0].options;
  EXPECT_EQ(g0.lr, 0.003);
  EXPECT_EQ(g0.betas, std::make_tuple(0.9, 0.98));
  EXPECT_EQ(g0.eps, 1e-6);  // given
  EXPECT_EQ(g0.weight_decay, 0.02);
  EXPECT_FALSE(g0.amsgrad);
  const auto& g1 = opt.param_groups()[1].options;
  EXPECT_EQ(g1.lr, 0.003);
  EXPECT_EQ(g1.betas, std::make_tuple(0.95, 0.999));  // given
  EXPECT_EQ(g1.eps, 1e-8);
  EXPECT_EQ(g1.weight_decay, 0.02);
  EXPECT_FALSE(g1.amsgrad);
}

TEST(OptimCases, GroupsGivenNoOptionsTakeAllTheDefaults) {
  TwoLeaves t;
  const AdamOptions d{.lr = 0.005, .betas = std::make_tuple(0.85, 0.95), .eps = 1e-7, .weight_decay = 0.08, .amsgrad = true};
  Adam opt(std::vector<Adam::PartialParamGroup>{{{t.a}, {}}, {{t.b}, {}}}, d);
  for (const auto& g : opt.param_groups()) {
    EXPECT_EQ(g.options.lr, 0.005);
    EXPECT_EQ(g.options.betas, std::make_tuple(0.85, 0.95));
    EXPECT_EQ(g.options.eps, 1e-7);
    EXPECT_EQ(g.options.weight_decay, 0.08);
    EXPECT_TRUE(g.options.amsgrad);
  }
}

// Options given and options taken from the defaults both survive a state_dict round trip.
TEST(OptimCases, AdamGroupOptionsSurviveAStateDictRoundTrip) {
  TwoLeaves t;
  const AdamOptions d{.lr = 0.002, .betas = std::make_tuple(0.8, 0.88), .eps = 1e-12, .weight_decay = 0.05, .amsgrad = false};
  Adam source(std::vector<Adam::PartialParamGroup>{{{t.a}, {.weight_decay = 0.11, .amsgrad = true}}, {{t.b}, {.eps = 1e-6}}}, d);
  EXPECT_NEAR(source.param_groups()[0].options.weight_decay, 0.11, 1e-6);
  EXPECT_TRUE(source.param_groups()[0].options.amsgrad);
  EXPECT_NEAR(source.param_groups()[0].options.lr, 0.002, 1e-6);
  EXPECT_NEAR(source.param_groups()[1].options.eps, 1e-6, 1e-9);
  EXPECT_NEAR(source.param_groups()[1].options.lr, 0.002, 1e-6);

  TwoLeaves u;
  Adam loaded(std::vector<Adam::PartialParamGroup>{{{u.a}, {}}, {{u.b}, {}}}, d);
  loaded.load_state_dict(source.state_dict());
  const auto& g0 = loaded.param_groups()[0].options;
  EXPECT_NEAR(g0.lr, 0.002, 1e-6);
  EXPECT_EQ(g0.betas, std::make_tuple(0.8, 0.88));
  EXPECT_NEAR(g0.eps, 1e-12, 1e-15);
  EXPECT_NEAR(g0.weight_decay, 0.11, 1e-6);  // given
  EXPECT_TRUE(g0.amsgrad);                   // given
  const auto& g1 = loaded.param_groups()[1].options;
  EXPECT_NEAR(g1.lr, 0.002, 1e-6);
  EXPECT_EQ(g1.betas, std::make_tuple(0.8, 0.88));
  EXPECT_NEAR(g1.eps, 1e-6, 1e-9);  // given
  EXPECT_NEAR(g1.weight_decay, 0.05, 1e-6);
  EXPECT_FALSE(g1.amsgrad);
}

TEST(OptimCases, SgdGroupOptionsSurviveAStateDictRoundTrip) {
  const SGDOptions d{.lr = 0.001, .momentum = 0.9, .dampening = 0.0, .weight_decay = 0.05, .nesterov = false};
  Tensor a = Tensor::randn({2, 2}).requires_grad_(true);
  SGD source(std::vector<SGD::PartialParamGroup>{{{a}, {.lr = 0.01, .weight_decay = 0.22, .nesterov = true}}}, d);
  Tensor b = Tensor::randn({2, 2}).requires_grad_(true);
  SGD loaded(std::vector<SGD::PartialParamGroup>{{{b}, {}}}, d);
  loaded.load_state_dict(source.state_dict());
  const auto& g = loaded.param_groups()[0].options;
  EXPECT_NEAR(g.lr, 0.01, 1e-6);            // given
  EXPECT_NEAR(g.weight_decay, 0.22, 1e-6);  // given
  EXPECT_TRUE(g.nesterov);                  // given
  EXPECT_NEAR(g.momentum, 0.9, 1e-6);
  EXPECT_NEAR(g.dampening, 0.0, 1e-6);
}
