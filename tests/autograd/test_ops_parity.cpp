// The new ops against PyTorch (float64): values, first-order gradients and Hessian-vector
// products, from the fixtures that tests/parity/make_ops_fixtures.py wrote with torch
// (tests/parity/fixtures/ops/<case>.safetensors; see that script for the contents). No torch
// is needed here. Each case below is called exactly as the script calls torch; issue 21's ops
// are called through the Tensor methods where torch's case uses one, and the losses with their
// options structs, so that both spellings are checked.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/safetensors.h"
#include "nn/functional.h"

using namespace ag;

namespace {
namespace fs = std::filesystem;
using V = const std::vector<Tensor>&;
using Extra = std::map<std::string, Tensor>;  // every tensor of the case's file
using CaseFn = std::function<Tensor(V, const Extra&)>;
using AuxFn = std::function<Extra(V)>;  // extra results, compared with the file's expected.<name>
namespace F = ag::nn::functional;

const fs::path kFixtures = fs::path(ATTOGRAD_SOURCE_DIR) / "tests/parity/fixtures/ops";

// The cases of make_ops_fixtures.py, by name. `ex` holds the integer and bool tensors.
const std::map<std::string, CaseFn>& cases() {
  static const std::map<std::string, CaseFn> c = {
      {"abs_at_zero", [](V x, const Extra&) { return abs(x[0]); }},
      {"sigmoid", [](V x, const Extra&) { return sigmoid(x[0]); }},
      {"silu", [](V x, const Extra&) { return silu(x[0]); }},
      {"where_broadcast", [](V x, const Extra& ex) { return where(ex.at("cond"), x[0], x[1]) * x[0]; }},
      {"gather_dim1", [](V x, const Extra& ex) { return pow(gather(x[0], 1, ex.at("index")), 2.0); }},
      {"gather_dim0_repeats", [](V x, const Extra& ex) { return pow(gather(x[0], 0, ex.at("index")), 2.0); }},
      {"scatter_add_dim0", [](V x, const Extra& ex) { return pow(scatter_add(x[0], 0, ex.at("index"), x[1]), 2.0); }},
      {"stack_dim1",
       [](V x, const Extra&) {
         return stack({x[0], x[1] * x[0], x[1]}, 1);
       }},
      {"maximum_ties", [](V x, const Extra&) { return pow(maximum(x[0], x[1]), 2.0); }},
      {"minimum_ties", [](V x, const Extra&) { return pow(minimum(x[0], x[1]), 2.0); }},
      {"clamp_at_bounds", [](V x, const Extra&) { return pow(clamp(x[0], -0.5, 0.7), 2.0); }},
      {"clamp_min_only", [](V x, const Extra&) { return clamp(x[0], 0.1, std::nullopt) * x[0]; }},
      {"var_all", [](V x, const Extra&) { return var(x[0]); }},
      {"var_dim1_correction0_keepdim", [](V x, const Extra&) { return var(x[0], {1}, 0.0, true); }},
      {"var_dims02",
       [](V x, const Extra&) {
         return var(x[0], {0, 2});
       }},
      {"logsumexp_dim1_large", [](V x, const Extra&) { return logsumexp(x[0], {1}); }},
      {"logsumexp_dims02_keepdim",
       [](V x, const Extra&) {
         return logsumexp(x[0], {0, 2}, true);
       }},
      {"softmax_dim0", [](V x, const Extra&) { return softmax(x[0], 0); }},
      {"log_softmax_dim1", [](V x, const Extra&) { return log_softmax(x[0], 1); }},
      {"matmul_dot", [](V x, const Extra&) { return matmul(x[0], x[1]); }},
      {"matmul_vec_mat", [](V x, const Extra&) { return matmul(x[0], x[1]); }},
      {"matmul_mat_vec", [](V x, const Extra&) { return matmul(x[0], x[1]); }},
      {"matmul_batched_vec", [](V x, const Extra&) { return matmul(x[0], x[1]); }},
      {"matmul_vec_batched", [](V x, const Extra&) { return matmul(x[0], x[1]); }},
      {"max_dim1_ties", [](V x, const Extra&) { return pow(max(x[0], 1), 2.0); }},
      {"min_dim0_keepdim", [](V x, const Extra&) { return pow(min(x[0], 0, true), 3.0); }},
      {"pow_zero_at_zero", [](V x, const Extra&) { return pow(x[0], 0.0) + pow(x[0], 2.0); }},
      // ---- issue 21: new ops, as Tensor methods ----
      {"sin", [](V x, const Extra&) { return x[0].sin(); }},
      {"cos", [](V x, const Extra&) { return ag::cos(x[0]); }},
      {"amax_dims02_ties", [](V x, const Extra&) { return x[0].amax({0, 2}).pow(2.0); }},
      {"amin_dim1_keepdim_ties", [](V x, const Extra&) { return x[0].amin({1}, true).pow(3.0); }},
      {"amax_all", [](V x, const Extra&) { return x[0].amax() * x[0]; }},
      {"max_all_ties", [](V x, const Extra&) { return x[0].max().pow(2.0); }},
      {"min_all", [](V x, const Extra&) { return x[0].min().pow(2.0); }},
      {"max_dim1_pair", [](V x, const Extra&) { return std::get<0>(x[0].max(1)) * 2.0; }},
      {"min_dim0_keepdim_pair", [](V x, const Extra&) { return std::get<0>(x[0].min(0, true)).pow(2.0); }},
      {"norm_all", [](V x, const Extra&) { return x[0].norm(); }},
      {"norm_dim1_keepdim", [](V x, const Extra&) { return x[0].norm(2, {1}, true) * x[0]; }},
      {"norm_dims02", [](V x, const Extra&) { return x[0].norm(2, {0, 2}).pow(2.0); }},
      {"norm_zero_row", [](V x, const Extra&) { return x[0].norm(2, {1}); }},
      {"flip_dims02", [](V x, const Extra&) { return x[0].flip({0, 2}) * x[0]; }},
      {"chunk_7_into_3",
       [](V x, const Extra&) {
         std::vector<Tensor> parts;
         for (const Tensor& c : x[0].chunk(3, 1)) parts.push_back(c * static_cast<double>(parts.size() + 1));
         return concat(parts, 1).pow(2.0);
       }},
      {"chunk_6_into_4_gives_3", [](V x, const Extra&) { return stack(x[0].chunk(4), 0).pow(2.0); }},
      {"unbind_dim1",
       [](V x, const Extra&) {
         std::vector<Tensor> parts;
         for (const Tensor& u : x[0].unbind(1)) parts.push_back(u * static_cast<double>(parts.size() + 1));
         return stack(parts, 0).pow(2.0);
       }},
      {"compare", [](V x, const Extra&) { return where(x[0] > x[1], x[0], x[1] * 2.0); }},
      // ---- losses ----
      {"mse_loss_mean", [](V x, const Extra&) { return F::mse_loss(x[0], x[1]); }},
      {"mse_loss_sum", [](V x, const Extra&) { return F::mse_loss(x[0], x[1], {.reduction = kSum}); }},
      {"mse_loss_none", [](V x, const Extra&) { return F::mse_loss(x[0], x[1], {.reduction = kNone}); }},
      {"l1_loss_mean", [](V x, const Extra&) { return F::l1_loss(x[0], x[1]); }},
      {"l1_loss_sum", [](V x, const Extra&) { return F::l1_loss(x[0], x[1], {.reduction = kSum}); }},
      {"l1_loss_none", [](V x, const Extra&) { return F::l1_loss(x[0], x[1], {.reduction = kNone}); }},
      {"bce_with_logits_mean", [](V x, const Extra&) { return F::binary_cross_entropy_with_logits(x[0], x[1]); }},
      {"bce_with_logits_weights_sum",
       [](V x, const Extra& ex) {
         return F::binary_cross_entropy_with_logits(
             x[0], x[1], {.weight = ex.at("weight"), .reduction = kSum, .pos_weight = ex.at("pos_weight")});
       }},
      {"bce_with_logits_none",
       [](V x, const Extra&) { return F::binary_cross_entropy_with_logits(x[0], x[1], {.reduction = kNone}); }},
      {"nll_loss_mean_ignored", [](V x, const Extra& ex) { return F::nll_loss(x[0].log_softmax(1), ex.at("target")); }},
      {"nll_loss_sum", [](V x, const Extra& ex) { return F::nll_loss(x[0], ex.at("target"), {.reduction = kSum}); }},
      {"nll_loss_none", [](V x, const Extra& ex) { return F::nll_loss(x[0], ex.at("target"), {.reduction = kNone}); }},
      {"nll_loss_weight_mean",
       [](V x, const Extra& ex) { return F::nll_loss(x[0], ex.at("target"), {.weight = ex.at("weight")}); }},
      {"nll_loss_nd_custom_ignore",
       [](V x, const Extra& ex) { return F::nll_loss(x[0], ex.at("target"), {.ignore_index = 1}); }},
      {"nll_loss_unbatched", [](V x, const Extra& ex) { return F::nll_loss(x[0], ex.at("target")); }},
      {"nll_loss_all_ignored", [](V x, const Extra& ex) { return F::nll_loss(x[0], ex.at("target")); }},
      {"cross_entropy_mean", [](V x, const Extra& ex) { return F::cross_entropy(x[0], ex.at("target")); }},
      {"cross_entropy_ignore_index_2",
       [](V x, const Extra& ex) { return F::cross_entropy(x[0], ex.at("target"), {.ignore_index = 2}); }},
      {"cross_entropy_sum",
       [](V x, const Extra& ex) { return F::cross_entropy(x[0], ex.at("target"), {.reduction = kSum}); }},
      {"cross_entropy_none",
       [](V x, const Extra& ex) { return F::cross_entropy(x[0], ex.at("target"), {.reduction = kNone}); }},
      {"cross_entropy_smoothing_mean",
       [](V x, const Extra& ex) { return F::cross_entropy(x[0], ex.at("target"), {.label_smoothing = 0.15}); }},
      {"cross_entropy_smoothing_sum",
       [](V x, const Extra& ex) {
         return F::cross_entropy(x[0], ex.at("target"), {.reduction = kSum, .label_smoothing = 0.3});
       }},
      {"cross_entropy_smoothing_none",
       [](V x, const Extra& ex) {
         return F::cross_entropy(x[0], ex.at("target"), {.reduction = kNone, .label_smoothing = 0.3});
       }},
      {"cross_entropy_weight_smoothing",
       [](V x, const Extra& ex) {
         return F::cross_entropy(x[0], ex.at("target"), {.weight = ex.at("weight"), .label_smoothing = 0.2});
       }},
      {"cross_entropy_weight_none",
       [](V x, const Extra& ex) {
         return F::cross_entropy(x[0], ex.at("target"), {.weight = ex.at("weight"), .reduction = kNone});
       }},
      {"cross_entropy_nd_none",
       [](V x, const Extra& ex) { return F::cross_entropy(x[0], ex.at("target"), {.reduction = kNone}); }},
      {"cross_entropy_nd_smoothing_mean",
       [](V x, const Extra& ex) { return F::cross_entropy(x[0], ex.at("target"), {.label_smoothing = 0.1}); }},
      {"cross_entropy_nd_weight",
       [](V x, const Extra& ex) { return F::cross_entropy(x[0], ex.at("target"), {.weight = ex.at("weight")}); }},
      {"cross_entropy_unbatched", [](V x, const Extra& ex) { return F::cross_entropy(x[0], ex.at("target")); }},
      {"cross_entropy_probabilities",
       [](V x, const Extra&) { return F::cross_entropy(x[0], x[1], {.label_smoothing = 0.1}); }},
      {"cross_entropy_probabilities_weight_sum",
       [](V x, const Extra& ex) {
         return F::cross_entropy(x[0], x[1], {.weight = ex.at("weight"), .reduction = kSum});
       }},
      {"cross_entropy_all_ignored", [](V x, const Extra& ex) { return F::cross_entropy(x[0], ex.at("target")); }},
      {"cross_entropy_all_ignored_smoothing",
       [](V x, const Extra& ex) { return F::cross_entropy(x[0], ex.at("target"), {.label_smoothing = 0.2}); }},
      {"cross_entropy_all_ignored_sum",
       [](V x, const Extra& ex) { return F::cross_entropy(x[0], ex.at("target"), {.reduction = kSum}); }},
  };
  return c;
}

// The extra results of some cases (indices, comparison masks), by the names the script gave them.
const std::map<std::string, AuxFn>& aux_cases() {
  static const std::map<std::string, AuxFn> c = {
      {"max_dim1_pair", [](V x) { return Extra{{"indices", std::get<1>(x[0].max(1))}}; }},
      {"min_dim0_keepdim_pair", [](V x) { return Extra{{"indices", std::get<1>(x[0].min(0, true))}}; }},
      {"compare",
       [](V x) {
         const Tensor &a = x[0], &b = x[1];
         return Extra{{"lt", a < b},          {"le", a <= b},         {"gt", a > b},
                      {"ge", a >= b},         {"eq", a == b},         {"ne", a != b},
                      {"gt_scalar", a > 0.5}, {"le_scalar", a <= 0.5}, {"eq_scalar", a == 0.5},
                      {"scalar_lt", 0.25 < a}};
       }},
  };
  return c;
}

// |a − b| <= 1e-12 + 1e-10·|b| everywhere (nan where torch has nan), with the same shape;
// integer and bool results exactly, with the same dtype.
void expect_close(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_TRUE(a.defined()) << what << ": undefined";
  ASSERT_EQ(a.shape(), b.shape()) << what;
  if (!is_floating(b.dtype())) {
    ASSERT_EQ(a.dtype(), b.dtype()) << what;
  }
  const auto va = a.to_double_vector(), vb = b.to_double_vector();
  for (size_t i = 0; i < va.size(); ++i) {
    if (std::isnan(vb[i])) {
      EXPECT_TRUE(std::isnan(va[i])) << what << " [" << i << "]: " << va[i] << " vs torch nan";
      continue;
    }
    EXPECT_LE(std::fabs(va[i] - vb[i]), 1e-12 + 1e-10 * std::fabs(vb[i]))
        << what << " [" << i << "]: " << va[i] << " vs torch " << vb[i];
  }
}

std::set<std::string> fixture_names() {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(kFixtures))
    if (e.path().extension() == ".safetensors") names.insert(e.path().stem().string());
  return names;
}
}  // namespace

