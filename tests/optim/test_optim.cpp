// ag::optim (SGD, Adam, AdamW, parameter groups, state dicts), the lr schedulers' rules, and
// nn::utils::clip_grad_*: what the torch fixtures (test_optim_parity.cpp) do not show.
#include <gtest/gtest.h>

#include "tests/test_util.h"

#include <cmath>
#include <set>

#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "nn/linear.h"
#include "nn/utils/clip_grad.h"
#include "optim/adam.h"
#include "optim/combined.h"
#include "optim/lr_scheduler.h"
#include "optim/muon.h"
#include "optim/sgd.h"

using namespace ag;
using namespace ag::testing_util;
namespace sch = ag::optim::lr_scheduler;

namespace {
Tensor f64(const std::vector<double>& v, Shape shape = {}) { return leaf(v, std::move(shape)); }
Tensor grad_of(const std::vector<double>& v, Shape shape = {}) {
  if (shape.empty()) shape = {static_cast<int64_t>(v.size())};
  return Tensor::from_vector(v, shape, DType::Float64);
}
}  // namespace

TEST(Optim, DefaultsAreTorchs) {
  const optim::SGDOptions sgd;
  EXPECT_EQ(sgd.lr, 1e-3);
  EXPECT_EQ(sgd.momentum, 0.0);
  EXPECT_EQ(sgd.dampening, 0.0);
  EXPECT_EQ(sgd.weight_decay, 0.0);
  EXPECT_FALSE(sgd.nesterov);
  const optim::AdamOptions adam;
  const optim::AdamWOptions adamw;
  EXPECT_EQ(adam.lr, 1e-3);
  EXPECT_EQ(adamw.lr, 1e-3);
  EXPECT_EQ(adam.betas, std::make_tuple(0.9, 0.999));
  EXPECT_EQ(adamw.betas, std::make_tuple(0.9, 0.999));
  EXPECT_EQ(adam.eps, 1e-8);
  EXPECT_EQ(adamw.eps, 1e-8);
  EXPECT_EQ(adam.weight_decay, 0.0);
  EXPECT_EQ(adamw.weight_decay, 1e-2);
  EXPECT_FALSE(adam.amsgrad || adamw.amsgrad);
}

// torch's AdamW decays every parameter of its group, vectors too (the old trainer's AdamW
// skipped 1-d parameters in silence); leaving them undecayed is a group with weight_decay 0.
TEST(Optim, AdamWDecaysEveryParameterOfItsGroup) {
  Tensor w = f64({1.0, -2.0, 0.5, 3.0}, {2, 2}), b = f64({0.5, -0.5});
  optim::AdamW opt({w, b}, {.lr = 0.1, .weight_decay = 0.5});
  w.set_grad(grad_of({0, 0, 0, 0}, {2, 2}));
  b.set_grad(grad_of({0, 0}));
  opt.step();  // zero gradients: only the decay moves the weights
  EXPECT_DOUBLE_EQ(b.at({0}), 0.5 * (1 - 0.1 * 0.5));
  EXPECT_DOUBLE_EQ(w.at({1, 1}), 3.0 * (1 - 0.1 * 0.5));

  Tensor b2 = f64({0.5, -0.5}), w2 = f64({1.0, -2.0, 0.5, 3.0}, {2, 2});
  optim::AdamW grouped(std::vector<optim::AdamW::ParamGroup>{{{w2}, {.lr = 0.1, .weight_decay = 0.5}},
                                                              {{b2}, {.lr = 0.1, .weight_decay = 0.0}}});
  w2.set_grad(grad_of({0, 0, 0, 0}, {2, 2}));
  b2.set_grad(grad_of({0, 0}));
  grouped.step();
  EXPECT_EQ(b2.at({0}), 0.5);
  EXPECT_DOUBLE_EQ(w2.at({1, 1}), 3.0 * (1 - 0.1 * 0.5));
}

TEST(Optim, ConstructedFromModuleParameters) {
  nn::Linear lin(3, 2, true, DType::Float64);
  optim::SGD sgd(lin.parameters(), {.lr = 0.1, .momentum = 0.9, .nesterov = true});
  optim::Adam adam(lin.parameters());
  optim::AdamW adamw(lin.parameters(), {.lr = 1e-2, .betas = {0.9, 0.95}});
  ASSERT_EQ(adamw.param_groups().size(), 1u);
  EXPECT_EQ(adamw.param_groups()[0].params.size(), 2u);
  EXPECT_EQ(std::get<1>(adamw.param_groups()[0].options.betas), 0.95);
  EXPECT_EQ(adamw.param_groups()[0].options.weight_decay, 1e-2);  // torch's default, not another group's
  EXPECT_EQ(sgd.parameters().size(), 2u);
  EXPECT_TRUE(sgd.parameters()[0].same(lin.weight));
}

