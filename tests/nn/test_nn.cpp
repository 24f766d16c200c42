// Module registration, dotted names, state dicts, train/eval, and the basic layers.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/module_dict.h"
#include "nn/sequential.h"
#include "autograd/safetensors.h"
#include "tests/test_util.h"

using namespace ag;
using namespace ag::nn;

namespace {
struct Block : Module {
  std::shared_ptr<Linear> fc;
  std::shared_ptr<LayerNorm> ln;
  Block() {
    fc = register_module("fc", std::make_shared<Linear>(4, 3));
    ln = register_module("ln", std::make_shared<LayerNorm>(3));
  }
};
struct Net : Module {
  Tensor scale;
  std::vector<std::shared_ptr<Block>> blocks;
  std::shared_ptr<Dropout> drop;
  Net() {
    scale = register_parameter("scale", Tensor::ones({1}));
    for (int i = 0; i < 2; ++i) blocks.push_back(register_module("blocks_" + std::to_string(i), std::make_shared<Block>()));
    drop = register_module("drop", std::make_shared<Dropout>(0.5));
  }
};
}  // namespace

TEST(Module, DottedNamedParametersInRegistrationOrder) {
  Net net;
  std::vector<std::string> names;
  for (auto& [n, _] : net.named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"scale", "blocks_0.fc.weight", "blocks_0.fc.bias", "blocks_0.ln.weight",
                                             "blocks_0.ln.bias", "blocks_1.fc.weight", "blocks_1.fc.bias",
                                             "blocks_1.ln.weight", "blocks_1.ln.bias"}));
  EXPECT_EQ(net.num_parameters(), 1 + 2 * (12 + 3 + 3 + 3));
  MultiheadAttention mha(8, 2);
  names.clear();
  for (auto& [n, t] : mha.named_parameters()) names.push_back(n + shape_str(t.shape()));
  EXPECT_EQ(names, (std::vector<std::string>{"in_proj_weight[24, 8]", "in_proj_bias[24]", "out_proj.weight[8, 8]",
                                             "out_proj.bias[8]"}));
}

TEST(Module, StateDictRoundTripAndStrictLoading) {
  manual_seed(1);
  Net a;
  manual_seed(2);
  Net b;
  EXPECT_NE(a.blocks[0]->fc->weight.to_double_vector(), b.blocks[0]->fc->weight.to_double_vector());
  b.load_state_dict(a.state_dict());
  EXPECT_EQ(a.blocks[0]->fc->weight.to_double_vector(), b.blocks[0]->fc->weight.to_double_vector());
  EXPECT_FALSE(a.blocks[0]->fc->weight.same(b.blocks[0]->fc->weight));  // values copied, not handles
  auto sd = a.state_dict();
  sd.erase("scale");
  EXPECT_THROW(b.load_state_dict(sd), std::runtime_error);
  EXPECT_EQ(b.load_state_dict(sd, /*strict=*/false).missing_keys, std::vector<std::string>{"scale"});
  sd = a.state_dict();
  sd["extra"] = Tensor::zeros({1});
  try {
    b.load_state_dict(sd);
    FAIL() << "unexpected key accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("Unexpected key(s) in state_dict: \"extra\". "), std::string::npos) << e.what();
  }
  sd = a.state_dict();
  sd["scale"] = Tensor::zeros({2});
  EXPECT_THROW(b.load_state_dict(sd, false), std::runtime_error);  // shape mismatch is always an error
}

TEST(Module, TrainEvalPropagatesAndZeroGrad) {
  Net net;
  EXPECT_TRUE(net.drop->is_training());
  net.eval();
  EXPECT_FALSE(net.drop->is_training());
  EXPECT_FALSE(net.blocks[1]->ln->is_training());
  Tensor x = Tensor::ones({5, 4});
  EXPECT_TRUE(net.drop->forward(x).same(x));  // identity in eval mode
  net.train();
  sum(net.blocks[0]->ln->forward(net.blocks[0]->fc->forward(x))).backward();
  EXPECT_TRUE(net.blocks[0]->fc->weight.grad().defined());
  net.zero_grad();
  EXPECT_FALSE(net.blocks[0]->fc->weight.grad().defined());
}

