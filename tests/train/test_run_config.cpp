// The run configuration's field table (train/config/run_config.h) drives the flags of `attograd
// train`, the train state's JSON and the --resume rules. These tests walk every row, so a
// field that one of them drops or mangles fails here.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "cli/commands.h"
#include "cli/train_flags.h"
#include "train/config/run_config.h"

namespace ag {
namespace {

using train::FieldInfo;
using train::OnResume;
using train::TrainConfig;

// A value of every field that differs from its default (`salt` picks one of several).
template <class T>
T changed(const T& def, int salt) {
  if constexpr (train::ChoiceField<T>) {  // another of its values than the default, by salt
    const std::vector<T> values = train::choice_values<T>();
    for (size_t i = 0; i < values.size(); ++i)
      if (!(values[(i + static_cast<size_t>(salt)) % values.size()] == def)) return values[(i + static_cast<size_t>(salt)) % values.size()];
    return def;
  } else if constexpr (std::is_same_v<T, bool>) return !def;
  else if constexpr (std::is_same_v<T, std::string>) return def + "_x" + std::to_string(salt);
  else if constexpr (std::is_floating_point_v<T>) return def * 1.5 + 0.125 * salt + 1e-7;  // not a round number
  else return def + static_cast<T>(3 + salt);
}

TrainConfig all_changed(int salt) {
  TrainConfig c;
  train::visit_fields(c, [&](auto& v, const FieldInfo&) { v = changed(v, salt); });
  c.model.vocab_size = 40 + salt;
  return c;
}

// "key: a != b" for every field on which the two configurations differ.
std::vector<std::string> differences(const TrainConfig& a, const TrainConfig& b) {
  std::vector<std::string> out;
  train::for_each_field(
      [&](const FieldInfo& f, const auto& x, const auto& y) {
        if (!(x == y)) out.push_back(std::string(f.key) + ": " + train::format_value(x) + " != " + train::format_value(y));
      },
      a, b);
  return out;
}

cxxopts::ParseResult parse(cxxopts::Options& options, const std::vector<std::string>& args) {
  std::vector<const char*> argv = {"train"};
  for (const auto& a : args) argv.push_back(a.c_str());
  return options.parse(static_cast<int>(argv.size()), argv.data());
}

TEST(RunConfig, EveryFieldHasAFlagHelpAndAUniqueKey) {
  std::set<std::string> flags, keys;
  int n = 0;
  const TrainConfig defaults;
  train::visit_fields(defaults, [&](const auto&, const FieldInfo& f) {
    ++n;
    EXPECT_GT(std::string(f.flag).size(), 0u) << f.key;
    EXPECT_GT(std::string(f.help).size(), 10u) << f.key << ": help text";
    EXPECT_TRUE(flags.insert(f.flag).second) << "flag --" << f.flag << " twice";
    EXPECT_TRUE(keys.insert(f.key).second) << "key " << f.key << " twice";
    EXPECT_TRUE(f.on_resume == OnResume::Refuse || f.on_resume == OnResume::Override || f.on_resume == OnResume::Fresh);
  });
  EXPECT_GE(n, 27);  // the fields of today; the table only grows
  EXPECT_FALSE(keys.count("vocab_size")) << "vocab_size comes from the corpus, not a flag";
}

TEST(RunConfig, DefaultsComeFromTheStruct) {
  // The flags' defaults are the struct's (no second copy as string literals).
  cxxopts::Options options("train");
  cli::add_train_flags(options);
  const auto flags = cli::read_train_flags(parse(options, {}));
  EXPECT_EQ(differences(flags.config, TrainConfig{}), std::vector<std::string>{});
  EXPECT_TRUE(flags.given.empty());
  // Today's defaults, which `make train` and its measured losses rely on.
  const TrainConfig d;
  EXPECT_EQ(d.model.name, "gpt");
  EXPECT_EQ(d.model.n_layer, 4);
  EXPECT_EQ(d.model.n_embd, 128);
  EXPECT_EQ(d.iters, 2000);
  EXPECT_EQ(d.lr, 1e-3);
  EXPECT_EQ(d.beta2, 0.99);
  // The help shows them.
  const std::string help = options.help();
  EXPECT_NE(help.find("(default: 0.001)"), std::string::npos) << help;
  EXPECT_NE(help.find("(default: 1337)"), std::string::npos) << help;
}

TEST(RunConfig, EveryFieldRoundTripsThroughFlagsAndJson) {
  const TrainConfig want = all_changed(1);
  std::vector<std::string> args;
  std::set<std::string> flag_names;
  train::visit_fields(want, [&](const auto& v, const FieldInfo& f) {
    args.push_back(std::string("--") + f.flag + "=" + train::format_value(v));
    flag_names.insert(f.flag);
  });
  cxxopts::Options options("train");
  cli::add_train_flags(options);
  auto flags = cli::read_train_flags(parse(options, args));
  EXPECT_EQ(flags.given, flag_names);
  flags.config.model.vocab_size = want.model.vocab_size;  // from the corpus, not a flag
  EXPECT_EQ(differences(flags.config, want), std::vector<std::string>{}) << "flags -> config";

  const std::string json = train::config_to_json(flags.config);
  const auto j = nlohmann::json::parse(json);
  train::visit_fields(want, [&](const auto&, const FieldInfo& f) { EXPECT_TRUE(j.contains(f.key)) << f.key; });
  const TrainConfig back = train::config_from_json(json, "test");
  EXPECT_EQ(differences(back, want), std::vector<std::string>{}) << "config -> JSON -> config";
  EXPECT_EQ(back.model.vocab_size, want.model.vocab_size);
}

TEST(RunConfig, JsonFromOlderStatesAndBadJson) {
  const TrainConfig want = all_changed(2);
  auto j = nlohmann::json::parse(train::config_to_json(want));
  // A state written before a field existed: that field takes its default.
  auto old = j;
  old.erase("grad_report");
  old.erase("name");
  EXPECT_EQ(train::config_from_json(old.dump(), "old").model.name, "gpt");
  EXPECT_FALSE(train::config_from_json(old.dump(), "old").grad_report);
  // Before --precision and --gemm: float32 on OpenBLAS, the provider every such run used (not
  // the default auto, which might choose another and so not continue the run exactly).
  old.erase("precision");
  old.erase("gemm");
  EXPECT_EQ(train::config_from_json(old.dump(), "old").precision, Precision::FP32);
  EXPECT_EQ(train::config_from_json(old.dump(), "old").gemm, train::GemmChoice::OpenBLAS);
  // Before --gemm-bf16: oneDNN's gemm API, the interface every such bf16 run used.
  old.erase("gemm_bf16");
  EXPECT_EQ(train::config_from_json(old.dump(), "old").gemm_bf16, train::GemmBf16Choice::Gemm);
  // A field every state has is required, and types are checked.
  auto expect_error = [](const nlohmann::json& bad, const std::string& needle) {
    try {
      train::config_from_json(bad.dump(), "state.safetensors");
      ADD_FAILURE() << "accepted " << bad.dump();
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind("state.safetensors", 0), 0u) << e.what();
    }
  };
  auto missing = j;
  missing.erase("lr");
  expect_error(missing, "'lr' is missing");
  auto wrong = j;
  wrong["n_layer"] = 2.5;
  expect_error(wrong, "'n_layer' has the wrong type");
  wrong = j;
  wrong["seed"] = -1;
  expect_error(wrong, "'seed' has the wrong type");
  wrong = j;
  wrong["precision"] = "fp16";
  expect_error(wrong, "'precision' must be fp32 or bf16");
  wrong = j;
  wrong["gemm"] = 1;
  expect_error(wrong, "'gemm' must be auto, openblas or onednn");
  wrong = j;
  wrong["skip_nonfinite"] = 1;
  expect_error(wrong, "'skip_nonfinite' has the wrong type");
  expect_error(nlohmann::json::array(), "not a JSON object");
}

TEST(RunConfig, ResumeKeepsTheRunAndTakesOnlyWhatMayChange) {
  const TrainConfig saved = all_changed(1), now = all_changed(2);
  std::set<std::string> all;
  train::visit_fields(now, [&](const auto&, const FieldInfo& f) { all.insert(f.flag); });
  for (const std::set<std::string>& given : {std::set<std::string>{}, all}) {
    const TrainConfig r = train::resumed_config(saved, now, given);
    train::for_each_field(
        [&](const FieldInfo& f, const auto& got, const auto& s, const auto& n) {
          const bool from_now = f.on_resume == OnResume::Fresh || (f.on_resume == OnResume::Override && given.count(f.flag));
          EXPECT_EQ(got, from_now ? n : s) << f.key << " with " << given.size() << " flags given";
        },
        r, saved, now);
  }
  // The rules themselves: the corpus may move; threads and the progress bar are this process's.
  std::map<std::string, OnResume> rule;
  train::visit_fields(now, [&](const auto&, const FieldInfo& f) { rule[f.flag] = f.on_resume; });
  EXPECT_EQ(rule["data"], OnResume::Override);
  EXPECT_EQ(rule["threads"], OnResume::Fresh);
  EXPECT_EQ(rule["no-progress"], OnResume::Fresh);
  EXPECT_EQ(rule["lr"], OnResume::Refuse);
  EXPECT_EQ(rule["model"], OnResume::Refuse);

  // The command line refuses every Refuse flag next to --resume, and only those.
  cxxopts::Options options("train");
  cli::add_train_flags(options);
  train::visit_fields(now, [&](const auto& v, const FieldInfo& f) {
    const auto flags = cli::read_train_flags(
        parse(options, {"--resume=dir", std::string("--") + f.flag + "=" + train::format_value(v)}));
    if (f.on_resume == OnResume::Refuse)
      EXPECT_THROW(cli::refuse_run_flags_on_resume(flags), cli::UsageError) << f.flag;
    else
      EXPECT_NO_THROW(cli::refuse_run_flags_on_resume(flags)) << f.flag;
  });
}

TEST(RunConfig, FormatValueReadsBackExactly) {
  EXPECT_EQ(train::format_value(1e-3), "0.001");
  EXPECT_EQ(train::format_value(0.99), "0.99");
  EXPECT_EQ(train::format_value(1e-8), "1e-08");
  EXPECT_EQ(train::format_value(0.0), "0");
  for (double v : {0.1, 1.0 / 3.0, 6e-4, 1.5 * 0.99 + 0.125 + 1e-7})
    EXPECT_EQ(std::stod(train::format_value(v)), v);
  EXPECT_EQ(train::format_value(true), "true");
}


// Both kinds of choice (a registry's row, an enum's name) are read and written by the same
// functions, so the flag, TOML and JSON readers need one branch for them.
TEST(RunConfig, RegistryAndEnumChoicesReadAlike) {
  using train::GemmChoice;
  using train::OptimizerChoice;
  static_assert(train::ChoiceField<OptimizerChoice> && train::ChoiceField<Precision> && train::ChoiceField<GemmChoice>);
  static_assert(!train::ChoiceField<std::string> && !train::ChoiceField<int64_t>);
  EXPECT_EQ(train::choice_list<GemmChoice>(), "auto, openblas or onednn");
  EXPECT_EQ(train::choice_list<train::GemmBf16Choice>(), "auto, matmul or gemm");
  EXPECT_EQ(train::choice_list<Precision>(), "fp32 or bf16");
  EXPECT_EQ(train::choice_list<GeneratorKind>(), "attograd or torch");
  const std::string optimizers = train::choice_list<OptimizerChoice>();  // "adamw or muon", and any row a program added
  EXPECT_EQ(optimizers.rfind("adamw", 0), 0u) << optimizers;
  EXPECT_NE(optimizers.find("muon"), std::string::npos) << optimizers;
  for (const GemmChoice g : train::choice_values<GemmChoice>())
    EXPECT_EQ(train::parse_choice<GemmChoice>(train::choice_name(g)), g);
  for (const OptimizerChoice& o : train::choice_values<OptimizerChoice>())
    EXPECT_EQ(train::parse_choice<OptimizerChoice>(train::choice_name(o)), o);
  EXPECT_FALSE(train::parse_choice<Precision>("fp16"));
  EXPECT_FALSE(train::parse_choice<OptimizerChoice>("AdamW"));  // names are exact
  // --help lists a registry's rows with their help; an enum's field explains its names itself.
  EXPECT_NE(train::choice_help<OptimizerChoice>().find("muon: "), std::string::npos);
  EXPECT_EQ(train::choice_help<Precision>(), "");
}

}  // namespace
}  // namespace ag