TEST(Optim, BadArgumentsGetTorchsMessages) {
  Tensor w = f64({1, 2});
  expect_has(error_of<std::invalid_argument>([&] { optim::SGD(std::vector<Tensor>{w}, {.lr = -0.1}); }),
             {"SGD: Invalid learning rate: -0.1"});
  expect_has(error_of<std::invalid_argument>([&] { optim::SGD(std::vector<Tensor>{w}, {.momentum = 0.9, .dampening = 0.1, .nesterov = true}); }),
             {"Nesterov momentum requires a momentum and zero dampening"});
  expect_has(error_of<std::invalid_argument>([&] { optim::SGD(std::vector<Tensor>{w}, {.nesterov = true}); }),
             {"Nesterov momentum requires a momentum and zero dampening"});
  expect_has(error_of<std::invalid_argument>([&] { optim::Adam(std::vector<Tensor>{w}, {.betas = {1.0, 0.9}}); }),
             {"Adam: Invalid beta parameter at index 0: 1"});
  expect_has(error_of<std::invalid_argument>([&] { optim::AdamW(std::vector<Tensor>{w}, {.betas = {0.9, -0.5}}); }),
             {"AdamW: Invalid beta parameter at index 1: -0.5"});
  expect_has(error_of<std::invalid_argument>([&] { optim::AdamW(std::vector<Tensor>{w}, {.eps = -1e-8}); }),
             {"Invalid epsilon value: -1e-08"});
  expect_has(error_of<std::invalid_argument>([&] { optim::AdamW(std::vector<Tensor>{w}, {.weight_decay = -1}); }),
             {"Invalid weight_decay value: -1"});
  expect_has(error_of<std::invalid_argument>([&] { optim::AdamW(std::vector<Tensor>{}); }), {"empty parameter list"});
  expect_has(error_of<std::invalid_argument>([&] {
               optim::AdamW(std::vector<optim::AdamW::ParamGroup>{{{w}, {}}, {{w}, {}}});
             }),
             {"some parameters appear in more than one parameter group"});
  expect_has(error_of<std::invalid_argument>([&] { optim::SGD(std::vector<Tensor>{w, w}); }), {"holds parameter 0 twice"});
  Tensor y = mul(w, w);
  expect_has(error_of<std::invalid_argument>([&] { optim::SGD(std::vector<Tensor>{y}); }), {"can't optimize a non-leaf Tensor"});
  Tensor ids = Tensor::arange(3);
  expect_has(error_of<std::invalid_argument>([&] { optim::SGD(std::vector<Tensor>{ids}); }), {"contiguous float tensor"});
}

TEST(Optim, ZeroGradSetsToNoneOrZeroesInPlace) {
  Tensor w = f64({1, 2});
  optim::SGD opt({w}, {.lr = 0.1});
  w.set_grad(grad_of({3, 4}));
  const Tensor held = w.grad();
  opt.zero_grad(/*set_to_none=*/false);
  EXPECT_TRUE(w.grad().same(held));
  EXPECT_EQ(held.to_double_vector(), (std::vector<double>{0, 0}));
  opt.zero_grad();
  EXPECT_FALSE(w.grad().defined());
}

// A parameter without a .grad is skipped: not moved, and its state (and Adam's step count,
// which torch keeps per parameter) stays where it was.
TEST(Optim, ParameterWithoutGradientIsSkippedAndKeepsItsOwnStep) {
  Tensor a = f64({1, 2}), b = f64({3, 4});
  optim::AdamW opt({a, b}, {.lr = 0.1});
  a.set_grad(grad_of({1, 1}));
  opt.step();
  EXPECT_EQ(opt.state(b), nullptr);
  EXPECT_EQ(b.to_double_vector(), (std::vector<double>{3, 4}));
  b.set_grad(grad_of({1, 1}));
  opt.step();
  EXPECT_EQ(opt.state(a)->step, 2);
  EXPECT_EQ(opt.state(b)->step, 1);
}

