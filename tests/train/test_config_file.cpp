// TOML run configurations (train/config/config_file.h): `attograd train --config FILE`, configs/*.toml
// and the config.toml of a run folder, all through the field table of train/config/run_config.h.
#include <gtest/gtest.h>

#include "tests/test_util.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/train_flags.h"
#include "models/registry.h"
#include "train/config/config_check.h"
#include "train/config/config_file.h"
#include "train/trainer.h"

using namespace ag;
using namespace ag::train;
namespace fs = std::filesystem;
using namespace ag::testing_util;

namespace {
template <class T>
T changed(const T& def) {
  if constexpr (ChoiceField<T>) {  // another of its values
    for (const T& c : choice_values<T>())
      if (!(c == def)) return c;
    return def;
  } else if constexpr (std::is_same_v<T, bool>) return !def;
  else if constexpr (std::is_same_v<T, std::string>) return def + "_x \"quoted\" \\ é";
  else if constexpr (std::is_floating_point_v<T>) return def * 1.5 + 0.125 + 1e-7;
  else return def + static_cast<T>(5);
}

std::vector<std::string> differences(const TrainConfig& a, const TrainConfig& b) {
  std::vector<std::string> out;
  for_each_field(
      [&](const FieldInfo& f, const auto& x, const auto& y) {
        if (!(x == y)) out.push_back(std::string(f.key) + ": " + format_value(x) + " != " + format_value(y));
      },
      a, b);
  return out;
}

std::string toml_error_of(const std::string& text) {
  TrainConfig c;
  try {
    parse_config_toml(text, "run.toml", c);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(accepted)";
}
}  // namespace

TEST(ConfigFile, EveryFieldRoundTripsThroughToml) {
  TrainConfig want;
  visit_fields(want, [](auto& v, const FieldInfo&) { v = changed(v); });
  want.model.vocab_size = 65;
  // With init-from the model's fields are written as comments (HardenDeadEnds.TheConfigOfAnInitFromRunIsAcceptedBack).
  want.init_from.clear();
  const std::string text = config_to_toml(want);
  TrainConfig got;
  const auto given = parse_config_toml(text, "config.toml", got);
  got.model.vocab_size = 65;
  EXPECT_EQ(differences(got, want), std::vector<std::string>{}) << text;
  std::set<std::string> all;
  visit_fields(want, [&](const auto&, const FieldInfo& f) {
    all.insert(f.flag);
    EXPECT_NE(text.find(std::string("# ") + f.help + "\n" + f.flag + " = "), std::string::npos) << f.flag;
  });
  EXPECT_EQ(given, all);
  // Doubles stay floats in TOML, even the round ones.
  EXPECT_NE(config_to_toml(TrainConfig{}).find("\ngrad-clip = 1.0\n"), std::string::npos);
}

TEST(ConfigFile, ErrorsNameTheFileTheLineAndTheKey) {
  EXPECT_NE(toml_error_of("layers = 4\nlayres = 5\n").find("run.toml:2: unknown key 'layres'"), std::string::npos);
  EXPECT_NE(toml_error_of("lr = \"fast\"\n").find("run.toml:1: 'lr' must be a number"), std::string::npos);
  EXPECT_NE(toml_error_of("\n\nlayers = 2.5\n").find("run.toml:3: 'layers' must be an integer"), std::string::npos);
  EXPECT_NE(toml_error_of("seed = -1\n").find("'seed' must be an integer ≥ 0"), std::string::npos);
  EXPECT_NE(toml_error_of("threads = 99999999999\n").find("'threads' must be an integer in range"), std::string::npos);
  EXPECT_NE(toml_error_of("skip-nonfinite = 1\n").find("'skip-nonfinite' must be true or false"), std::string::npos);
  EXPECT_NE(toml_error_of("[model]\nlayers = 2\n").find("'model' must be a string"), std::string::npos);
  EXPECT_NE(toml_error_of("layers = [\n").find("run.toml:"), std::string::npos);
  EXPECT_EQ(toml_error_of("lr = 3\n"), "(accepted)") << "an integer is a fine number";
  TrainConfig c;
  EXPECT_THROW(read_config_toml("/nonexistent/run.toml", c), std::runtime_error);
}

TEST(ConfigFile, ShippedConfigsAreTheDefaultsAndTheBenchLargeModel) {
  TrainConfig c;
  const auto given = read_config_toml(std::string(ATTOGRAD_SOURCE_DIR) + "/configs/shakespeare_char.toml", c);
  EXPECT_EQ(differences(c, TrainConfig{}), std::vector<std::string>{});
  // It spells out every field that makes the run (not where the files are or how it is shown).
  visit_fields(c, [&](const auto&, const FieldInfo& f) {
    const std::string flag = f.flag;
    if (f.on_resume == OnResume::Refuse && flag != "out" && flag != "init-from") {  // files, not the run
      EXPECT_TRUE(given.count(flag)) << flag;
    }
  });
  TrainConfig large;
  read_config_toml(std::string(ATTOGRAD_SOURCE_DIR) + "/configs/large.toml", large);
  EXPECT_EQ(large.model.n_layer, 6);
  EXPECT_EQ(large.model.n_head, 6);
  EXPECT_EQ(large.model.n_embd, 384);
  EXPECT_EQ(large.model.block_size, 256);
  EXPECT_EQ(large.batch_size, 16);
  EXPECT_NO_THROW(models::find_model(large.model.name).validate(large.model));
}

// configs/speedrun.toml (docs/speedrun.md): the modern model under a time budget, which needs
// the wsd schedule, evaluated on the whole validation split; valid as `attograd train` checks it.
TEST(ConfigFile, TheSpeedrunConfigIsAValidModernRunOverTheWholeValidationSplit) {
  TrainConfig c;
  read_config_toml(std::string(ATTOGRAD_SOURCE_DIR) + "/configs/speedrun.toml", c);
  EXPECT_EQ(c.model.name, "modern");
  EXPECT_EQ(c.schedule, ScheduleChoice("wsd"));
  EXPECT_EQ(c.optimizer, OptimizerChoice("muon"));
  EXPECT_EQ(c.eval_iters, kEvalWholeSplit);
  c.time_budget = 120;
  c.data_path = "corpus.txt";
  c.out_dir = "runs/speedrun";
  EXPECT_NO_THROW(validate_config(c, 1));
}

TEST(ConfigFile, FlagsOverrideTheFileWhichOverridesTheDefaults) {
  const fs::path d = temp_dir("config_flags");
  const std::string file = (d / "run.toml").string();
  std::ofstream(file) << "layers = 2\nlr = 0.01\ndata = \"from_file.txt\"\n";
  cxxopts::Options options("train");
  cli::add_train_flags(options);
  const std::vector<std::string> args = {"train", "--config=" + file, "--lr=0.5"};
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  const auto flags = cli::read_train_flags(options.parse(static_cast<int>(argv.size()), argv.data()));
  EXPECT_EQ(flags.config.model.n_layer, 2);         // the file
  EXPECT_EQ(flags.config.lr, 0.5);                  // the flag over the file
  EXPECT_EQ(flags.config.data_path, "from_file.txt");
  EXPECT_EQ(flags.config.iters, TrainConfig{}.iters);  // the default
  EXPECT_EQ(flags.given, std::set<std::string>{"lr"});
  EXPECT_EQ(flags.from_file, (std::set<std::string>{"layers", "lr", "data"}));
}

TEST(ConfigFile, ARunFolderKeepsItsResolvedConfiguration) {
  const fs::path d = temp_dir("config_run");
  std::string text;
  for (int i = 0; i < 100; ++i) text += "to be or not to be, that is the question\n";
  std::ofstream(d / "corpus.txt") << text;
  TrainConfig c;
  c.data_path = (d / "corpus.txt").string();
  c.out_dir = (d / "run").string();
  c.model.n_layer = 1, c.model.n_head = 2, c.model.n_embd = 8, c.model.block_size = 8;
  c.batch_size = 2, c.iters = 3, c.eval_every = 3, c.eval_iters = 1, c.sample_tokens = 0, c.no_progress = true;
  std::ostringstream log;
  train_lm(c, log);
  TrainConfig back;
  read_config_toml((d / "run" / "config.toml").string(), back);
  back.model.vocab_size = c.model.vocab_size;
  EXPECT_NE(back.gemm, GemmChoice::Auto);  // resolved: the provider --gemm auto chose
  EXPECT_NE(back.gemm_bf16, GemmBf16Choice::Auto);  // and the bf16 interface
  c.gemm = back.gemm;
  c.gemm_bf16 = back.gemm_bf16;
  EXPECT_EQ(differences(back, c), std::vector<std::string>{});
  std::ifstream in(d / "run" / "config.toml");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("# vocab_size 15 (from the corpus)"), std::string::npos) << ss.str();
}