TEST(Module, ToFloat64ConvertsInPlace) {
  Linear lin(3, 2);
  Tensor w = lin.weight;  // a user's handle sees the conversion too
  const auto before = w.to_double_vector();
  lin.to(DType::Float64);
  EXPECT_EQ(w.dtype(), DType::Float64);
  EXPECT_EQ(lin.named_parameters()[0].second.dtype(), DType::Float64);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(w.to_double_vector()[i], before[i]);
}

TEST(Layers, LinearMatchesDefinitionAndPyTorchInitBounds) {
  Linear lin(16, 8);
  const double b = 1 / std::sqrt(16.0);
  for (double v : lin.weight.to_double_vector()) EXPECT_LE(std::fabs(v), b);
  for (double v : lin.bias.to_double_vector()) EXPECT_LE(std::fabs(v), b);
  Tensor x = Tensor::randn({3, 16});
  Tensor y = lin(x);
  double s = lin.bias.at({1});
  for (int64_t k = 0; k < 16; ++k) s += x.at({2, k}) * lin.weight.at({1, k});
  EXPECT_NEAR(y.at({2, 1}), s, 1e-5);
  EXPECT_THROW(lin(Tensor::zeros({3, 15})), std::invalid_argument);
}

TEST(Layers, EmbeddingLayerNormGeluGradcheck) {
  Embedding emb(5, 3, DType::Float64);
  LayerNorm ln(3, 1e-5, true, DType::Float64);
  Tensor ids = Tensor::from_vector(std::vector<int64_t>{0, 4, 4, 2}, {2, 2});
  GELU act;
  const GradcheckReport r = gradcheck(
      [&](const std::vector<Tensor>&) { return act(ln(emb(ids))); },
      {emb.weight, ln.weight, ln.bias}, {}, {"emb.weight", "ln.weight", "ln.bias"});
  EXPECT_TRUE(r.passed()) << r.table();
}

// ---- Sequential, ModuleDict, the single-input forward, torch's state-dict messages ----------

namespace {
const std::filesystem::path kFixtures = std::filesystem::path(ATTOGRAD_SOURCE_DIR) / "tests/parity/fixtures/nn_optim";

nlohmann::json modules_json() {
  std::ifstream in(kFixtures / "modules.json");
  return nlohmann::json::parse(in);
}
}  // namespace

// The Sequential of tests/parity/make_nn_optim_fixtures.py: torch's state_dict keys, and
// torch's output once torch's weights are loaded.
TEST(Sequential, NamesChildrenAndComputesAsTorch) {
  Sequential model{std::make_shared<Linear>(3, 8, true, DType::Float64), std::make_shared<Tanh>(),
                   std::make_shared<Linear>(8, 8, true, DType::Float64), std::make_shared<ReLU>(),
                   std::make_shared<Linear>(8, 8, true, DType::Float64), std::make_shared<Sigmoid>(),
                   std::make_shared<Linear>(8, 8, true, DType::Float64), std::make_shared<SiLU>(),
                   std::make_shared<Identity>(), std::make_shared<Linear>(8, 2, true, DType::Float64)};
  std::vector<std::string> keys;
  for (const auto& [n, _] : model.named_parameters()) keys.push_back(n);
  EXPECT_EQ(keys, modules_json()["keys"].get<std::vector<std::string>>());
  const SafeTensorsFile f = SafeTensorsFile::load((kFixtures / "modules.safetensors").string());
  std::map<std::string, Tensor> sd;
  for (const auto& k : keys) sd[k] = f.get("model." + k);
  model.load_state_dict(sd);
  EXPECT_LT(testing_util::max_rel(model.forward(f.get("x")), f.get("y")), 1e-14);
  EXPECT_EQ(model.size(), 10u);
  EXPECT_NE(model[1]->as<Tanh>(), nullptr);
  EXPECT_EQ(model[1]->as<Linear>(), nullptr);
  EXPECT_EQ(model[9]->as<Linear>()->out_features, 2);
}

