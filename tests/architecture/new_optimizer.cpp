// docs/architecture.md, "A new optimizer": `attograd train --optimizer sgd`, torch's SGD with
// Nesterov momentum, added as a row of the optimizer registry (train/optimizers/registry.h): how
// it builds its parameter groups from the model's parameter table, the setting of its own it
// reads (--sgd-momentum: a flag, a config key and a saved field), and what the run's header says
// of it. Nothing else changes: the run steps it and schedules its groups as any optimizer, and
// the train state saves and restores it through its state dict, so a run with it resumes exactly.
// In the library the row is a file train/optimizers/sgd.cpp and one line in registry.cpp's
// list; a program of its own adds it with OptimizerRegistry::add, as this one does.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/train_flags.h"
#include "optim/sgd.h"
#include "tests/test_util.h"
#include "train/config/run_config.h"
#include "train/optimizers/registry.h"
#include "train/trainer.h"

namespace ag::example {

const train::Setting kSgdMomentum{"sgd-momentum", "sgd_momentum", 0.9, "momentum of --optimizer sgd (Nesterov)",
                                  train::Check::Fraction};

// Two groups from the model's parameter table, as nanoGPT's: the parameters it decays (weight
// matrices, embeddings) with --weight-decay, the others (biases, gains) without.
std::unique_ptr<optim::Optimizer> build_sgd(const models::LanguageModel& model, const train::TrainConfig& cfg) {
  const optim::SGDOptions options{.lr = cfg.lr, .momentum = cfg.settings.get(kSgdMomentum), .weight_decay = cfg.weight_decay,
                                  .nesterov = true};
  optim::SGD::ParamGroup decay{{}, options}, no_decay{{}, options};
  no_decay.options.weight_decay = 0.0;
  const std::vector<std::string> undecayed = model.parameter_table().names(models::OptimGroup::NoDecay);
  const std::set<std::string> no(undecayed.begin(), undecayed.end());
  for (const auto& [name, p] : model.named_parameters()) (no.count(name) ? no_decay : decay).params.push_back(p);
  return std::make_unique<optim::SGD>(std::vector<optim::SGD::ParamGroup>{decay, no_decay});
}

train::OptimizerEntry sgd_optimizer() {
  return {"sgd", "torch's SGD with Nesterov momentum (--sgd-momentum), --weight-decay on the matrices and embeddings",
          {kSgdMomentum}, build_sgd,
          [](const train::TrainConfig& cfg) { return "sgd (momentum " + train::format_value(cfg.settings.get(kSgdMomentum)) + ")"; }};
}

// The one registry line (once per process).
void register_sgd() { static const train::OptimizerEntry& row = train::OptimizerRegistry::add(sgd_optimizer()); (void)row; }

TEST(ArchitectureExample, ANewOptimizerTrainsAndResumesExactly) {
  namespace fs = std::filesystem;
  register_sgd();
  const fs::path d = testing_util::temp_dir("example_optimizer");
  std::string text;
  for (int i = 0; i < 100; ++i) text += "hello world " + std::to_string(i % 3) + "\n";
  std::ofstream(d / "corpus.txt") << text;

  // Its setting is a flag of `attograd train` like any field, read as the flag reader reads them.
  cxxopts::Options options("train");
  cli::add_train_flags(options);
  std::vector<const char*> argv = {"train", "--optimizer", "sgd", "--sgd-momentum", "0.8", "--lr", "0.05"};
  train::TrainConfig c = cli::read_train_flags(options.parse(static_cast<int>(argv.size()), argv.data())).config;
  EXPECT_EQ(c.optimizer.name(), "sgd");
  EXPECT_EQ(c.settings.get(kSgdMomentum), 0.8);
  c.data_path = (d / "corpus.txt").string();
  c.model = models::GPTConfig{0, 1, 2, 16, 16, 0.0};
  c.batch_size = 4, c.iters = 60, c.eval_every = 20, c.eval_iters = 2, c.sample_tokens = 0, c.no_progress = true;

  auto run_dir = [&](const std::string& name) { return (d / name).string(); };
  std::ostringstream log;
  train::TrainConfig straight = c;
  straight.out_dir = run_dir("straight");
  const train::TrainSummary s = train::train_lm(straight, log);
  EXPECT_LT(s.val_loss, 1.8) << log.str();  // from ln 12 = 2.48 (1.35 on the machine that wrote this)
  EXPECT_NE(log.str().find("recipe: sgd (momentum 0.8), cosine schedule"), std::string::npos) << log.str();

  // Cut after step 30 and resumed: the same model, bit for bit.
  train::TrainConfig cut = c;
  cut.out_dir = run_dir("cut");
  train::RunHooks hooks;
  hooks.after_step = [](int64_t it) {
    if (it == 30) std::raise(SIGINT);
  };
  EXPECT_TRUE(train::train_lm(cut, log, hooks).interrupted);
  EXPECT_FALSE(train::resume_lm(cut.out_dir, "", 0, false, log).interrupted);
  EXPECT_EQ(testing_util::read_bytes(fs::path(cut.out_dir) / "model.safetensors"),
            testing_util::read_bytes(fs::path(straight.out_dir) / "model.safetensors"));
}

}  // namespace ag::example
