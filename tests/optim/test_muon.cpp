// optim::Muon against torch.optim.Muon, from the fixtures tests/parity/make_muon_fixtures.py
// wrote (tests/parity/fixtures/muon/; no torch needed here), and its own promises: the
// parameter checks, torch's messages, and a state_dict that resumes to the same bits.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "autograd/ops.h"
#include "autograd/safetensors.h"
#include "optim/muon.h"

using namespace ag;

namespace {
namespace fs = std::filesystem;
const fs::path kFixtures = fs::path(ATTOGRAD_SOURCE_DIR) / "tests/parity/fixtures/muon";
constexpr int kSteps = 5;
constexpr size_t kParams = 3;

using Params = std::vector<Tensor>;
using Make = std::function<std::unique_ptr<optim::Muon>(const Params&)>;

// The float64 cases of make_muon_fixtures.py, by name: the same options.
const std::map<std::string, Make>& cases() {
  static const std::map<std::string, Make> c = {
      {"defaults", [](const Params& p) { return std::make_unique<optim::Muon>(p); }},
      {"speedrun",
       [](const Params& p) {
         return std::make_unique<optim::Muon>(p, optim::MuonOptions{.lr = 0.02, .weight_decay = 0.0, .momentum = 0.95});
       }},
      {"no_nesterov_match_rms",
       [](const Params& p) {
         return std::make_unique<optim::Muon>(p, optim::MuonOptions{.lr = 0.01, .weight_decay = 0.05, .momentum = 0.9,
                                                                    .nesterov = false, .adjust_lr_fn = "match_rms_adamw"});
       }},
      {"spectral_three_steps",
       [](const Params& p) {
         return std::make_unique<optim::Muon>(
             p, optim::MuonOptions{.lr = 0.03, .momentum = 0.5, .ns_steps = 3, .adjust_lr_fn = "spectral_unclamped"});
       }},
      {"groups",
       [](const Params& p) {
         return std::make_unique<optim::Muon>(std::vector<optim::Muon::ParamGroup>{
             {{p[0], p[1]}, {.lr = 0.02}}, {{p[2]}, {.lr = 0.005, .weight_decay = 0.0}}});
       }},
  };
  return c;
}

Params load_params(const SafeTensorsFile& f, DType dtype) {
  Params params;
  for (size_t i = 0; i < kParams; ++i) params.push_back(f.get("param." + std::to_string(i)).to(dtype).requires_grad_());
  return params;
}

void feed_grads(const SafeTensorsFile& f, int s, Params& params, DType dtype) {
  for (size_t i = 0; i < kParams; ++i) params[i].set_grad(f.get("grad." + std::to_string(s) + "." + std::to_string(i)).to(dtype));
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto va = a.to_double_vector(), vb = b.to_double_vector();
  double worst = 0;
  for (size_t i = 0; i < va.size() && i < vb.size(); ++i) worst = std::max(worst, std::fabs(va[i] - vb[i]));
  return worst;
}

std::string key(const char* what, int s, size_t i) { return std::string(what) + "." + std::to_string(s) + "." + std::to_string(i); }
}  // namespace

TEST(MuonParity, FixturesAndCasesAreTheSameList) {
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(kFixtures))
    if (e.path().extension() == ".safetensors") files.insert(e.path().stem().string());
  std::set<std::string> names = {"torch_bf16"};
  for (const auto& [name, make] : cases()) names.insert(name);
  EXPECT_EQ(files, names) << "tests/parity/make_muon_fixtures.py and this file list different cases";
}

// torch's iteration kept in float64 (the fixture script's only change): the same update up to the
// GEMMs' summation order, step after step.
TEST(MuonParity, Float64UpdatesMatchTorch) {
  for (const auto& [name, make] : cases()) {
    SCOPED_TRACE(name);
    const SafeTensorsFile f = SafeTensorsFile::load((kFixtures / (name + ".safetensors")).string());
    Params params = load_params(f, DType::Float64);
    auto opt = make(params);
    for (int s = 0; s < kSteps; ++s) {
      feed_grads(f, s, params, DType::Float64);
      opt->step();
      for (size_t i = 0; i < kParams; ++i) EXPECT_LE(max_abs_diff(params[i], f.get(key("after", s, i))), 1e-13) << key("after", s, i);
    }
    for (size_t i = 0; i < kParams; ++i)
      EXPECT_EQ(max_abs_diff(opt->state(params[i])->momentum_buffer, f.get("state." + std::to_string(i) + ".momentum_buffer")), 0.0)
          << "the momentum buffer is element-wise: the same bits";
  }
}

