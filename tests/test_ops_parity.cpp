// The new ops against PyTorch (float64): values, first-order gradients and Hessian-vector
// products, from the fixtures that tests/parity/make_ops_fixtures.py wrote with torch
// (tests/parity/fixtures/ops/<case>.safetensors; see that script for the contents). No torch
// is needed here. Each case below is called exactly as the script calls torch.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/safetensors.h"

using namespace ag;

namespace {
namespace fs = std::filesystem;
using V = const std::vector<Tensor>&;
using Extra = std::map<std::string, Tensor>;
using CaseFn = std::function<Tensor(V, const Extra&)>;

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
  };
  return c;
}

// |a − b| <= 1e-12 + 1e-10·|b| everywhere, with the same shape.
void expect_close(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_TRUE(a.defined()) << what << ": undefined";
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const auto va = a.to_double_vector(), vb = b.to_double_vector();
  for (size_t i = 0; i < va.size(); ++i)
    EXPECT_LE(std::fabs(va[i] - vb[i]), 1e-12 + 1e-10 * std::fabs(vb[i]))
        << what << " [" << i << "]: " << va[i] << " vs torch " << vb[i];
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
                         "silu", "var", "logsumexp", "softmax", "log_softmax", "matmul", "max", "min", "pow"})
    EXPECT_TRUE(ops.count(op)) << op;
}

class OpsParityCase : public ::testing::TestWithParam<std::string> {};

TEST_P(OpsParityCase, ValuesGradientsAndHessianVectorProductsMatchTorch) {
  const std::string name = GetParam();
  const auto file = load_safetensors((kFixtures / (name + ".safetensors")).string());
  std::vector<Tensor> x, u;
  Extra extra;
  for (const auto& [key, t] : file) {
    if (!is_floating(t.dtype())) extra[key] = t;
  }
  for (size_t i = 0; file.count("in." + std::to_string(i)); ++i) {
    x.push_back(file.at("in." + std::to_string(i)).detach().clone().requires_grad_());
    u.push_back(file.at("u." + std::to_string(i)));
  }
  const Tensor out = cases().at(name)(x, extra);
  expect_close(out, file.at("out"), name + " out");

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
  for (size_t i = 0; i < x.size(); ++i) {
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
