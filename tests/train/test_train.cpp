// The schedule, model checkpoints and reproducible training runs (optimizers: test_optim.cpp).
#include <gtest/gtest.h>

#include "tests/test_util.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "autograd/safetensors.h"
#include "models/transformer_lm.h"
#include "train/run_folder/checkpoint.h"
#include "train/schedules/registry.h"
#include "train/trainer.h"

using namespace ag;
using namespace ag::train;
namespace fs = std::filesystem;
using namespace ag::testing_util;

namespace {

// A small corpus with enough structure to learn from.
std::string write_corpus(const fs::path& dir) {
  std::string text;
  for (int i = 0; i < 300; ++i) text += "the quick brown fox jumps over the lazy dog " + std::to_string(i % 7) + "\n";
  const fs::path p = dir / "corpus.txt";
  std::ofstream(p) << text;
  return p.string();
}

}  // namespace

// nanoGPT's schedule as a factor on each group's peak: warmup, then a cosine to --min-lr/--lr.
TEST(Optim, WarmupThenCosineToMinLr) {
  TrainConfig c;  // lr 1e-3, min-lr 1e-4, warmup 100, cosine
  auto lr = [&](int64_t it) { return c.lr * schedule_factor(c, it, 2000); };
  EXPECT_DOUBLE_EQ(lr(0), 1e-3 / 101);
  EXPECT_DOUBLE_EQ(lr(99), 1e-3 * 100 / 101);
  EXPECT_DOUBLE_EQ(lr(100), 1e-3);
  EXPECT_NEAR(lr(1050), 1e-4 + 0.5 * 9e-4, 1e-15);
  EXPECT_NEAR(lr(2000), 1e-4, 1e-15);
  EXPECT_DOUBLE_EQ(lr(5000), 1e-4);
}

// The trainer's default run ends at the validation loss `make train` is known for only if its
// learning rates reach AdamW's float32 update unchanged: each step's step size (lr over the
// bias correction) and decay (1 − lr·weight_decay) rounded to float32 are those of nanoGPT's
// formula, min_lr + coeff·(lr − min_lr), which the factor form rounds differently in the last
// bit of a double.
TEST(Optim, TheDefaultScheduleGivesAdamWTheSameFloat32UpdateAsNanoGPTsFormula) {
  const TrainConfig c;
  int differ = 0;
  for (int64_t it = 0; it < c.iters; ++it) {
    double nanogpt = 0;
    if (it < c.warmup) {
      nanogpt = c.lr * static_cast<double>(it + 1) / static_cast<double>(c.warmup + 1);
    } else {
      const double ratio = static_cast<double>(it - c.warmup) / static_cast<double>(c.iters - c.warmup);
      nanogpt = c.min_lr + 0.5 * (1.0 + std::cos(M_PI * ratio)) * (c.lr - c.min_lr);
    }
    const double ours = c.lr * schedule_factor(c, it, c.iters);
    const double bc1 = 1 - std::pow(c.beta1, static_cast<double>(it + 1));
    differ += static_cast<float>(ours / bc1) != static_cast<float>(nanogpt / bc1);
    differ += static_cast<float>(1 - ours * c.weight_decay) != static_cast<float>(1 - nanogpt * c.weight_decay);
  }
  EXPECT_EQ(differ, 0);
}

TEST(Checkpoint, ModelRoundTripAndMetadata) {
  const fs::path d = temp_dir("ckpt");
  models::GPTConfig cfg{4, 2, 2, 8, 6, 0.0};
  models::TransformerLM m(cfg);
  const auto tok = data::CharTokenizer::from_chars({"\n", "a", "b", "é"});
  save_model((d / "model.safetensors").string(), m, tok);
  const auto f = SafeTensorsFile::load((d / "model.safetensors").string());
  EXPECT_EQ(f.metadata().at("n_layer"), "2");
  EXPECT_EQ(f.metadata().at("block_size"), "6");
  EXPECT_EQ(nlohmann::json::parse(f.metadata().at("vocab")), nlohmann::json({"\n", "a", "b", "é"}));
  EXPECT_EQ(f.info("tok_emb.weight").dtype, "F32");
  const auto loaded = load_model(d.string());  // a run folder works too
  EXPECT_TRUE(loaded.tokenizer == tok);
  EXPECT_FALSE(loaded.model->is_training());
  for (auto& [n, p] : m.named_parameters())
    EXPECT_EQ(p.to_double_vector(), loaded.model->state_dict().at(n).to_double_vector()) << n;
}

