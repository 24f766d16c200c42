// The optimizers, schedulers and gradient clipping against PyTorch, from the fixtures that
// tests/parity/make_nn_optim_fixtures.py wrote with torch (tests/parity/fixtures/nn_optim/;
// see that script for the contents). No torch is needed here. Each case below builds the same
// optimizer or scheduler as the script, under the same name.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "autograd/safetensors.h"
#include "nn/utils/clip_grad.h"
#include "optim/adam.h"
#include "optim/lr_scheduler.h"
#include "optim/sgd.h"

using namespace ag;
namespace sch = ag::optim::lr_scheduler;

namespace {
namespace fs = std::filesystem;
const fs::path kFixtures = fs::path(ATTOGRAD_SOURCE_DIR) / "tests/parity/fixtures/nn_optim";
constexpr int kSteps = 5;
constexpr size_t kParams = 3;

// Distance in units in the last place between two doubles of the same sign (0 when equal).
int64_t ulps(double a, double b) {
  if (a == b) return 0;
  if (std::signbit(a) != std::signbit(b) || !std::isfinite(a) || !std::isfinite(b)) return INT64_MAX;
  const auto ia = std::bit_cast<int64_t>(std::fabs(a)), ib = std::bit_cast<int64_t>(std::fabs(b));
  return ia > ib ? ia - ib : ib - ia;
}

int64_t max_ulps(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto va = a.to_double_vector(), vb = b.to_double_vector();
  int64_t worst = 0;
  for (size_t i = 0; i < va.size() && i < vb.size(); ++i) worst = std::max(worst, ulps(va[i], vb[i]));
  return worst;
}

using Params = std::vector<Tensor>;
using Make = std::function<std::unique_ptr<optim::Optimizer>(const Params&)>;

// The cases of make_nn_optim_fixtures.py, by name: the same optimizer, the same options.
const std::map<std::string, Make>& optimizer_cases() {
  static const std::map<std::string, Make> c = {
      {"sgd_defaults", [](const Params& p) { return std::make_unique<optim::SGD>(p); }},
      {"sgd_plain", [](const Params& p) { return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.1}); }},
      {"sgd_momentum",
       [](const Params& p) { return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.05, .momentum = 0.9}); }},
      {"sgd_dampening_weight_decay",
       [](const Params& p) {
         return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.3, .weight_decay = 0.01});
       }},
      {"sgd_nesterov_weight_decay",
       [](const Params& p) {
         return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.05, .momentum = 0.8, .weight_decay = 0.1, .nesterov = true});
       }},
      {"adam_defaults", [](const Params& p) { return std::make_unique<optim::Adam>(p); }},
      {"adam_weight_decay_amsgrad",
       [](const Params& p) {
         return std::make_unique<optim::Adam>(
             p, optim::AdamOptions{.lr = 0.01, .betas = {0.8, 0.95}, .eps = 1e-6, .weight_decay = 0.1, .amsgrad = true});
       }},
      {"adam_small_betas",
       [](const Params& p) { return std::make_unique<optim::Adam>(p, optim::AdamOptions{.lr = 0.02, .betas = {0.3, 0.5}}); }},
      {"adamw_defaults", [](const Params& p) { return std::make_unique<optim::AdamW>(p); }},
      {"adamw_groups",
       [](const Params& p) {
         return std::make_unique<optim::AdamW>(std::vector<optim::AdamW::ParamGroup>{
             {{p[0]}, {.lr = 0.02, .betas = {0.9, 0.95}, .weight_decay = 0.1}},
             {{p[1], p[2]}, {.lr = 0.01, .betas = {0.9, 0.95}, .weight_decay = 0.0}}});
       }},
      {"adamw_amsgrad_missing_grad",
       [](const Params& p) { return std::make_unique<optim::AdamW>(p, optim::AdamWOptions{.lr = 0.01, .amsgrad = true}); }},
      {"sgd_momentum_missing_grad",
       [](const Params& p) { return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.05, .momentum = 0.9}); }},
  };
  return c;
}