// Options changed between steps take effect (the trainer sets each group's lr every step).
TEST(Optim, GroupOptionsCanChangeBetweenSteps) {
  Tensor w = f64({1});
  optim::SGD opt({w}, {.lr = 0.1});
  w.set_grad(grad_of({1}));
  opt.step();
  opt.param_groups()[0].options.lr = 0.5;
  opt.step();
  EXPECT_DOUBLE_EQ(w.item(), 1 - 0.1 - 0.5);
  opt.set_lr(0, 0.25);
  EXPECT_EQ(opt.get_lr(0), 0.25);
}

// state_dict() then load_state_dict() into a fresh optimizer over copies of the parameters:
// both continue with the same bits.
TEST(Optim, StateDictRoundTripContinuesExactly) {
  auto run = [](auto make, bool reload) {
    Generator g(3);
    std::vector<Tensor> p = {Tensor::randn({3, 4}, DType::Float64, g).requires_grad_(),
                             Tensor::randn({4}, DType::Float64, g).requires_grad_()};
    auto opt = make(p);
    auto grads = [&](int s) {
      Generator gg(100 + s);
      for (Tensor& t : p) t.set_grad(Tensor::randn(t.shape(), DType::Float64, gg));
    };
    for (int s = 0; s < 3; ++s) grads(s), opt->step();
    if (reload) {
      std::vector<Tensor> copies;
      for (const Tensor& t : p) copies.push_back(t.detach().clone().requires_grad_());
      auto fresh = make(copies);
      fresh->load_state_dict(opt->state_dict());
      p = copies;
      opt = std::move(fresh);
    }
    for (int s = 3; s < 5; ++s) grads(s), opt->step();
    std::vector<std::vector<double>> out;
    for (const Tensor& t : p) out.push_back(t.to_double_vector());
    return out;
  };
  auto adamw = [](const std::vector<Tensor>& p) {
    return std::make_unique<optim::AdamW>(std::vector<optim::AdamW::ParamGroup>{
        {{p[0]}, {.lr = 0.01, .weight_decay = 0.1, .amsgrad = true}}, {{p[1]}, {.lr = 0.02, .weight_decay = 0.0}}});
  };
  auto sgd = [](const std::vector<Tensor>& p) {
    return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .nesterov = true});
  };
  EXPECT_EQ(run(adamw, false), run(adamw, true));
  EXPECT_EQ(run(sgd, false), run(sgd, true));
}

