// The character MLP (models/char_mlp.h) and the model interface: the second model trains,
// samples, evaluates, checkpoints and resumes through the same trainer and files as the GPT.
#include <gtest/gtest.h>

#include "tests/test_util.h"

#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "autograd/safetensors.h"
#include "models/char_mlp.h"
#include "models/registry.h"
#include "train/run_folder/checkpoint.h"
#include "train/run_folder/train_state.h"
#include "train/trainer.h"

using namespace ag;
using namespace ag::models;
namespace fs = std::filesystem;
using namespace ag::testing_util;

namespace {

ModelConfig mlp_config(int64_t vocab, int64_t block, int64_t embd, int64_t hidden) {
  ModelConfig c;
  c.name = "mlp";
  c.vocab_size = vocab, c.block_size = block, c.n_embd = embd, c.hidden = hidden;
  return c;
}

std::string corpus(const fs::path& dir) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "to be or not to be, that is the question " + std::to_string(i % 5) + "\n";
  const fs::path p = dir / "corpus.txt";
  std::ofstream(p) << text;
  return p.string();
}

train::TrainConfig mlp_run(const fs::path& dir, const std::string& name) {
  train::TrainConfig c;
  c.data_path = corpus(dir);
  c.out_dir = (dir / name).string();
  c.model = mlp_config(0, 6, 8, 32);
  c.batch_size = 8;
  c.iters = 120;
  c.warmup = 10;
  c.lr = 1e-2;
  c.min_lr = 1e-3;
  c.eval_every = 40;
  c.eval_iters = 2;
  c.log_every = 1;
  c.sample_tokens = 40;
  c.no_progress = true;
  return c;
}

std::vector<std::string> metrics_without_timing(const fs::path& run) {
  std::ifstream in(run / "metrics.jsonl");
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) {
    auto j = nlohmann::json::parse(l);
    j.erase("elapsed_s");
    j.erase("tokens_per_s");
    j.erase("ms_per_step");
    j.erase("mfu");
    out.push_back(j.dump());
  }
  return out;
}
}  // namespace

TEST(CharMLP, ParametersShapesAndRegistry) {
  Generator g(1);
  const auto m = make_model(mlp_config(7, 3, 4, 10), DType::Float32, g);
  EXPECT_EQ(m->model_config().name, "mlp");
  std::vector<std::string> names;
  for (const auto& [n, p] : m->named_parameters()) names.push_back(n + shape_str(p.shape()));
  EXPECT_EQ(names, (std::vector<std::string>{"wte.weight[8, 4]", "fc.weight[10, 12]", "fc.bias[10]",
                                              "head.weight[7, 10]", "head.bias[7]"}));
  EXPECT_EQ(m->attention(), nullptr) << "the MLP has no attention to show";
  EXPECT_NE(make_model(ModelConfig{}, DType::Float32, g)->attention(), nullptr) << "the GPT has";
  const Tensor logits = m->forward(Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 4, 5, 6}, {2, 3}));
  EXPECT_EQ(logits.shape(), Shape({2, 3, 7}));
  // Unknown names and bad fields are refused by name.
  ModelConfig bad = mlp_config(7, 3, 4, 10);
  bad.name = "rnn";
  try {
    make_model(bad, DType::Float32, g);
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown model 'rnn' (known: gpt, modern, mlp)"), std::string::npos) << e.what();
  }
  bad = mlp_config(7, 3, 4, 0);
  EXPECT_THROW(make_model(bad, DType::Float32, g), std::invalid_argument);
  bad = mlp_config(7, 3, 4, 10);
  bad.dropout = 0.1;
  EXPECT_THROW(make_model(bad, DType::Float32, g), std::invalid_argument);
  EXPECT_THROW(m->forward(Tensor::from_vector(std::vector<int64_t>{1, 2, 3, 4}, {1, 4})), std::invalid_argument)
      << "longer than block_size";
}

TEST(CharMLP, EachPositionSeesExactlyTheBlockSizeCharactersUpToIt) {
  Generator g(2);
  CharMLP m(mlp_config(9, 3, 4, 6), DType::Float64, g);
  NoGradGuard no_grad;
  const std::vector<int64_t> a = {1, 2, 3};
  auto logits_at = [&](const std::vector<int64_t>& x, int64_t t) {
    const Tensor l = m.forward(Tensor::from_vector(x, {1, static_cast<int64_t>(x.size())}));
    return narrow(narrow(l, 1, t, 1), 0, 0, 1).contiguous();  // (1, 1, V)
  };
  // Causal: position 1 does not see x[2]. Both inputs have the same length, so the same GEMMs
  // of the same shapes compute row 1 from the same values: the same bits on any BLAS kernel.
  auto b = a;
  b[2] = 7;
  EXPECT_EQ(logits_at(a, 1).to_double_vector(), logits_at(b, 1).to_double_vector());
  // Position 2 sees x[0], the first of its 3: changing it changes the logits by far more than
  // rounding.
  b = a;
  b[0] = 7;
  EXPECT_GT(max_rel(logits_at(a, 2), logits_at(b, 2)), 1e-3);
  // Position 0 sees padding, padding, x[0]: the same as a one-character sequence, and
  // position 1 the same as the last position of its two characters. The sequences differ in
  // length, so their GEMMs differ in shape, and a BLAS kernel may round such rows differently
  // (OpenBLAS's Haswell kernels do, its Cooperlake kernels happen not to): equal to float64
  // rounding, not bit for bit.
  EXPECT_LT(max_rel(logits_at(a, 0), logits_at({1}, 0)), 1e-13);
  EXPECT_LT(max_rel(logits_at(a, 1), logits_at({1, 2}, 1)), 1e-13);
  // The padding is its own row, not a character: padding differs from a repeated x[0].
  EXPECT_GT(max_rel(logits_at({1}, 0), logits_at({1, 1, 1}, 2)), 1e-3);
}

