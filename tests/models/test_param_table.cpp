// One description per model (models/param_table.h): the table each registered model gives is
// what its modules describe (names, shapes, order, init, optimizer groups, matmul uses), before
// anything is built, and its size, its FLOPs and its optimizer groups derive from it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "models/registry.h"
#include "models/transformer_lm.h"
#include "nn/linear.h"
#include "nn/module_list.h"
#include "tests/test_util.h"
#include "optim/lr_scheduler.h"
#include "train/config/run_config.h"
#include "train/optimizers/param_groups.h"

namespace ag {
namespace {

using models::ModelConfig;
using models::OptimGroup;
using models::ParamTable;

ModelConfig small(const std::string& name) {
  ModelConfig c;
  c.name = name;
  c.vocab_size = 11;
  c.n_layer = 3;
  c.n_head = 2;
  c.n_embd = 8;
  c.block_size = 6;
  c.hidden = 12;
  return c;
}

TEST(ParamTable, EveryModelsParametersAreItsTable) {
  for (const auto& entry : models::model_registry()) {
    const ModelConfig c = small(entry.name);
    Generator g(3);
    const auto model = entry.make(c, DType::Float32, g);
    const ParamTable t = entry.parameters(c);
    const auto params = model->named_parameters();
    const auto shapes = t.shapes();
    ASSERT_EQ(params.size(), shapes.size()) << entry.name;
    ASSERT_EQ(t.num_tensors(), static_cast<int64_t>(params.size())) << entry.name;
    for (size_t i = 0; i < params.size(); ++i) {
      EXPECT_EQ(params[i].first, shapes[i].first) << entry.name;
      EXPECT_EQ(params[i].second.shape(), shapes[i].second) << params[i].first;
    }
    EXPECT_EQ(t.num_parameters(), model->num_parameters()) << entry.name;
    EXPECT_EQ(model->parameter_table().shapes(), shapes) << entry.name;
    // The table before anything is built (one layer on a meta basis, repeated) says of every
    // parameter what the built model's modules say.
    const auto specs = model->named_param_specs();
    ASSERT_EQ(specs.size(), params.size()) << entry.name;
    size_t i = 0;
    t.for_each([&](const std::string& name, const nn::ParamSpec& s) {
      EXPECT_EQ(specs[i].first, name);
      EXPECT_TRUE(specs[i].second == s) << name;
      ++i;
    });
  }
}

// nanoGPT's AdamW grouping: weight decay on every parameter of ≥ 2 dims and on no other; the
// three groups partition the parameters, and the trainer's AdamW groups (train::decay_groups)
// come from them.
TEST(ParamTable, OptimizerGroupsPartitionTheParametersAsAdamWDecays) {
  for (const auto& entry : models::model_registry()) {
    const ModelConfig c = small(entry.name);
    Generator g(3);
    const auto model = entry.make(c, DType::Float32, g);
    const ParamTable t = entry.parameters(c);
    const auto decay = t.names(OptimGroup::Decay), no_decay = t.names(OptimGroup::NoDecay), matrix = t.names(OptimGroup::Matrix);
    EXPECT_EQ(decay.size() + no_decay.size() + matrix.size(), static_cast<size_t>(t.num_tensors())) << entry.name;
    const std::set<std::string> decayed_by_table = [&] {
      std::set<std::string> s(decay.begin(), decay.end());
      s.insert(matrix.begin(), matrix.end());
      return s;
    }();
    for (const auto& [name, p] : model->named_parameters())
      EXPECT_EQ(p.dim() >= 2, decayed_by_table.count(name) > 0) << name;
    const auto groups = train::decay_groups(*model, {.lr = 1e-3, .weight_decay = 0.1});
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0].params.size(), decayed_by_table.size()) << entry.name;
    EXPECT_EQ(groups[1].params.size(), no_decay.size()) << entry.name;
    EXPECT_EQ(groups[1].options.weight_decay, 0.0);
    if (entry.name != "modern") {  // no gains or biases: its NoDecay group is empty
      EXPECT_TRUE(groups[1].params[0].same(model->named_parameters()[2].second)) << entry.name;  // GPT: ln1.weight; MLP: fc.bias
    }
    EXPECT_FALSE(matrix.empty()) << entry.name;
  }
  const ParamTable gpt = models::TransformerLM::param_table(small("gpt").gpt());
  EXPECT_EQ(gpt.names(OptimGroup::Decay), (std::vector<std::string>{"tok_emb.weight", "pos_emb.weight"}));
  EXPECT_EQ(gpt.names(OptimGroup::Matrix)[0], "blocks.0.attn.in_proj_weight");
  EXPECT_EQ(gpt.names(OptimGroup::NoDecay).back(), "ln_f.bias");
  EXPECT_STREQ(models::group_name(OptimGroup::NoDecay), "no_decay");
}