TEST(Optim, StateDictHoldsTorchsKeysAndGroups) {
  Tensor a = f64({1, 2}), b = f64({3});
  optim::AdamW opt(std::vector<optim::AdamW::ParamGroup>{{{a}, {.lr = 0.01}}, {{b}, {.lr = 0.02, .weight_decay = 0}}});
  a.set_grad(grad_of({1, 1}));
  opt.step();
  const auto sd = opt.state_dict();
  ASSERT_EQ(sd.state.size(), 1u);  // b has no state yet
  std::set<std::string> keys;
  for (const auto& [k, _] : sd.state.at(0)) keys.insert(k);
  EXPECT_EQ(keys, (std::set<std::string>{"step", "exp_avg", "exp_avg_sq"}));
  EXPECT_EQ(sd.state.at(0).at("step").item(), 1);
  EXPECT_EQ(sd.state.at(0).at("step").dtype(), DType::Float32);  // as torch's
  ASSERT_EQ(sd.param_groups.size(), 2u);
  EXPECT_EQ(sd.param_groups[1].params, std::vector<int64_t>{1});
  // torch's param_groups keys, every option with its value.
  std::set<std::string> options;
  for (const auto& [k, _] : sd.param_groups[1].options) options.insert(k);
  EXPECT_EQ(options, (std::set<std::string>{"lr", "betas", "eps", "weight_decay", "amsgrad"}));
  EXPECT_EQ(std::get<double>(sd.param_groups[1].options.at("lr")), 0.02);
  EXPECT_EQ(std::get<std::vector<double>>(sd.param_groups[1].options.at("betas")), (std::vector<double>{0.9, 0.999}));
  EXPECT_EQ(std::get<bool>(sd.param_groups[1].options.at("amsgrad")), false);

  // Loading checks everything before it changes anything.
  optim::AdamW one({a, b});
  expect_has(error_of<std::invalid_argument>([&] { one.load_state_dict(sd); }), {"different number of parameter groups"});
  auto wrong = sd;
  wrong.param_groups[1].params = {1, 2};
  expect_has(error_of<std::invalid_argument>([&] { opt.load_state_dict(wrong); }), {"doesn't match the size of optimizer's group"});
  wrong = sd;
  wrong.state[0]["exp_avg"] = Tensor::zeros({3}, DType::Float64);
  expect_has(error_of<std::invalid_argument>([&] { opt.load_state_dict(wrong); }), {"'exp_avg' has shape [3] but its parameter [2]"});
  EXPECT_EQ(opt.state(a)->exp_avg.shape(), (Shape{2}));
  wrong = sd;
  wrong.state[0]["bogus"] = Tensor::zeros({2});
  expect_has(error_of<std::invalid_argument>([&] { opt.load_state_dict(wrong); }), {"unknown state 'bogus'"});
  wrong = sd;
  wrong.param_groups[1].options["momentum"] = 0.9;  // an option of another optimizer
  expect_has(error_of<std::invalid_argument>([&] { opt.load_state_dict(wrong); }), {"group 1: unknown option 'momentum'"});
  wrong = sd;
  wrong.param_groups[0].options["betas"] = std::vector<double>{0.9};
  expect_has(error_of<std::invalid_argument>([&] { opt.load_state_dict(wrong); }), {"option 'betas' must be 2 numbers"});
  wrong = sd;
  wrong.param_groups[0].options["amsgrad"] = 1.0;
  expect_has(error_of<std::invalid_argument>([&] { opt.load_state_dict(wrong); }), {"option 'amsgrad' has the wrong type"});
  wrong = sd;
  wrong.param_groups[0].options["lr"] = -1.0;
  expect_has(error_of<std::invalid_argument>([&] { opt.load_state_dict(wrong); }), {"Invalid learning rate: -1"});
  EXPECT_EQ(opt.get_lr(0), 0.01);  // nothing changed
  // A group saved before an option existed: that option keeps the optimizer's value.
  auto older = sd;
  older.param_groups[1].options.erase("amsgrad");
  older.param_groups[1].options["lr"] = int64_t{1};  // a whole number read back as an integer
  opt.load_state_dict(older);
  EXPECT_EQ(opt.param_groups()[1].options.amsgrad, false);
  EXPECT_EQ(opt.get_lr(1), 1.0);
}

// Code that knows only optim::Optimizer saves and restores any optimizer: the state dict of a
// CombinedOptimizer (AdamW and Muon, as the speedrun's) is the parts' joined, and loading it
// into a fresh one over copies continues with the same bits.
TEST(Optim, CombinedOptimizerSavesAndLoadsAsOne) {
  auto run = [](bool reload) {
    Generator g(11);
    std::vector<Tensor> p = {Tensor::randn({4, 3}, DType::Float32, g).requires_grad_(),
                             Tensor::randn({3}, DType::Float32, g).requires_grad_(),
                             Tensor::randn({5, 4}, DType::Float32, g).requires_grad_()};
    auto make = [](const std::vector<Tensor>& q) {
      std::vector<std::unique_ptr<optim::Optimizer>> parts;
      parts.push_back(std::make_unique<optim::AdamW>(std::vector<optim::AdamW::ParamGroup>{
          {{q[0]}, {.lr = 0.01}}, {{q[1]}, {.lr = 0.01, .weight_decay = 0.0}}}));
      parts.push_back(std::make_unique<optim::Muon>(std::vector<Tensor>{q[2]}, optim::MuonOptions{.lr = 0.05}));
      return std::make_unique<optim::CombinedOptimizer>(std::move(parts));
    };
    std::unique_ptr<optim::Optimizer> opt = make(p);
    auto grads = [&](int s) {
      Generator gg(200 + s);
      for (Tensor& t : p) t.set_grad(Tensor::randn(t.shape(), DType::Float32, gg));
    };
    for (int s = 0; s < 3; ++s) grads(s), opt->step();
    if (reload) {
      const optim::StateDict sd = opt->state_dict();
      EXPECT_EQ(sd.param_groups.size(), 3u);
      EXPECT_EQ(sd.param_groups[2].params, std::vector<int64_t>{2});  // Muon's parameter, numbered on
      EXPECT_TRUE(sd.state.at(2).count("momentum_buffer"));
      EXPECT_EQ(std::get<double>(sd.param_groups[2].options.at("momentum")), 0.95);
      std::vector<Tensor> copies;
      for (const Tensor& t : p) copies.push_back(t.detach().clone().requires_grad_());
      auto fresh = make(copies);
      fresh->load_state_dict(sd);
      p = copies;
      opt = std::move(fresh);
    }
    for (int s = 3; s < 5; ++s) grads(s), opt->step();
    std::vector<std::vector<double>> out;
    for (const Tensor& t : p) out.push_back(t.to_double_vector());
    return out;
  };
  EXPECT_EQ(run(false), run(true));
}