// The per-parameter state of any of the three, as torch's state_dict names it.
std::map<std::string, Tensor> state_of(optim::Optimizer& opt, const Tensor& p) {
  if (auto* sgd = dynamic_cast<optim::SGD*>(&opt)) {
    const auto* s = sgd->state(p);
    if (!s || !s->momentum_buffer.defined()) return {};
    return {{"momentum_buffer", s->momentum_buffer}};
  }
  const optim::AdamParamState* s = nullptr;
  if (auto* a = dynamic_cast<optim::Adam*>(&opt)) s = a->state(p);
  if (auto* a = dynamic_cast<optim::AdamW*>(&opt)) s = a->state(p);
  if (!s) return {};
  std::map<std::string, Tensor> m = {{"step", Tensor::scalar(static_cast<double>(s->step), DType::Float64)},
                                     {"exp_avg", s->exp_avg},
                                     {"exp_avg_sq", s->exp_avg_sq}};
  if (s->max_exp_avg_sq.defined()) m["max_exp_avg_sq"] = s->max_exp_avg_sq;
  return m;
}

// Runs a case's steps on the fixture's parameters and gradients, in dtype.
void run_case(const SafeTensorsFile& f, const Make& make, DType dtype, Params& params,
              std::unique_ptr<optim::Optimizer>& opt) {
  params.clear();
  for (size_t i = 0; i < kParams; ++i) params.push_back(f.get("param." + std::to_string(i)).to(dtype).requires_grad_());
  opt = make(params);
  for (int s = 0; s < kSteps; ++s) {
    opt->zero_grad();
    for (size_t i = 0; i < kParams; ++i) {
      const std::string key = "grad." + std::to_string(s) + "." + std::to_string(i);
      if (f.has(key)) params[i].set_grad(f.get(key).to(dtype));
    }
    opt->step();
  }
}

}  // namespace

// Every case the script wrote is one the test knows, and the other way round.
TEST(OptimParity, FixturesAndCasesAreTheSameList) {
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(kFixtures)) {
    const std::string n = e.path().filename().string();
    if (n.ends_with(".safetensors") && n != "clip.safetensors" && n != "modules.safetensors")
      files.insert(n.substr(0, n.size() - std::string(".safetensors").size()));
  }
  std::set<std::string> known;
  for (const auto& [name, _] : optimizer_cases()) known.insert(name);
  EXPECT_EQ(files, known);
}

// float64: every step's parameters and the final state within 2 ulp of torch's (equal, on the
// machine that made the fixtures: the updates are torch's operations, its fused multiply-adds
// included).
TEST(OptimParity, Float64UpdatesWithinTwoUlpOfTorch) {
  for (const auto& [name, make] : optimizer_cases()) {
    SCOPED_TRACE(name);
    const SafeTensorsFile f = SafeTensorsFile::load((kFixtures / (name + ".safetensors")).string());
    Params params;
    for (size_t i = 0; i < kParams; ++i) params.push_back(f.get("param." + std::to_string(i)).requires_grad_());
    auto opt = make(params);
    for (int s = 0; s < kSteps; ++s) {
      opt->zero_grad();
      for (size_t i = 0; i < kParams; ++i) {
        const std::string key = "grad." + std::to_string(s) + "." + std::to_string(i);
        if (f.has(key)) params[i].set_grad(f.get(key));
      }
      opt->step();
      for (size_t i = 0; i < kParams; ++i)
        EXPECT_LE(max_ulps(params[i], f.get("after." + std::to_string(s) + "." + std::to_string(i))), 2)
            << "step " << s << ", parameter " << i;
    }
    for (size_t i = 0; i < kParams; ++i) {
      const auto mine = state_of(*opt, params[i]);
      std::set<std::string> expected_keys;
      const std::string prefix = "state." + std::to_string(i) + ".";
      for (const auto& n : f.names())
        if (n.rfind(prefix, 0) == 0) expected_keys.insert(n.substr(prefix.size()));
      std::set<std::string> keys;
      for (const auto& [k, _] : mine) keys.insert(k);
      EXPECT_EQ(keys, expected_keys) << "parameter " << i;
      for (const auto& [k, v] : mine) {
        if (!expected_keys.count(k)) continue;
        const Tensor want = f.get(prefix + k);
        if (k == "step")
          EXPECT_EQ(v.item(), want.item()) << "parameter " << i;
        else
          EXPECT_LE(max_ulps(v, want), 2) << "parameter " << i << " " << k;
      }
    }
  }
}

