// modded-nanogpt's model parts on the modern transformer (models/gpt_config.h): value
// embeddings (--value-embeds), U-net skips (--unet-skips) and the x0 residual (--x0-residual).
// Which layers they touch, how they
// are described (names, init, optimizer groups, size, FLOPs, memory), that each one off by its
// scalars is the model without it, the float64 gradchecks of first and second order, the
// refusals, and a model file that reads back. Against PyTorch: tests/models/test_modern_parity.cpp;
// the KV-cache decoder: tests/models/test_decode.cpp; resume: tests/train/test_resume.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "data/tokenizer.h"
#include "models/registry.h"
#include "models/transformer_lm.h"
#include "train/run_folder/checkpoint.h"

using namespace ag;
using namespace ag::models;

namespace {

GPTConfig modern(int64_t layers, int64_t value_embeds, bool unet_skips, bool x0_residual = false) {
  GPTConfig c{.vocab_size = 5, .n_layer = layers, .n_head = 2, .n_embd = 4, .block_size = 4, .dropout = 0.0,
              .arch = Architecture::modern(3.0)};
  c.value_embeds = value_embeds, c.unet_skips = unet_skips, c.x0_residual = x0_residual;
  return c;
}

std::vector<int64_t> tables_of(const GPTConfig& c) {
  std::vector<int64_t> t;
  for (int64_t i = 0; i < c.n_layer; ++i) t.push_back(c.value_table_of(i));
  return t;
}

// Every parameter drawn anew at `scale` (the modern init's zero projections and head would
// hide the blocks from a gradient check).
void randomise(TransformerLM& m, Generator& g, double scale) {
  NoGradGuard no_grad;
  for (auto [name, p] : m.named_parameters()) p.copy_(Tensor::randn(p.shape(), p.dtype(), g, 0.0, scale));
}

const Tensor kIds = Tensor::from_vector(std::vector<int64_t>{1, 4, 0, 2, 3, 3, 1, 0}, {2, 4});
const Tensor kTargets = Tensor::from_vector(std::vector<int64_t>{4, 0, 2, 1, 3, 1, 0, 4}, {2, 4});

void expect_equal(const Tensor& a, const Tensor& b, const std::string& what) {
  const auto x = a.to_double_vector(), y = b.to_double_vector();
  ASSERT_EQ(x.size(), y.size()) << what;
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(x[i], y[i], 1e-12) << what << " at " << i;
}

}  // namespace