TEST(Optim, CombinedOptimizerRefusesWhatDoesNotFitAndChangesNothing) {
  Tensor a = f64({1, 2}), b = f64({1, 2, 3, 4}, {2, 2}), c = f64({1});
  std::vector<std::unique_ptr<optim::Optimizer>> twice;
  twice.push_back(std::make_unique<optim::SGD>(std::vector<Tensor>{a}));
  twice.push_back(std::make_unique<optim::SGD>(std::vector<Tensor>{a, c}));
  expect_has(error_of<std::invalid_argument>([&] { optim::CombinedOptimizer bad(std::move(twice)); }),
             {"more than one optimizer"});
  std::vector<std::unique_ptr<optim::Optimizer>> parts;
  parts.push_back(std::make_unique<optim::AdamW>(std::vector<Tensor>{a, c}, optim::AdamWOptions{.lr = 0.01}));
  parts.push_back(std::make_unique<optim::Muon>(std::vector<Tensor>{b}, optim::MuonOptions{.lr = 0.02}));
  optim::CombinedOptimizer opt(std::move(parts));
  EXPECT_EQ(opt.num_param_groups(), 2u);
  opt.set_lr(1, 0.5);
  EXPECT_EQ(opt.part(1).get_lr(0), 0.5);  // group 1 is Muon's group 0
  EXPECT_EQ(opt.get_lr(1), 0.5);
  for (Tensor& t : std::vector<Tensor>{a, b, c}) t.set_grad(Tensor::ones(t.shape(), DType::Float64));
  opt.step();
  const optim::StateDict sd = opt.state_dict();
  auto wrong = sd;
  wrong.param_groups.pop_back();
  expect_has(error_of<std::invalid_argument>([&] { opt.load_state_dict(wrong); }), {"different number of parameter groups"});
  wrong = sd;
  wrong.state[2]["momentum_buffer"] = Tensor::zeros({3}, DType::Float64);  // Muon's, of the wrong shape
  wrong.param_groups[0].options["lr"] = 0.125;                                 // AdamW's, which loads first
  expect_has(error_of<std::invalid_argument>([&] { opt.load_state_dict(wrong); }), {"'momentum_buffer' has shape [3]"});
  EXPECT_EQ(opt.get_lr(0), 0.01);  // AdamW went back to what it had
  wrong = sd;
  wrong.param_groups[1].params = {0};
  expect_has(error_of<std::invalid_argument>([&] { opt.load_state_dict(wrong); }), {"appears twice"});
}

// Adam and AdamW: the float32 pass runs all parameters as one flat range cut at fixed offsets,
// so a cut falls inside a parameter and between parameters, and groups of different options
// meet in one pass: every element must still get its own group's update, with the same bits on
// 1 and 2 threads and as one optimizer per parameter.
TEST(Optim, FlatParallelFloat32PassMatchesThePerParameterUpdate) {
  const std::vector<int64_t> sizes = {5, 40000, 17, 70001, 1};
  auto adam = [&](int threads, bool together) {
    const int saved = parallel::num_threads();
    parallel::set_num_threads(threads);
    Generator g(4);
    std::vector<Tensor> ps;
    for (int64_t n : sizes) ps.push_back(Tensor::randn({n}, DType::Float32, g).requires_grad_());
    auto options = [](size_t i) {  // alternating groups: different lr, decay, betas
      return i % 2 ? optim::AdamWOptions{.lr = 0.01, .betas = {0.9, 0.95}, .weight_decay = 0.1}
                   : optim::AdamWOptions{.lr = 0.02, .betas = {0.8, 0.99}, .weight_decay = 0.0};
    };
    std::vector<std::unique_ptr<optim::AdamW>> opts;
    if (together) {
      std::vector<optim::AdamW::ParamGroup> groups;
      for (size_t i = 0; i < ps.size(); ++i) groups.push_back({{ps[i]}, options(i)});
      opts.push_back(std::make_unique<optim::AdamW>(groups));
    } else {
      for (size_t i = 0; i < ps.size(); ++i) opts.push_back(std::make_unique<optim::AdamW>(std::vector<Tensor>{ps[i]}, options(i)));
    }
    for (int step = 0; step < 3; ++step) {
      Generator gg(20 + step);
      for (Tensor& p : ps) p.set_grad(Tensor::randn(p.shape(), DType::Float32, gg));
      for (auto& o : opts) o->step();
    }
    std::vector<std::vector<double>> out;
    for (const Tensor& p : ps) out.push_back(p.to_double_vector());
    parallel::set_num_threads(saved);
    return out;
  };
  const auto one = adam(1, true);
  EXPECT_EQ(one, adam(2, true));
  EXPECT_EQ(one, adam(2, false));
  EXPECT_EQ(one, adam(1, false));
}