// float32 parameters take the flat vectorised pass where they can (AdamW, Adam without weight
// decay): the same update to float32 rounding.
TEST(OptimParity, Float32UpdatesMatchTorchToFloatRounding) {
  for (const auto& [name, make] : optimizer_cases()) {
    SCOPED_TRACE(name);
    const SafeTensorsFile f = SafeTensorsFile::load((kFixtures / (name + ".safetensors")).string());
    Params params;
    std::unique_ptr<optim::Optimizer> opt;
    run_case(f, make, DType::Float32, params, opt);
    for (size_t i = 0; i < kParams; ++i) {
      const Tensor want = f.get("after." + std::to_string(kSteps - 1) + "." + std::to_string(i));
      const auto a = params[i].to_double_vector(), b = want.to_double_vector();
      for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], b[k], 1e-5 * (1 + std::fabs(b[k]))) << "parameter " << i;
    }
  }
}

TEST(OptimParity, ClipGradMatchesTorch) {
  const SafeTensorsFile f = SafeTensorsFile::load((kFixtures / "clip.safetensors").string());
  const std::map<std::string, std::function<std::optional<double>(const Params&)>> cases = {
      {"norm2_clips", [](const Params& p) { return nn::utils::clip_grad_norm_(p, 1.0); }},
      {"norm2_below", [](const Params& p) { return nn::utils::clip_grad_norm_(p, 100.0); }},
      {"norm_inf", [](const Params& p) { return nn::utils::clip_grad_norm_(p, 0.5, INFINITY); }},
      {"norm1", [](const Params& p) { return nn::utils::clip_grad_norm_(p, 2.0, 1.0); }},
      {"norm3", [](const Params& p) { return nn::utils::clip_grad_norm_(p, 2.0, 3.0); }},
      {"value",
       [](const Params& p) -> std::optional<double> {
         nn::utils::clip_grad_value_(p, 0.3);
         return std::nullopt;
       }},
  };
  std::set<std::string> in_file;
  for (const auto& n : f.names())
    if (n.rfind("grad.", 0) != 0) in_file.insert(n.substr(0, n.find('.')));
  std::set<std::string> known;
  for (const auto& [n, _] : cases) known.insert(n);
  EXPECT_EQ(in_file, known);
  for (const auto& [name, clip] : cases) {
    SCOPED_TRACE(name);
    Params params;
    for (size_t i = 0; i < kParams; ++i) {
      const Tensor g = f.get("grad." + std::to_string(i));
      params.push_back(Tensor::zeros(g.shape(), DType::Float64).requires_grad_());
      params.back().set_grad(g);
    }
    const std::optional<double> norm = clip(params);
    // torch adds per-parameter norms, attograd adds squares: the same to 2 ulp.
    if (norm) {
      EXPECT_LE(ulps(*norm, f.get(name + ".norm").item()), 2) << *norm;
    }
    for (size_t i = 0; i < kParams; ++i) EXPECT_LE(max_ulps(params[i].grad(), f.get(name + "." + std::to_string(i))), 2) << i;
  }
}

