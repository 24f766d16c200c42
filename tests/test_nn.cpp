// Module registration, dotted names, state dicts, train/eval, and the basic layers.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "nn/activation.h"
#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"

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
  EXPECT_THROW(b.load_state_dict(sd), std::invalid_argument);
  b.load_state_dict(sd, /*strict=*/false);
  sd = a.state_dict();
  sd["extra"] = Tensor::zeros({1});
  try {
    b.load_state_dict(sd);
    FAIL() << "unexpected key accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unexpected keys: extra"), std::string::npos) << e.what();
  }
  sd = a.state_dict();
  sd["scale"] = Tensor::zeros({2});
  EXPECT_THROW(b.load_state_dict(sd, false), std::invalid_argument);  // shape mismatch is always an error
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