// ---- clipping --------------------------------------------------------------------------------

TEST(ClipGrad, NormScalesToTheLimit) {
  Tensor a = Tensor::zeros({2}, DType::Float64).requires_grad_(), b = Tensor::zeros({1}, DType::Float64).requires_grad_();
  a.set_grad(grad_of({3, 0}));
  b.set_grad(grad_of({4}));
  const double n = nn::utils::clip_grad_norm_({a, b}, 1.0);
  EXPECT_DOUBLE_EQ(n, 5.0);
  EXPECT_NEAR(a.grad().at({0}), 3 / (5 + 1e-6), 1e-15);
  EXPECT_NEAR(b.grad().at({0}), 4 / (5 + 1e-6), 1e-15);
  EXPECT_DOUBLE_EQ(nn::utils::clip_grad_norm_({a, b}, 10.0), std::sqrt(9 + 16) / (5 + 1e-6));  // below: unchanged
  EXPECT_EQ(nn::utils::clip_grad_norm_({Tensor::zeros({2}).requires_grad_()}, 1.0), 0.0);  // no gradient at all
}

// The gradients are scaled in place, so a handle to a .grad sees it, a non-contiguous one too.
TEST(ClipGrad, ScalesTheGradientTensorsThemselves) {
  Tensor w = Tensor::zeros({2, 2}, DType::Float64).requires_grad_();
  w.set_grad(transpose(grad_of({30, 0, 40, 0}, {2, 2}), 0, 1));  // non-contiguous
  const Tensor held = w.grad();
  ASSERT_FALSE(held.is_contiguous());
  EXPECT_DOUBLE_EQ(nn::utils::clip_grad_norm_({w}, 5.0), 50.0);
  EXPECT_TRUE(w.grad().same(held));
  EXPECT_NEAR(held.at({0, 1}), 4.0, 1e-6);  // held is [[30, 40], [0, 0]] scaled by 5/50
  nn::utils::clip_grad_value_({w}, 3.5);
  EXPECT_TRUE(w.grad().same(held));
  EXPECT_EQ(held.at({0, 1}), 3.5);
  EXPECT_NEAR(held.at({0, 0}), 3.0, 1e-6);
  EXPECT_EQ(held.at({1, 0}), 0.0);
}

TEST(ClipGrad, NonFiniteNormScalesToNaNOrThrowsTorchsMessage) {
  Tensor w = Tensor::zeros({2}, DType::Float64).requires_grad_();
  w.set_grad(grad_of({NAN, 1}));
  EXPECT_TRUE(std::isnan(nn::utils::clip_grad_norm_({w}, 1.0)));
  EXPECT_TRUE(std::isnan(w.grad().at({1})));  // as torch: scaled by a NaN coefficient
  w.set_grad(grad_of({INFINITY, 1}));
  expect_has(error_of([&] { nn::utils::clip_grad_norm_({w}, 1.0, 2.0, /*error_if_nonfinite=*/true); }),
             {"The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be clipped"});
  EXPECT_EQ(w.grad().at({1}), 1.0);  // unchanged when it throws
}