namespace {
using MakeScheduler = std::function<std::shared_ptr<sch::LRScheduler>(optim::Optimizer&)>;

// The scheduler cases of make_nn_optim_fixtures.py, by name.
const std::map<std::string, MakeScheduler>& scheduler_cases() {
  static const std::map<std::string, MakeScheduler> c = {
      {"step_lr", [](optim::Optimizer& o) { return std::make_shared<sch::StepLR>(o, 3, 0.5); }},
      {"step_lr_default_gamma", [](optim::Optimizer& o) { return std::make_shared<sch::StepLR>(o, 2); }},
      {"cosine", [](optim::Optimizer& o) { return std::make_shared<sch::CosineAnnealingLR>(o, 10, 0.001); }},
      {"cosine_zero_min", [](optim::Optimizer& o) { return std::make_shared<sch::CosineAnnealingLR>(o, 7); }},
      {"linear", [](optim::Optimizer& o) { return std::make_shared<sch::LinearLR>(o, 0.25, 1.0, 4); }},
      {"linear_defaults", [](optim::Optimizer& o) { return std::make_shared<sch::LinearLR>(o); }},
      {"linear_decay", [](optim::Optimizer& o) { return std::make_shared<sch::LinearLR>(o, 1.0, 0.1, 6); }},
      {"lambda",
       [](optim::Optimizer& o) {
         return std::make_shared<sch::LambdaLR>(o, [](int64_t e) { return std::pow(0.95, static_cast<double>(e)); });
       }},
      {"lambda_per_group",
       [](optim::Optimizer& o) {
         return std::make_shared<sch::LambdaLR>(
             o, std::vector<sch::LambdaLR::Fn>{[](int64_t e) { return 1.0 / static_cast<double>(e + 1); },
                                               [](int64_t e) { return std::pow(0.5, static_cast<double>(e)); }});
       }},
      {"sequential_warmup_cosine",
       [](optim::Optimizer& o) {
         auto warm = std::make_shared<sch::LinearLR>(o, 0.1, 1.0, 3);
         auto cos = std::make_shared<sch::CosineAnnealingLR>(o, 8, 1e-4);
         return std::make_shared<sch::SequentialLR>(o, std::vector<std::shared_ptr<sch::LRScheduler>>{warm, cos},
                                                    std::vector<int64_t>{3});
       }},
      {"sequential_three",
       [](optim::Optimizer& o) {
         auto a = std::make_shared<sch::LinearLR>(o, 0.5, 1.0, 2);
         auto b = std::make_shared<sch::StepLR>(o, 2, 0.5);
         auto c = std::make_shared<sch::LambdaLR>(o, [](int64_t e) { return 1.0 / static_cast<double>(e + 1); });
         return std::make_shared<sch::SequentialLR>(o, std::vector<std::shared_ptr<sch::LRScheduler>>{a, b, c},
                                                    std::vector<int64_t>{2, 6});
       }},
      {"sequential_cosine_then_step",
       [](optim::Optimizer& o) {
         auto a = std::make_shared<sch::CosineAnnealingLR>(o, 4, 0.001);
         auto b = std::make_shared<sch::StepLR>(o, 3, 0.1);
         return std::make_shared<sch::SequentialLR>(o, std::vector<std::shared_ptr<sch::LRScheduler>>{a, b},
                                                    std::vector<int64_t>{5});
       }},
  };
  return c;
}
}  // namespace

// Each group's lr after the construction and after every step: torch's, to the last bit.
TEST(OptimParity, SchedulersStepAsTorchsDo) {
  std::ifstream in(kFixtures / "schedulers.json");
  const nlohmann::json doc = nlohmann::json::parse(in);
  std::set<std::string> in_file, known;
  for (const auto& [name, _] : doc["cases"].items()) in_file.insert(name);
  for (const auto& [name, _] : scheduler_cases()) known.insert(name);
  EXPECT_EQ(in_file, known);
  for (const auto& [name, make] : scheduler_cases()) {
    SCOPED_TRACE(name);
    const auto& c = doc["cases"][name];
    Tensor w = Tensor::zeros({2}).requires_grad_(), b = Tensor::zeros({2}).requires_grad_();
    optim::SGD opt(std::vector<optim::SGD::ParamGroup>{{{w}, {.lr = 0.1}}, {{b}, {.lr = 0.02}}});
    auto sched = make(opt);
    const auto& lrs = c["lrs"];
    ASSERT_EQ(lrs.size(), c["steps"].get<size_t>() + 1);
    for (size_t s = 0; s < lrs.size(); ++s) {
      if (s > 0) {
        opt.step();
        sched->step();
      }
      EXPECT_EQ(lrs[s].get<std::vector<double>>(), (std::vector<double>{opt.get_lr(0), opt.get_lr(1)})) << "after step " << s;
      EXPECT_EQ(sched->get_last_lr(), (std::vector<double>{opt.get_lr(0), opt.get_lr(1)}));
    }
  }
}