TEST(OpsParity, EveryFixtureHasACaseAndEveryCaseAFixture) {
  const std::set<std::string> files = fixture_names();
  for (const auto& [name, f] : cases()) EXPECT_TRUE(files.count(name)) << name << ".safetensors is missing";
  for (const auto& name : files) EXPECT_TRUE(cases().count(name)) << name << " has no case in this test";
}

TEST(OpsParity, EveryNewOpHasAFixture) {
  std::set<std::string> ops;
  for (const auto& name : fixture_names())
    ops.insert(SafeTensorsFile::load((kFixtures / (name + ".safetensors")).string()).metadata().at("op"));
  for (const char* op : {"where", "gather", "scatter_add", "stack", "maximum", "minimum", "clamp", "abs", "sigmoid",
                         "silu", "var", "logsumexp", "softmax", "log_softmax", "matmul", "max", "min", "pow",
                         // issue 21
                         "sin", "cos", "amax", "amin", "norm", "flip", "chunk", "unbind", "gt", "mse_loss", "l1_loss",
                         "binary_cross_entropy_with_logits", "nll_loss", "cross_entropy"})
    EXPECT_TRUE(ops.count(op)) << op;
}

TEST(OpsParity, EveryExpectedTensorIsCompared) {
  for (const auto& name : fixture_names()) {
    bool has_expected = false;
    for (const auto& [key, t] : load_safetensors((kFixtures / (name + ".safetensors")).string()))
      has_expected = has_expected || key.rfind("expected.", 0) == 0;
    EXPECT_EQ(has_expected, aux_cases().count(name) == 1) << name;
  }
}