TEST(Sequential, LoadStateDictErrorsAreTorchsText) {
  Sequential model{std::make_shared<Linear>(2, 8), std::make_shared<Tanh>(), std::make_shared<Linear>(8, 1)};
  const auto errors = modules_json()["errors"];
  const auto good = model.state_dict();
  auto missing = good;
  missing.erase("2.bias");
  auto unexpected = good;
  unexpected["5.weight"] = Tensor::zeros({3});
  auto mismatch = good;
  mismatch["0.weight"] = Tensor::zeros({8, 3});
  auto all = mismatch;
  all.erase("2.bias");
  all["5.weight"] = Tensor::zeros({3});
  const std::vector<std::pair<std::string, std::map<std::string, Tensor>>> cases = {
      {"missing", missing}, {"unexpected", unexpected}, {"mismatch", mismatch}, {"all", all}};
  for (const auto& [name, sd] : cases)
    EXPECT_EQ(testing_util::error_of([&] { model.load_state_dict(sd); }), errors[name].get<std::string>()) << name;
  const auto before = model.state_dict().at("0.weight").to_double_vector();
  model.load_state_dict(missing, /*strict=*/false);  // non-strict: the keys that match are loaded
  auto keys = model.load_state_dict(unexpected, false);
  EXPECT_EQ(keys.unexpected_keys, std::vector<std::string>{"5.weight"});
  EXPECT_TRUE(keys.missing_keys.empty());
  EXPECT_THROW(model.load_state_dict(mismatch, false), std::runtime_error);  // a size mismatch always throws
  EXPECT_EQ(model.state_dict().at("0.weight").to_double_vector(), before);
}

// A module defines the single-input forward by overriding it; Sequential chains such modules,
// and one without it says which module it is.
TEST(Sequential, ChainsUserModulesAndNamesOneWithoutForward) {
  struct Scale : Module {
    Tensor s = register_parameter("s", Tensor::full({1}, 3.0, DType::Float64));
    Tensor forward(const Tensor& x) const override { return mul(x, s); }
  };
  struct NoForward : Module {};
  auto inner = std::make_shared<Sequential>(std::make_shared<Scale>(), std::make_shared<Identity>());
  Sequential model{std::make_shared<Scale>(), inner};
  const Tensor x = Tensor::from_vector(std::vector<double>{1, 2}, {2}, DType::Float64);
  EXPECT_EQ(model(x).to_double_vector(), (std::vector<double>{9, 18}));
  std::vector<std::string> keys;
  for (const auto& [n, _] : model.named_parameters()) keys.push_back(n);
  EXPECT_EQ(keys, (std::vector<std::string>{"0.s", "1.0.s"}));
  EXPECT_TRUE(Sequential{}.forward(x).same(x));  // empty: the input, as torch's
  model.push_back(std::make_shared<NoForward>());
  testing_util::expect_has(testing_util::error_of<std::logic_error>([&] { model(x); }),
                           {"Module [NoForward] is missing the required \"forward\" function"});
  EXPECT_EQ(Linear(2, 2).name(), "Linear");
  EXPECT_EQ(model.name(), "Sequential");
}

// Modules whose forward takes more than one tensor keep their own and leave the single-input
// one, which throws.
TEST(Sequential, MultiInputModuleRefusesTheSingleInputForward) {
  MultiheadAttention mha(4, 2);
  const Module& m = mha;
  testing_util::expect_has(testing_util::error_of<std::logic_error>([&] { m(Tensor::zeros({1, 2, 4})); }),
                           {"Module [MultiheadAttention]"});
}

TEST(ModuleDict, KeysInInsertionOrderAndTorchsParameterNames) {
  ModuleDict heads{{"cls", std::make_shared<Linear>(4, 3)}, {"reg", std::make_shared<Linear>(4, 1, false)}};
  EXPECT_EQ(heads.keys(), (std::vector<std::string>{"cls", "reg"}));
  EXPECT_TRUE(heads.contains("reg"));
  EXPECT_FALSE(heads.contains("x"));
  EXPECT_EQ(heads["cls"]->as<Linear>()->out_features, 3);
  std::vector<std::string> names;
  for (const auto& [n, _] : heads.named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"cls.weight", "cls.bias", "reg.weight"}));
  heads.insert("cls", std::make_shared<Linear>(4, 5, false));  // replaced in place
  names.clear();
  for (const auto& [n, _] : heads.named_parameters()) names.push_back(n);
  EXPECT_EQ(names, (std::vector<std::string>{"cls.weight", "reg.weight"}));
  EXPECT_EQ(heads["cls"]->as<Linear>()->out_features, 5);
  EXPECT_EQ(heads.size(), 2u);
  testing_util::expect_has(testing_util::error_of<std::out_of_range>([&] { heads["x"]; }), {"Key 'x' is not defined", "cls, reg"});
  heads.eval();
  EXPECT_FALSE(heads["reg"]->is_training());
}