// float32 clipping runs as one flat parallel pass: the same bits on 1 and 2 threads.
TEST(ClipGrad, FlatParallelFloat32ScalingIsThreadIndependent) {
  auto clipped = [](int threads) {
    const int saved = parallel::num_threads();
    parallel::set_num_threads(threads);
    Generator g(3);
    std::vector<Tensor> ps;
    for (int64_t n : {5, 40000, 17, 70001, 1}) ps.push_back(Tensor::randn({n}, DType::Float32, g).requires_grad_());
    std::vector<double> norms;
    for (int step = 0; step < 3; ++step) {
      Generator gg(10 + step);
      for (Tensor& p : ps) p.set_grad(Tensor::randn(p.shape(), DType::Float32, gg, 0.0, 3.0));
      norms.push_back(nn::utils::clip_grad_norm_(ps, 1.0));  // far above 1: every gradient is scaled
    }
    std::vector<std::vector<double>> out;
    for (const Tensor& p : ps) out.push_back(p.grad().to_double_vector());
    out.push_back(norms);
    parallel::set_num_threads(saved);
    return out;
  };
  EXPECT_EQ(clipped(1), clipped(2));
}

// ---- schedulers ------------------------------------------------------------------------------

// The first scheduler records each group's lr as initial_lr; a later one starts from it, not
// from the lr the first one has set (torch's setdefault).
TEST(LRScheduler, LaterSchedulersStartFromTheInitialLr) {
  Tensor w = f64({1});
  optim::SGD opt({w}, {.lr = 0.1});
  sch::LinearLR warm(opt, 0.5, 1.0, 4);
  EXPECT_DOUBLE_EQ(opt.get_lr(0), 0.05);
  EXPECT_EQ(opt.initial_lr(0), 0.1);
  sch::StepLR step(opt, 2, 0.5);
  EXPECT_EQ(step.base_lrs(), std::vector<double>{0.1});
  EXPECT_EQ(step.get_last_lr(), std::vector<double>{0.05});  // StepLR's epoch 0 keeps the current lr
}

// A LambdaLR made with last_epoch = k - 1 over restored initial_lrs sets epoch k's lrs, as
// torch's does when a run resumes its schedule; without initial_lrs it refuses with torch's text.
TEST(LRScheduler, LambdaLrResumesAtItsEpoch) {
  Tensor w = f64({1}), v = f64({1});
  optim::SGD opt({w}, {.lr = 0.1});
  sch::LambdaLR straight(opt, [](int64_t e) { return 1.0 / static_cast<double>(e + 1); });
  for (int k = 0; k < 4; ++k) straight.step();
  EXPECT_EQ(opt.get_lr(0), 0.1 * (1.0 / 5));
  optim::SGD resumed({v}, {.lr = 0.1 / 5});
  expect_has(error_of<std::invalid_argument>([&] { sch::LambdaLR(resumed, [](int64_t) { return 1.0; }, 3); }),
             {"param 'initial_lr' is not specified in param_groups[0] when resuming an optimizer"});
  resumed.initial_lr(0) = 0.1;  // as a loaded state dict holds it
  sch::LambdaLR again(resumed, [](int64_t e) { return 1.0 / static_cast<double>(e + 1); }, 3);
  EXPECT_EQ(again.last_epoch(), 4);
  EXPECT_EQ(resumed.get_lr(0), opt.get_lr(0));
  straight.step(), again.step();
  EXPECT_EQ(resumed.get_lr(0), opt.get_lr(0));
}

TEST(LRScheduler, BadArgumentsAreRefused) {
  Tensor w = f64({1}), v = f64({1});
  optim::SGD opt({w}, {.lr = 0.1}), other({v}, {.lr = 0.1});
  expect_has(error_of<std::invalid_argument>([&] { sch::StepLR(opt, 0); }), {"step_size must be positive"});
  expect_has(error_of<std::invalid_argument>([&] { sch::CosineAnnealingLR(opt, 0); }), {"T_max must be positive"});
  expect_has(error_of<std::invalid_argument>([&] { sch::LinearLR(opt, 0.0); }), {"Starting multiplicative factor"});
  expect_has(error_of<std::invalid_argument>([&] { sch::LambdaLR(opt, std::vector<sch::LambdaLR::Fn>{}); }),
             {"Expected 1 lr_lambdas, but got 0"});
  auto a = std::make_shared<sch::StepLR>(opt, 2), b = std::make_shared<sch::StepLR>(other, 2);
  expect_has(error_of<std::invalid_argument>([&] { sch::SequentialLR(opt, {a, b}, {3}); }), {"belong to the same optimizer"});
  expect_has(error_of<std::invalid_argument>([&] { sch::SequentialLR(opt, {a}, {3}); }),
             {"number of schedulers 1 and the number of milestones to be equal to 1"});
}