// A linear model whose table keeps its 2-d weight out of weight decay and decays its 1-d bias:
// the opposite of nanoGPT's shape rule, so only groups read from the table can get it right.
class TableNotShape : public models::LanguageModel {
 public:
  TableNotShape() {
    lin = register_module("lin", std::make_shared<nn::Linear>(3, 2));
    lin->set_role("weight", OptimGroup::NoDecay, 1);
    lin->set_role("bias", OptimGroup::Decay, 0);
  }
  Tensor forward(const Tensor& x) const override { return lin->forward(x); }
  Tensor loss(const Tensor& x, const Tensor&) const override { return forward(x); }
  std::vector<int64_t> generate(const std::vector<int64_t>& p, const models::SampleOptions&, Generator&) const override { return p; }
  ModelConfig model_config() const override { return {}; }
  std::string summary() const override { return "table not shape"; }
  std::shared_ptr<nn::Linear> lin;
};

TEST(ParamTable, TheTrainersDecayGroupsAreTheTablesNotTheShapes) {
  const TableNotShape model;
  const auto groups = train::decay_groups(model, {.lr = 1e-3, .weight_decay = 0.1});
  ASSERT_EQ(groups.size(), 2u);
  ASSERT_EQ(groups[0].params.size(), 1u);
  EXPECT_TRUE(groups[0].params[0].same(model.lin->bias));
  EXPECT_EQ(groups[0].options.weight_decay, 0.1);
  ASSERT_EQ(groups[1].params.size(), 1u);
  EXPECT_TRUE(groups[1].params[0].same(model.lin->weight));
  EXPECT_EQ(groups[1].options.weight_decay, 0.0);
}

// The FLOPs derived from the table are the hand-counted ones (nanoGPT's, for the GPT).
TEST(ParamTable, ForwardFlopsMatchTheHandCount) {
  const ModelConfig g = small("gpt");
  Generator gen(1);
  const auto gpt = models::make_model(g, DType::Float32, gen);
  const double B = 5, T = 6, E = 8, L = 3, V = 11, BT = B * T;
  const double per_layer = 2 * BT * E * 3 * E + 2 * 2 * BT * T * E + 2 * BT * E * E + 2 * 2 * BT * E * 4 * E;
  EXPECT_DOUBLE_EQ(gpt->forward_flops(5), L * per_layer + 2 * BT * E * V);
  const auto mlp = models::make_model(small("mlp"), DType::Float32, gen);
  const double H = 12;
  EXPECT_DOUBLE_EQ(mlp->forward_flops(5), 2 * BT * (T * E) * H + 2 * BT * H * V);
}

// Init as the modules describe it: LayerNorm 1 and 0, zero biases, N(0, 0.02) and 0.02/√(2L)
// (GPT); U(±1/√fan_in) (the MLP's linear layers).
TEST(ParamTable, InitFollowsTheTable) {
  ModelConfig c = small("gpt");
  c.n_embd = 64;
  c.n_head = 4;
  c.n_layer = 2;
  Generator gen(7);
  const auto gpt = models::make_model(c, DType::Float32, gen);
  auto stats = [](const Tensor& t) {
    const auto v = t.to_double_vector();
    double s = 0, s2 = 0;
    for (double x : v) s += x, s2 += x * x;
    const double n = static_cast<double>(v.size());
    return std::pair{s / n, std::sqrt(s2 / n - (s / n) * (s / n))};
  };
  for (const auto& [name, p] : gpt->named_parameters()) {
    const auto [mean, sd] = stats(p);
    if (name.find("ln") != std::string::npos && name.ends_with("weight")) EXPECT_EQ(mean, 1.0) << name;
    else if (p.dim() == 1) EXPECT_EQ(sd, 0.0) << name;
    else if (name.ends_with("out_proj.weight") || name.ends_with("mlp.proj.weight")) EXPECT_NEAR(sd, 0.02 / 2, 0.002) << name;
    else EXPECT_NEAR(sd, 0.02, 0.002) << name;
  }
  const auto mlp = models::make_model(small("mlp"), DType::Float32, gen);
  for (const auto& [name, p] : mlp->named_parameters()) {
    if (name.rfind("wte", 0) == 0) continue;
    const double bound = 1 / std::sqrt(name.rfind("fc", 0) == 0 ? 6.0 * 8 : 12.0);
    for (double x : p.to_double_vector()) ASSERT_LE(std::abs(x), bound) << name;
  }
}

// A parameter registered without a description cannot be in a table: the table would have to
// guess its init and group.
TEST(ParamTable, AParameterWithoutADescriptionIsRefused) {
  struct Scale : nn::Module {
    Scale() { register_parameter("scale", Tensor::ones({1})); }
  };
  struct Net : nn::Module {
    Net() {
      register_module("lin", std::make_shared<nn::Linear>(3, 2));
      register_module("s", std::make_shared<Scale>());
    }
  };
  EXPECT_NE(testing_util::error_of<std::logic_error>([] { ParamTable::of(Net()); }).find("'s.scale' was registered without a description"),
            std::string::npos);
}