TEST(Module, ActivationsAreTheirOps) {
  const Tensor x = Tensor::from_vector(std::vector<double>{-2, -0.5, 0, 1.5}, {4}, DType::Float64);
  EXPECT_EQ(ReLU()(x).to_double_vector(), relu(x).to_double_vector());
  EXPECT_EQ(Tanh()(x).to_double_vector(), tanh(x).to_double_vector());
  EXPECT_EQ(Sigmoid()(x).to_double_vector(), sigmoid(x).to_double_vector());
  EXPECT_EQ(SiLU()(x).to_double_vector(), silu(x).to_double_vector());
  EXPECT_TRUE(Identity()(x).same(x));
  EXPECT_TRUE(ReLU().parameters().empty());
}

// torch's padding_idx: the row starts at zero and gets no gradient, also to second order; a
// negative index counts from the end; out of range throws torch's message.
TEST(Layers, EmbeddingPaddingIdx) {
  Embedding emb(5, 3, DType::Float64);
  emb.set_padding_idx(-2);
  ASSERT_EQ(emb.padding_idx, 3);
  EXPECT_EQ(emb.weight.select(0, 3).to_double_vector(), (std::vector<double>(3, 0.0)));
  {
    NoGradGuard no_grad;
    emb.weight.select(0, 3).fill_(7.0);  // the row's values are looked up all the same
  }
  const Tensor ids = Tensor::from_vector(std::vector<int64_t>{3, 1, 3, 0}, {4});
  Tensor out = emb.forward(ids);
  EXPECT_DOUBLE_EQ(out.at({0, 0}), 7.0);
  const std::vector<Tensor> g = grad({(out * out).sum()}, {emb.weight}, {}, {.create_graph = true});
  EXPECT_EQ(g[0].select(0, 3).to_double_vector(), (std::vector<double>(3, 0.0)));
  EXPECT_NE(g[0].select(0, 1).to_double_vector(), (std::vector<double>(3, 0.0)));
  const std::vector<Tensor> gg = grad({(g[0] * g[0]).sum()}, {emb.weight});
  EXPECT_EQ(gg[0].select(0, 3).to_double_vector(), (std::vector<double>(3, 0.0)));
  EXPECT_NE(testing_util::error_of<std::exception>([] { Embedding(5, 3).set_padding_idx(5); }).find("Padding_idx must be within "
                                                                                    "num_embeddings"),
            std::string::npos);
  Embedding pre = Embedding::from_pretrained(emb.weight, {.freeze = false, .padding_idx = 3});
  EXPECT_DOUBLE_EQ(pre.weight.at({3, 0}), 7.0);  // from_pretrained keeps the row's values
  EXPECT_EQ(pre.padding_idx, 3);
}

// LayerNorm over two trailing dims, gradchecked to second order in float64; an empty
// normalized_shape is refused by forward with torch's message.
TEST(Layers, LayerNormOverSeveralDims) {
  LayerNorm ln(Shape{2, 3}, 1e-5, true, DType::Float64);
  {
    NoGradGuard no_grad;
    ln.weight.copy_(Tensor::randn({2, 3}, DType::Float64));
    ln.bias.copy_(Tensor::randn({2, 3}, DType::Float64));
  }
  const Tensor x = Tensor::randn({4, 2, 3}, DType::Float64);
  x.requires_grad_();
  auto f = [&](const std::vector<Tensor>& in) { return layer_norm(in[0], Shape{2, 3}, in[1], in[2], 1e-5); };
  EXPECT_TRUE(gradcheck(f, {x, ln.weight, ln.bias}).passed());
  EXPECT_TRUE(gradgradcheck(f, {x, ln.weight, ln.bias}).passed());
  LayerNorm empty(Shape{});
  EXPECT_NE(testing_util::error_of<std::exception>([&] { empty.forward(Tensor::ones({2})); })
                .find("Expected normalized_shape to be at least 1-dimensional"),
            std::string::npos);
}