// The U of the value tables, for the small layer counts docs/speedrun.md names.
TEST(ModelParts, ValueTablesGoToTheFirstAndLastLayersInTheSameOrder) {
  EXPECT_EQ(tables_of(modern(4, 1, false)), (std::vector<int64_t>{0, -1, -1, 0}));
  EXPECT_EQ(tables_of(modern(4, 2, false)), (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_EQ(tables_of(modern(5, 2, false)), (std::vector<int64_t>{0, 1, -1, 0, 1}));  // the middle layer none
  EXPECT_EQ(tables_of(modern(4, 0, false)), (std::vector<int64_t>{-1, -1, -1, -1}));
  const GPTConfig c = modern(5, 2, false);
  std::vector<int64_t> rows;
  for (int64_t i : {0, 1, 3, 4}) rows.push_back(c.value_lambda_row(i));
  EXPECT_EQ(rows, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(modern(5, 0, true).unet_pairs(), 2);
  EXPECT_EQ(modern(4, 0, true).unet_pairs(), 2);
  EXPECT_EQ(modern(4, 0, false).unet_pairs(), 0);
}

TEST(ModelParts, RefusedWhereTheyCannotBe) {
  auto refusal = [](const GPTConfig& c) {
    try {
      c.validate();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal(modern(4, 3, false)).find("value_embeds must be in [0, n_layer/2] = [0, 2]"), std::string::npos);
  EXPECT_NE(refusal(modern(4, -1, false)).find("value_embeds"), std::string::npos);
  EXPECT_NE(refusal(modern(1, 0, true)).find("unet_skips needs at least 2 layers"), std::string::npos);
  GPTConfig gpt{.vocab_size = 5, .n_layer = 2, .n_head = 2, .n_embd = 4, .block_size = 4};
  gpt.unet_skips = true;
  EXPECT_NE(refusal(gpt).find("modern architecture only"), std::string::npos);
  gpt.unet_skips = false, gpt.x0_residual = true;
  EXPECT_NE(refusal(gpt).find("modern architecture only"), std::string::npos);
  EXPECT_EQ(refusal(modern(4, 2, true)), "");
  // Through the registry: a model without the part refuses the field, naming the flag.
  for (const char* name : {"gpt", "mlp"}) {
    ModelConfig m;
    m.name = name, m.value_embeds = 1;
    try {
      find_model(name).validate(m);
      ADD_FAILURE() << name << " took --value-embeds";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--value-embeds: the model " + std::string(name) + " has no such part"),
                std::string::npos)
          << e.what();
    }
    m.value_embeds = 0, m.unet_skips = true;
    EXPECT_THROW(find_model(name).validate(m), std::invalid_argument) << name;
    m.unet_skips = false, m.x0_residual = true;
    EXPECT_THROW(find_model(name).validate(m), std::invalid_argument) << name;
  }
}

// The parameter table says the parts: names, shapes, init, groups (the value tables are
// looked up only, so --embed-lr's group; the scalars NoDecay: AdamW at --lr, never Muon), the
// parameter count, no matmul FLOPs (lookups and scalings), more activations.
TEST(ModelParts, TheParameterTableDescribesThem) {
  GPTConfig c = modern(4, 2, true, true);
  c.vocab_size = 11, c.n_embd = 8;
  const ParamTable t = TransformerLM::param_table(c), base = TransformerLM::param_table(modern(4, 0, false));
  Generator g(1);
  const TransformerLM m(c, DType::Float32, g);
  std::vector<std::string> names;
  for (const auto& [n, p] : m.named_parameters()) names.push_back(n);
  std::vector<std::string> from_table;
  for (const auto& [n, s] : t.shapes()) from_table.push_back(n);
  EXPECT_EQ(names, from_table);
  EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + 5),
            (std::vector<std::string>{"value_lambdas", "skip_weights", "tok_emb.weight", "value_embeds.0.weight",
                                      "value_embeds.1.weight"}));  // the model's own first, as torch's
  EXPECT_EQ(m.value_lambdas.shape(), (Shape{4, 2}));
  EXPECT_EQ(m.skip_weights.shape(), (Shape{2}));
  for (double v : m.value_lambdas.to_double_vector()) EXPECT_EQ(v, 0.5);
  for (double v : m.skip_weights.to_double_vector()) EXPECT_EQ(v, 1.0);
  for (const auto& b : *m.blocks) {
    EXPECT_EQ(b->x_lambda.to_double_vector(), std::vector<double>{1.0});
    EXPECT_EQ(b->x0_lambda.to_double_vector(), std::vector<double>{0.0});
  }
  EXPECT_EQ(t.lookup_tables(), (std::vector<std::string>{"tok_emb.weight", "value_embeds.0.weight", "value_embeds.1.weight"}));
  std::vector<std::string> scalars = {"value_lambdas", "skip_weights"};
  for (int i = 0; i < 4; ++i)
    for (const char* s : {"x_lambda", "x0_lambda"}) scalars.push_back("blocks." + std::to_string(i) + "." + s);
  EXPECT_EQ(t.names(OptimGroup::NoDecay), scalars);
  for (const auto& n : t.names(OptimGroup::Matrix)) EXPECT_EQ(n.rfind("blocks.", 0), 0u) << n;
  GPTConfig c_base = c;
  c_base.value_embeds = 0, c_base.unet_skips = false, c_base.x0_residual = false;
  const ParamTable plain = TransformerLM::param_table(c_base);
  EXPECT_EQ(t.num_parameters(), plain.num_parameters() + 2 * 11 * 8 + 4 * 2 + 2 + 4 * 2);
  EXPECT_EQ(t.forward_flops(64), plain.forward_flops(64));
  EXPECT_GT(TransformerLM::activation_floats_per_position(c), TransformerLM::activation_floats_per_position(c_base));
  EXPECT_GT(t.num_tensors(), base.num_tensors());
}

// Each part turned off by its scalars is the model without it, parameter for parameter: the
// value embeddings with (λ_v, λ_e) = (1, 0), the skips with weights 0, the x0 residual with
// (λ, μ) = (1, 0). So the parts are wired where the model says, and nowhere else.
TEST(ModelParts, EachPartOffByItsScalarsIsTheModelWithoutIt) {
  enum Part { Values, Skips, X0 };
  for (const Part part : {Values, Skips, X0}) {
    SCOPED_TRACE(part == Values ? "value embeddings" : part == Skips ? "unet skips" : "x0 residual");
    const GPTConfig with = modern(5, part == Values ? 2 : 0, part == Skips, part == X0), without = modern(5, 0, false);
    Generator g(2), h(3);
    TransformerLM a(with, DType::Float64, g), b(without, DType::Float64, h);
    randomise(a, g, 0.5);
    {
      NoGradGuard no_grad;
      for (const auto& [n, p] : b.named_parameters()) Tensor(p).copy_(a.named_parameters()[n]);
      if (part == Skips) Tensor(a.skip_weights).fill_(0.0);
      if (part == Values)
        for (int64_t r = 0; r < 4; ++r) a.value_lambdas.data<double>()[2 * r] = 1.0, a.value_lambdas.data<double>()[2 * r + 1] = 0.0;
      if (part == X0)
        for (const auto& blk : *a.blocks) blk->x_lambda.fill_(1.0), blk->x0_lambda.fill_(0.0);
    }
    expect_equal(a.forward(kIds), b.forward(kIds), "logits");
    {  // and on: the output moves
      NoGradGuard no_grad;
      if (part == Skips) Tensor(a.skip_weights).fill_(0.7);
      if (part == Values) a.value_lambdas.data<double>()[7] = 0.3;  // λ_e of layer 4 (table 1)
      if (part == X0) (*a.blocks)[3].x0_lambda.fill_(0.4);
    }
    const auto on = a.forward(kIds).to_double_vector(), off = b.forward(kIds).to_double_vector();
    double most = 0;
    for (size_t i = 0; i < on.size(); ++i) most = std::max(most, std::fabs(on[i] - off[i]));
    EXPECT_GT(most, 1e-3);
  }
}

// Float64 gradchecks of the loss over every parameter, first and second order, with each part
// on alone and all together (an odd layer count: the middle block has no table and no skip).
TEST(ModelParts, GradcheckFirstAndSecondOrderInFloat64) {
  struct Case {
    const char* what;
    GPTConfig c;
  };
  const Case cases[] = {{"value embeddings", modern(2, 1, false)},
                        {"unet skips", modern(3, 0, true)},
                        {"x0 residual", modern(2, 0, false, true)},
                        {"all three", modern(3, 1, true, true)}};
  for (const Case& k : cases) {
    SCOPED_TRACE(k.what);
    Generator g(4);
    TransformerLM m(k.c, DType::Float64, g);
    randomise(m, g, 0.5);
    std::vector<Tensor> params;
    std::vector<std::string> names;
    for (auto& [n, p] : m.named_parameters()) params.push_back(p), names.push_back(n);
    auto f = [&](const std::vector<Tensor>&) { return m.loss(kIds, kTargets); };
    const GradcheckReport first = gradcheck(f, params, {}, names);
    EXPECT_TRUE(first.passed()) << first.table();
    const GradcheckReport second = gradgradcheck(f, params, {}, names);
    EXPECT_TRUE(second.passed()) << second.table();
    EXPECT_EQ(second.inputs.size(), params.size() + 1);
  }
}

// A model file records a part only when it is on (a file without it reads as off, as every
// file from before the parts), and the model reads back to the same logits.
TEST(ModelParts, AModelFileRecordsThePartsAndReadsBack) {
  const auto dir = std::filesystem::temp_directory_path() / "attograd_model_parts";
  std::filesystem::create_directories(dir);
  const data::CharTokenizer tok = data::CharTokenizer::from_text(U"abcde");
  for (const bool on : {false, true}) {
    SCOPED_TRACE(on ? "parts on" : "parts off");
    ModelConfig c;
    c.name = "modern", c.vocab_size = 5, c.n_layer = 4, c.n_head = 2, c.n_embd = 4, c.block_size = 4;
    if (on) c.value_embeds = 1, c.unet_skips = true, c.x0_residual = true;
    Generator g(5);
    auto model = make_model(c, DType::Float32, g);
    auto& lm = dynamic_cast<TransformerLM&>(*model);
    randomise(lm, g, 0.5);
    const auto md = train::model_metadata(*model, tok);
    EXPECT_EQ(md.count("value_embeds"), on ? 1u : 0u);
    EXPECT_EQ(md.count("unet_skips"), on ? 1u : 0u);
    EXPECT_EQ(md.count("x0_residual"), on ? 1u : 0u);
    if (on) {
      EXPECT_EQ(md.at("value_embeds"), "1");
      EXPECT_EQ(md.at("unet_skips"), "true");
    }
    const std::string path = (dir / (on ? "on.safetensors" : "off.safetensors")).string();
    train::save_model(path, *model, tok);
    const train::LoadedModel back = train::load_model(path);
    EXPECT_EQ(back.model->model_config().value_embeds, c.value_embeds);
    EXPECT_EQ(back.model->model_config().unet_skips, c.unet_skips);
    EXPECT_EQ(back.model->model_config().x0_residual, c.x0_residual);
    model->eval();
    NoGradGuard no_grad;
    EXPECT_EQ(back.model->forward(kIds).to_double_vector(), model->forward(kIds).to_double_vector());
  }
  std::filesystem::remove_all(dir);
}