// A model of repeated layers is described by one layer: a second one is a mistake, not rows.
TEST(ParamTable, ALayeredTableIsDescribedByOneLayer) {
  struct Layers : nn::Module {
    explicit Layers(int n) {
      auto list = register_module("layers", std::make_shared<nn::ModuleList<nn::Linear>>());
      for (int i = 0; i < n; ++i) list->push_back(std::make_shared<nn::Linear>(2, 2));
      register_module("head", std::make_shared<nn::Linear>(2, 5, false));
    }
  };
  const ParamTable t = ParamTable::of(Layers(1), "layers.", 1000);
  EXPECT_EQ(t.num_tensors(), 2 * 1000 + 1);
  EXPECT_EQ(t.per_layer[1].name, "bias");
  EXPECT_EQ(t.last[0].name, "head.weight");
  EXPECT_EQ(t.num_parameters(), 6 * 1000 + 10);
  EXPECT_NE(testing_util::error_of<std::logic_error>([] { ParamTable::of(Layers(2), "layers.", 2); }).find("'layers.1.weight' is in a second layer"),
            std::string::npos);
}

// A configuration from a file may claim 2^31 layers: its size is computed, not listed, and a
// size beyond 64 bits throws instead of wrapping.
TEST(ParamTable, SizesOfHugeConfigurationsAreComputedAndChecked) {
  ModelConfig c = small("gpt");
  c.n_layer = (int64_t{1} << 31) - 1;
  const ParamTable t = models::find_model("gpt").parameters(c);
  EXPECT_EQ(t.num_tensors(), 4 + 12 * c.n_layer);
  c.n_embd = int64_t{1} << 20;
  EXPECT_THROW(models::find_model("gpt").parameters(c).num_parameters(), std::overflow_error);
  c.n_embd = std::numeric_limits<int64_t>::max() / 2 - 1;  // even: n_head 2 divides it
  EXPECT_THROW(models::find_model("gpt").parameters(c), std::overflow_error);  // 3E does not fit
}

// --optimizer muon builds its groups from the table: Muon for the Matrix rows, AdamW for the
// rest, and with --embed-lr the tables the modern model only looks up (its untied token
// embedding) in an AdamW group of their own. Each group's peak is its own initial_lr; the
// schedule sets a factor on it, and get_lr returns what was set.
TEST(ParamTable, MuonsGroupsComeFromTheTableEachAtItsOwnPeak) {
  const ModelConfig c = small("modern");
  EXPECT_EQ(models::find_model("modern").parameters(c).lookup_tables(), std::vector<std::string>{"tok_emb.weight"});
  Generator g(3);
  const auto model = models::find_model("modern").make(c, DType::Float32, g);
  train::TrainConfig cfg;
  cfg.optimizer = train::OptimizerChoice("muon");
  cfg.lr = 0.008;
  train::setting(cfg, "muon-lr") = 0.05;
  auto group_of = [&](const optim::Optimizer& opt, const std::string& name) {
    const TensorImpl* p = nullptr;
    for (const auto& [n, t] : model->named_parameters())
      if (n == name) p = &t.impl();
    for (size_t k = 0; k < opt.num_param_groups(); ++k)
      for (const Tensor& q : opt.group_params(k))
        if (&q.impl() == p) return k;
    ADD_FAILURE() << name << " is in no group";
    return size_t(0);
  };
  const auto plain = cfg.optimizer->build(*model, cfg);
  EXPECT_EQ(group_of(*plain, "tok_emb.weight"), group_of(*plain, "lm_head.weight"));
  EXPECT_EQ(group_of(*plain, "lm_head.weight"), 0u);  // group 0 (the rate the log shows) is AdamW's at --lr
  train::setting(cfg, "embed-lr") = 0.2;
  const auto opt = cfg.optimizer->build(*model, cfg);
  EXPECT_EQ(opt->num_param_groups(), plain->num_param_groups() + 1);
  const size_t emb = group_of(*opt, "tok_emb.weight"), head = group_of(*opt, "lm_head.weight"),
               fc = group_of(*opt, "blocks.0.mlp.fc.weight");
  EXPECT_EQ(opt->group_params(emb).size(), 1u);
  EXPECT_NE(emb, head);
  EXPECT_EQ(opt->get_lr(emb), 0.2);
  EXPECT_EQ(opt->get_lr(head), 0.008);
  EXPECT_EQ(opt->get_lr(fc), 0.05);
  optim::lr_scheduler::LambdaLR sched(*opt, [](int64_t) { return 0.25; });  // a quarter of each peak
  EXPECT_EQ(opt->get_lr(emb), 0.2 * 0.25);
  EXPECT_EQ(opt->get_lr(head), 0.008 * 0.25);
  EXPECT_EQ(opt->get_lr(fc), 0.05 * 0.25);
  opt->set_lr(emb, 0.004);
  EXPECT_EQ(opt->get_lr(emb), 0.004);  // what was set, unscaled
}

}  // namespace
}  // namespace ag
