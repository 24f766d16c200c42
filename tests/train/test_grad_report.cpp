// The gradient report (train/logging/grad_report.h) and `attograd train --grad-report`'s files.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autograd/ops.h"
#include "models/transformer_lm.h"
#include "train/logging/grad_report.h"
#include "nn/utils/clip_grad.h"
#include "train/run_folder/train_state.h"
#include "train/trainer.h"

using namespace ag;
using namespace ag::train;
namespace fs = std::filesystem;

TEST(GradReport, LayerOfAParameterName) {
  EXPECT_EQ(layer_of("blocks.3.attn.in_proj_weight"), "blocks.3");
  EXPECT_EQ(layer_of("blocks.12.ln1.bias"), "blocks.12");
  EXPECT_EQ(layer_of("tok_emb.weight"), "tok_emb");
  EXPECT_EQ(layer_of("ln_f.bias"), "ln_f");
  EXPECT_EQ(layer_of("w"), "w");
}

TEST(GradReport, NormsRatiosAndTotalsByHand) {
  Tensor a = Tensor::from_vector(std::vector<double>{3, 4}, {2}).requires_grad_();   // |a| = 5
  Tensor b = Tensor::from_vector(std::vector<double>{0, 0}, {1, 2}).requires_grad_();  // |b| = 0
  Tensor c = Tensor::ones({4}).requires_grad_();                                      // no gradient
  a.set_grad(Tensor::from_vector(std::vector<double>{0, 0.5}, {2}));                   // |g| = 0.5
  b.set_grad(Tensor::from_vector(std::vector<double>{1.2, 0.5}, {1, 2}));              // |g| = 1.3
  const GradReport r = grad_report({{"blocks.0.a", a}, {"blocks.0.b", b}, {"head.c", c}});
  ASSERT_EQ(r.params.size(), 3u);
  EXPECT_NEAR(r.params[0].value_norm, 5, 1e-6);
  EXPECT_NEAR(r.params[0].grad_norm, 0.5, 1e-6);
  EXPECT_NEAR(r.params[0].ratio(), 0.1, 1e-6);
  EXPECT_TRUE(std::isnan(r.params[1].ratio())) << "zero values: no ratio";
  EXPECT_TRUE(std::isnan(r.params[2].grad_norm));
  EXPECT_EQ(r.without_grad, 1);
  EXPECT_EQ(r.max_ratio, 0);
  ASSERT_EQ(r.layers.size(), 2u);
  EXPECT_EQ(r.layers[0].name, "blocks.0");
  EXPECT_EQ(r.layers[0].tensors, 2);
  EXPECT_EQ(r.layers[0].numel, 4);
  EXPECT_NEAR(r.layers[0].grad_norm, std::sqrt(0.25 + 1.69), 1e-6);
  EXPECT_EQ(r.layers[1].name, "head");
  EXPECT_NEAR(r.total.value_norm, std::sqrt(25.0 + 4.0), 1e-6);
  EXPECT_NEAR(r.total.grad_norm, std::sqrt(0.25 + 1.69), 1e-6);
  const std::string table = format_grad_report(r);
  EXPECT_NE(table.find("blocks.0.b  [1, 2]"), std::string::npos) << table;
  EXPECT_NE(table.find("n/a"), std::string::npos);
  EXPECT_NE(table.find("1 parameter(s) received no gradient"), std::string::npos);
  EXPECT_EQ(grad_report_summary(r),
            "grad norm 1.393 (|value| 5.385); largest |grad|/|value| 1.00e-01 in blocks.0.a; 1 without gradient");
}

TEST(GradReport, GlobalNormMatchesClipGradNormOnAModel) {
  models::GPTConfig cfg;
  cfg.vocab_size = 9, cfg.n_layer = 2, cfg.n_head = 2, cfg.n_embd = 8, cfg.block_size = 8;
  Generator gen(5);
  models::TransformerLM model(cfg, DType::Float32, gen);
  const Tensor idx = Tensor::randint(0, 9, {2, 8}, gen), tgt = Tensor::randint(0, 9, {2, 8}, gen);
  model.loss(idx, tgt).backward();
  const auto params = model.named_parameters();
  const GradReport r = grad_report(params);
  EXPECT_EQ(r.params.size(), params.size());
  EXPECT_EQ(r.without_grad, 0);
  const std::vector<std::string> layers = {"tok_emb", "pos_emb", "blocks.0", "blocks.1", "ln_f"};
  ASSERT_EQ(r.layers.size(), layers.size());
  double layer_sq = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    EXPECT_EQ(r.layers[i].name, layers[i]);
    layer_sq += r.layers[i].grad_norm * r.layers[i].grad_norm;
  }
  EXPECT_NEAR(std::sqrt(layer_sq), r.total.grad_norm, 1e-6 * r.total.grad_norm);
  // clip_grad_norm_ computes the same global norm on its own (and clips nothing at 1e9).
  EXPECT_NEAR(nn::utils::clip_grad_norm_(model.parameters(), 1e9), r.total.grad_norm, 1e-5 * r.total.grad_norm);
}

TEST(GradReport, TrainWritesOneReportPerEvaluationAfterAStep) {
  const fs::path dir = fs::temp_directory_path() / ("attograd_test_grad_report_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string text;
  for (int i = 0; i < 200; ++i) text += "the quick brown fox jumps over the lazy dog\n";
  std::ofstream(dir / "corpus.txt") << text;
  TrainConfig c;
  c.data_path = (dir / "corpus.txt").string();
  c.out_dir = (dir / "run").string();
  c.model.n_layer = 1, c.model.n_head = 2, c.model.n_embd = 8, c.model.block_size = 8;
  c.batch_size = 2, c.iters = 5, c.eval_every = 2, c.eval_iters = 1, c.log_every = 5, c.sample_tokens = 0;
  c.no_progress = true;
  c.grad_report = true;
  std::ostringstream out;
  train_lm(c, out);
  EXPECT_FALSE(fs::exists(dir / "run" / "grad_report_iter0.txt")) << "no step before the first evaluation";
  for (int it : {2, 4, 5}) {
    const fs::path p = dir / "run" / ("grad_report_iter" + std::to_string(it) + ".txt");
    ASSERT_TRUE(fs::exists(p)) << p;
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_NE(ss.str().find("gradients of step " + std::to_string(it - 1)), std::string::npos) << ss.str();
    EXPECT_NE(ss.str().find("blocks.0.attn.in_proj_weight"), std::string::npos);
    EXPECT_NE(ss.str().find("\ntotal "), std::string::npos);
    EXPECT_NE(out.str().find("grads iter " + std::to_string(it) + "  grad norm "), std::string::npos) << out.str();
  }
  // The flag is part of the saved configuration, so a resumed run keeps writing reports.
  EXPECT_TRUE(config_from_json(config_to_json(c), "test").grad_report);
  auto j = nlohmann::json::parse(config_to_json(c));
  j.erase("grad_report");  // a train state written before the flag existed
  EXPECT_FALSE(config_from_json(j.dump(), "old").grad_report);
  fs::remove_all(dir);
}