TEST(CharMLP, PassesGradcheckInFloat64) {
  Generator g(3);
  CharMLP m(mlp_config(5, 3, 2, 4), DType::Float64, g);
  const Tensor x = Tensor::from_vector(std::vector<int64_t>{0, 3, 3, 1, 4, 2}, {2, 3});
  const Tensor y = Tensor::from_vector(std::vector<int64_t>{3, 3, 1, 4, 2, 0}, {2, 3});
  std::vector<Tensor> params;
  std::vector<std::string> names;
  for (auto& [n, p] : m.named_parameters()) params.push_back(p), names.push_back(n);
  const GradcheckReport r = gradcheck([&](const std::vector<Tensor>&) { return m.loss(x, y); }, params, {}, names);
  EXPECT_TRUE(r.passed()) << r.table();
}

TEST(CharMLP, GreedySamplingFollowsTheForwardPass) {
  Generator g(4);
  CharMLP m(mlp_config(6, 3, 4, 8), DType::Float32, g);
  m.eval();
  const auto seq = m.generate({2}, {10, 0.0, 0, true}, g);
  ASSERT_EQ(seq.size(), 11u);
  NoGradGuard no_grad;
  for (size_t n = 1; n < seq.size(); ++n) {
    const int64_t from = std::max<int64_t>(0, static_cast<int64_t>(n) - 3);
    std::vector<int64_t> window(seq.begin() + from, seq.begin() + static_cast<int64_t>(n));
    const int64_t T = static_cast<int64_t>(window.size());
    const auto last = narrow(narrow(m.forward(Tensor::from_vector(window, {1, T})), 1, T - 1, 1), 0, 0, 1).to_double_vector();
    EXPECT_EQ(seq[n], std::max_element(last.begin(), last.end()) - last.begin()) << "token " << n;
  }
  EXPECT_THROW(m.generate({6}, {1, 0.0, 0, true}, g), std::invalid_argument);
}

TEST(CharMLP, TrainsChecksPointsResumesExactlyAndSamplesThroughTheTrainer) {
  const fs::path d = temp_dir("mlp_train");
  std::ostringstream log;
  const train::TrainConfig straight = mlp_run(d, "straight");
  const auto s = train::train_lm(straight, log);
  EXPECT_NE(log.str().find("model: mlp, context 6 characters of width 8, hidden 32"), std::string::npos) << log.str();
  const auto want = metrics_without_timing(straight.out_dir);
  ASSERT_EQ(want.size(), 120u + 4u);
  // It learns: the corpus repeats one line, so the loss falls far below log(vocab).
  const auto first = nlohmann::json::parse(want.front()), last = nlohmann::json::parse(want.back());
  EXPECT_LT(last["val_loss"].get<double>(), 0.5 * first["val_loss"].get<double>()) << want.back();
  EXPECT_EQ(s.sample.size(), 41u) << "a newline and 40 sampled characters";

  // The checkpoint names its model and loads as one.
  const auto f = SafeTensorsFile::load((fs::path(straight.out_dir) / "model.safetensors").string());
  EXPECT_EQ(f.metadata().at("format"), "attograd.CharMLP");
  EXPECT_EQ(f.metadata().at("hidden"), "32");
  EXPECT_EQ(f.metadata().count("n_layer"), 0u);
  const auto loaded = train::load_model(straight.out_dir);
  EXPECT_EQ(loaded.model->model_config().name, "mlp");
  EXPECT_EQ(loaded.model->block_size(), 6);
  EXPECT_EQ(train::read_train_state((fs::path(straight.out_dir) / "train_state.safetensors").string()).config.model.name,
            "mlp");

  // Interrupted and resumed: the same losses and the same bytes.
  train::TrainConfig c = mlp_run(d, "cut");
  train::RunHooks hooks;
  hooks.after_step = [](int64_t it) {
    if (it == 57) std::raise(SIGINT);
  };
  EXPECT_TRUE(train::train_lm(c, log, hooks).interrupted);
  const auto resumed = train::resume_lm(c.out_dir, "", 0, false, log);
  EXPECT_FALSE(resumed.interrupted);
  EXPECT_EQ(metrics_without_timing(c.out_dir), want);
  EXPECT_EQ(read_bytes(fs::path(c.out_dir) / "model.safetensors"), read_bytes(fs::path(straight.out_dir) / "model.safetensors"));
  EXPECT_EQ(resumed.sample, s.sample);
}

TEST(Checkpoint, GptFilesWithoutAFormatStillLoad) {
  const fs::path d = temp_dir("gpt_noformat");
  Generator g(5);
  const auto m = make_model(ModelConfig(GPTConfig{3, 1, 1, 4, 4, 0.0}), DType::Float32, g);
  const auto tok = data::CharTokenizer::from_chars({"a", "b", "c"});
  auto md = train::model_metadata(*m, tok);
  EXPECT_EQ(md.at("format"), "attograd.TransformerLM");
  EXPECT_EQ(md.size(), 6u) << "format, vocab, n_layer, n_head, n_embd, block_size: as before the interface";
  md.erase("format");
  std::vector<std::pair<std::string, Tensor>> ts;
  for (auto& [n, p] : m->named_parameters()) ts.emplace_back(n, p);
  save_safetensors((d / "m.safetensors").string(), ts, md);
  EXPECT_EQ(train::load_model((d / "m.safetensors").string()).model->model_config().name, "gpt");
  md["format"] = "attograd.RNN";
  save_safetensors((d / "m.safetensors").string(), ts, md);
  try {
    train::load_model((d / "m.safetensors").string());
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown model format 'attograd.RNN'"), std::string::npos) << e.what();
  }
}