TEST(Checkpoint, BadModelFilesAreRefusedWithTheFileName) {
  const fs::path d = temp_dir("badckpt");
  models::TransformerLM m(models::GPTConfig{3, 1, 1, 4, 4, 0.0});
  const auto tok = data::CharTokenizer::from_chars({"a", "b", "c"});
  std::vector<std::pair<std::string, Tensor>> ts;
  for (auto& [n, p] : m.named_parameters()) ts.emplace_back(n, p);
  auto meta = model_metadata(m, tok);
  auto expect_refused = [&](const std::vector<std::pair<std::string, Tensor>>& t, const std::map<std::string, std::string>& md,
                            const std::string& needle) {
    const std::string p = (d / "m.safetensors").string();
    save_safetensors(p, t, md);
    try {
      load_model(p);
      ADD_FAILURE() << "accepted; expected an error mentioning " << needle;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("m.safetensors"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto md = meta;
  md.erase("n_embd");
  expect_refused(ts, md, "n_embd");
  md = meta;
  md["vocab"] = "[\"a\", \"b\"";
  expect_refused(ts, md, "vocab");
  md = meta;
  md["vocab"] = "[\"a\", \"b\", \"c\", \"d\"]";  // 4 characters but tok_emb has 3 rows
  expect_refused(ts, md, "shape");
  auto missing = ts;
  missing.pop_back();
  expect_refused(missing, meta, "missing");
  auto extra = ts;
  extra.emplace_back("lm_head.weight", Tensor::zeros({3, 4}));
  expect_refused(extra, meta, "unexpected tensor 'lm_head.weight'");
  auto nan = ts;
  nan[0].second = Tensor::full(nan[0].second.shape(), NAN);
  expect_refused(nan, meta, "non-finite");
  EXPECT_THROW(load_model((d / "nope").string()), std::runtime_error);
}

TEST(Training, TwoShortRunsFromOneSeedAreBitIdentical) {
  const fs::path d = temp_dir("repro");
  TrainConfig c;
  c.data_path = write_corpus(d);
  c.model = models::GPTConfig{0, 1, 2, 16, 16, 0.1};  // dropout on, so its generator is exercised too
  c.batch_size = 4;
  c.iters = 10;
  c.eval_every = 5;
  c.eval_iters = 2;
  c.log_every = 1;
  c.sample_tokens = 20;
  std::ostringstream log1, log2;
  c.out_dir = (d / "a").string();
  const auto s1 = train_lm(c, log1);
  c.out_dir = (d / "b").string();
  const auto s2 = train_lm(c, log2);
  auto losses = [](const fs::path& p) {
    std::vector<std::string> out;
    for (const auto& l : read_lines(p)) {
      auto j = nlohmann::json::parse(l);
      out.push_back(j["train_loss"].dump() + "/" + j["val_loss"].dump());
    }
    return out;
  };
  const auto l1 = losses(d / "a" / "metrics.jsonl"), l2 = losses(d / "b" / "metrics.jsonl");
  EXPECT_EQ(l1.size(), 10u + 3u);  // a line per step and three evaluations (0, 5, 10)
  EXPECT_EQ(l1, l2);
  EXPECT_EQ(s1.sample, s2.sample);
  EXPECT_EQ(read_bytes(d / "a" / "model.safetensors"), read_bytes(d / "b" / "model.safetensors"));
  // A different seed gives a different run.
  c.seed = 7;
  c.out_dir = (d / "c").string();
  train_lm(c, log1);
  EXPECT_NE(losses(d / "c" / "metrics.jsonl"), l1);
}

// Not bit for bit: on 2 threads the pool splits each GEMM into row blocks, so the products have
// other shapes than on 1, and a BLAS kernel may round them differently (docs/checkpoints.md,
// "Determinism"). The runs agree to rounding.
TEST(Training, OneAndTwoThreadsAgreeToRounding) {
  const fs::path d = temp_dir("threads");
  const int saved = parallel::num_threads();
  TrainConfig c;
  c.data_path = write_corpus(d);
  c.model = models::GPTConfig{0, 1, 2, 16, 16, 0.0};
  c.batch_size = 4;
  c.iters = 10;
  c.eval_every = 5;
  c.eval_iters = 2;
  c.log_every = 1;
  c.sample_tokens = 0;
  std::ostringstream log;
  std::vector<std::vector<double>> losses;
  for (int threads : {1, 2}) {
    c.threads = threads;
    c.out_dir = (d / std::to_string(threads)).string();
    train_lm(c, log);
    std::vector<double> l;
    for (const auto& line : read_lines(fs::path(c.out_dir) / "metrics.jsonl"))
      l.push_back(nlohmann::json::parse(line)["train_loss"].get<double>());
    losses.push_back(l);
  }
  parallel::set_num_threads(saved);
  ASSERT_EQ(losses[0].size(), losses[1].size());
  for (size_t i = 0; i < losses[0].size(); ++i) EXPECT_NEAR(losses[0][i], losses[1][i], 1e-5 * losses[1][i]) << i;
}

TEST(Training, MetricsLinesHaveTheDocumentedKeys) {
  const fs::path d = temp_dir("metrics");
  // A peak measured now, on the machine as loaded as this run (the kept one may be older).
  ScopedEnv cache("XDG_CACHE_HOME", (d / "cache").c_str());
  TrainConfig c;
  c.data_path = write_corpus(d);
  c.out_dir = (d / "run").string();
  c.model = models::GPTConfig{0, 1, 1, 8, 8, 0.0};
  c.batch_size = 2;
  c.iters = 4;
  c.eval_every = 2;
  c.eval_iters = 1;
  c.log_every = 2;
  c.sample_tokens = 0;
  std::ostringstream log;
  train_lm(c, log);
  const auto lines = read_lines(d / "run" / "metrics.jsonl");
  ASSERT_FALSE(lines.empty());
  for (const auto& l : lines) {
    const auto j = nlohmann::json::parse(l);
    for (const char* k : {"iter", "train_loss", "val_loss", "lr", "grad_norm", "tokens_per_s", "ms_per_step", "mfu", "elapsed_s"})
      EXPECT_TRUE(j.contains(k)) << k << " missing in " << l;
    // A step line's MFU is its throughput's: above 0 and below the measured peak.
    if (j["val_loss"].is_null()) {
      EXPECT_GT(j["mfu"].get<double>(), 0.0) << l;
      EXPECT_LT(j["mfu"].get<double>(), 1.0) << l;
    }
  }
  // nanoGPT's "mfu" and ms/step on every log line, against the peak the run prints first.
  EXPECT_NE(log.str().find("mfu: against an sgemm peak of "), std::string::npos) << log.str();
  EXPECT_NE(log.str().find(" ms/step  "), std::string::npos) << log.str();
  EXPECT_NE(log.str().find(" tok/s  mfu "), std::string::npos) << log.str();
  EXPECT_TRUE(fs::exists(d / "run" / "model.safetensors"));
}

TEST(Training, BadInputGivesClearErrors) {
  const fs::path d = temp_dir("badtrain");
  TrainConfig c;
  c.out_dir = (d / "run").string();
  c.data_path = (d / "missing.txt").string();
  std::ostringstream log;
  EXPECT_THROW(train_lm(c, log), std::runtime_error);
  std::ofstream(d / "short.txt") << "abc";
  c.data_path = (d / "short.txt").string();
  EXPECT_THROW(train_lm(c, log), std::runtime_error);
  c.data_path = write_corpus(d);
  c.batch_size = 0;
  EXPECT_THROW(train_lm(c, log), std::invalid_argument);
}