// torch.optim.Muon itself orthogonalises in bfloat16: a float32 update in float32 agrees with it
// to bfloat16's rounding (8 bits of mantissa, through five iterations), not better.
TEST(MuonParity, Float32AgreesWithTorchsBfloat16Iteration) {
  const SafeTensorsFile f = SafeTensorsFile::load((kFixtures / "torch_bf16.safetensors").string());
  Params params = load_params(f, DType::Float32);
  optim::Muon opt(params, {.lr = 0.02});
  for (int s = 0; s < kSteps; ++s) {
    std::vector<Tensor> before;
    for (const auto& p : params) before.push_back(p.detach().clone());
    feed_grads(f, s, params, DType::Float32);
    opt.step();
    for (size_t i = 0; i < kParams; ++i) {
      const Tensor torch_before = s == 0 ? f.get("param." + std::to_string(i)) : f.get(key("after", s - 1, i));
      const Tensor ours = sub(params[i].detach(), before[i]).to(DType::Float64);
      const Tensor theirs = sub(f.get(key("after", s, i)), torch_before).to(DType::Float64);
      const double rel = std::sqrt(sum(mul(sub(ours, theirs), sub(ours, theirs))).item() / sum(mul(theirs, theirs)).item());
      EXPECT_LT(rel, 0.05) << key("step", s, i) << ": the update differs by " << rel << " of its norm";
    }
  }
}

TEST(Muon, ZeropowerOfATallMatrixIsTheTransposeOfItsTransposes) {
  Generator gen(11);
  const Tensor u = Tensor::randn({7, 3}, DType::Float64, gen);
  const Tensor tall = optim::zeropower_via_newtonschulz(u);
  const Tensor wide = optim::zeropower_via_newtonschulz(transpose(u, 0, 1).contiguous());
  EXPECT_EQ(tall.shape(), (Shape{7, 3}));
  EXPECT_LE(max_abs_diff(tall, transpose(wide, 0, 1)), 1e-15);
  // Five iterations leave the singular values between about 0.7 and 1.2 (not exactly 1): the
  // diagonal of OᵀO (3, 3) sums the squares of each column's part along them.
  const Tensor gram = matmul(transpose(tall, 0, 1), tall);
  for (int64_t j = 0; j < 3; ++j) {
    EXPECT_GT(gram.at({j, j}), 0.4);
    EXPECT_LT(gram.at({j, j}), 1.5);
  }
}

TEST(Muon, StateDictResumesToTheSameBits) {
  Generator gen(5);
  const Shape shapes[] = {{6, 4}, {3, 8}};
  auto fresh = [&] {
    Generator g(1);
    Params p;
    for (const auto& s : shapes) p.push_back(Tensor::randn(s, DType::Float32, g).requires_grad_());
    return p;
  };
  std::vector<std::vector<Tensor>> grads;
  for (int s = 0; s < 6; ++s) {
    grads.emplace_back();
    for (const auto& sh : shapes) grads.back().push_back(Tensor::randn(sh, DType::Float32, gen));
  }
  auto run = [&](optim::Muon& opt, Params& p, int from, int to) {
    for (int s = from; s < to; ++s) {
      for (size_t i = 0; i < p.size(); ++i) p[i].set_grad(grads[s][i]);
      opt.step();
    }
  };
  Params a = fresh();
  optim::Muon straight(a, {.lr = 0.02});
  run(straight, a, 0, 6);

  Params b = fresh();
  optim::Muon first(b, {.lr = 0.02});
  run(first, b, 0, 3);
  const auto sd = first.state_dict();
  Params c;
  for (const auto& t : b) c.push_back(t.detach().clone().requires_grad_());
  optim::Muon second(c, {.lr = 0.5});  // the loaded options replace these
  second.load_state_dict(sd);
  run(second, c, 3, 6);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].to_double_vector(), c[i].to_double_vector());
}

TEST(Muon, RejectsWhatTorchRejects) {
  Tensor m = Tensor::zeros({2, 3}).requires_grad_(), v = Tensor::zeros({3}).requires_grad_();
  v.set_name("ln.weight");
  try {
    optim::Muon opt({m, v});
    FAIL() << "a 1-d parameter was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "Muon: Muon only supports 2D parameters whereas we found a parameter with size: [3] (ln.weight)");
  }
  EXPECT_THROW(optim::Muon({m}, {.lr = -1}), std::invalid_argument);
  EXPECT_THROW(optim::Muon({m}, {.momentum = -0.1}), std::invalid_argument);
  EXPECT_THROW(optim::Muon({m}, {.weight_decay = -0.1}), std::invalid_argument);
  EXPECT_THROW(optim::Muon({m}, {.ns_steps = 100}), std::invalid_argument);
  try {
    optim::Muon opt({m}, {.adjust_lr_fn = "bogus"});
    FAIL() << "an unknown adjust_lr_fn was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "Muon: Adjust learning rate function bogus is not supported");
  }
}

TEST(Muon, AdjustedLearningRates) {
  EXPECT_DOUBLE_EQ(optim::muon_adjusted_lr(0.02, "", 512, 128), 0.04);          // √(512/128) = 2
  EXPECT_DOUBLE_EQ(optim::muon_adjusted_lr(0.02, "original", 128, 512), 0.02);  // never below 1
  EXPECT_DOUBLE_EQ(optim::muon_adjusted_lr(0.02, "spectral_unclamped", 128, 512), 0.01);
  EXPECT_DOUBLE_EQ(optim::muon_adjusted_lr(0.02, "match_rms_adamw", 100, 64), 0.02 * 0.2 * 10);
}