class OpsParityCase : public ::testing::TestWithParam<std::string> {};

TEST_P(OpsParityCase, ValuesGradientsAndHessianVectorProductsMatchTorch) {
  const std::string name = GetParam();
  const auto file = load_safetensors((kFixtures / (name + ".safetensors")).string());
  std::vector<Tensor> x, u;
  const Extra extra(file.begin(), file.end());
  for (size_t i = 0; file.count("in." + std::to_string(i)); ++i) {
    x.push_back(file.at("in." + std::to_string(i)).detach().clone().requires_grad_());
    u.push_back(file.at("u." + std::to_string(i)));
  }
  const Tensor out = cases().at(name)(x, extra);
  expect_close(out, file.at("out"), name + " out");
  if (aux_cases().count(name))
    for (const auto& [key, t] : aux_cases().at(name)(x)) {
      ASSERT_TRUE(file.count("expected." + key)) << name << ": no expected." << key;
      expect_close(t, file.at("expected." + key), name + " " + key);
      EXPECT_FALSE(t.requires_grad()) << name << " " + key;
    }

  // grad.i = d<out, v>/dx_i, recorded (create_graph) so that it can be differentiated again
  const std::vector<Tensor> g = grad({out}, x, {file.at("v")}, {.create_graph = true});
  for (size_t i = 0; i < x.size(); ++i)
    expect_close(g[i], file.at("grad." + std::to_string(i)), name + " grad." + std::to_string(i));

  // hvp.i = d<grad, u>/dx_i; gradients that do not depend on x (the op is linear there) add 0
  std::vector<Tensor> gs, us;
  for (size_t i = 0; i < x.size(); ++i)
    if (g[i].requires_grad()) {
      gs.push_back(g[i]);
      us.push_back(u[i]);
    }
  std::vector<Tensor> hvp(x.size());
  if (!gs.empty()) hvp = grad(gs, x, us, {.allow_unused = true});
  for (size_t i = 0; i < x.size() && file.count("hvp." + std::to_string(i)); ++i) {  // (absent where torch's is nan)
    const Tensor h = hvp[i].defined() ? hvp[i] : Tensor::zeros(x[i].shape(), DType::Float64);
    expect_close(h, file.at("hvp." + std::to_string(i)), name + " hvp." + std::to_string(i));
  }
}

INSTANTIATE_TEST_SUITE_P(Torch, OpsParityCase, ::testing::ValuesIn([] {
                           std::vector<std::string> names;
                           for (const auto& [name, f] : cases()) names.push_back(name);
                           return names;
                         }()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });
