// Validation of a run configuration, in one place (train/config/config_check.h): every row of the
// field table against its rule, every double finite, the one cross-field check with checked
// arithmetic; and the flags a chosen model does not have (cli/train_flags.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "autograd/parallel.h"
#include "cli/commands.h"
#include "cli/train_flags.h"
#include "tests/test_util.h"
#include "train/config/config_check.h"
#include "train/config/config_error.h"

namespace ag {
namespace {

using train::Check;
using train::ConfigError;
using train::FieldInfo;
using train::TrainConfig;

TrainConfig valid() {
  TrainConfig c;
  c.data_path = "corpus.txt";
  c.out_dir = "run";
  return c;
}

// Sets field `flag` of a valid configuration to v (converted), leaving the others valid.
template <class V>
TrainConfig with(const std::string& flag, V v) {
  TrainConfig c = valid();
  train::visit_fields(c, [&](auto& member, const FieldInfo& f) {
    using T = std::remove_reference_t<decltype(member)>;
    if constexpr (std::is_arithmetic_v<T> && std::is_arithmetic_v<V>)
      if (f.flag == flag) member = static_cast<T>(v);
  });
  return c;
}

std::string refusal(const TrainConfig& c, int64_t ranks = 1) {
  try {
    train::validate_config(c, ranks);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(ConfigCheck, TheDefaultsWithDataAndOutAreValid) {
  EXPECT_EQ(refusal(valid()), "");
  EXPECT_EQ(train::validate_config(valid(), 1).name, "gpt");  // the model's entry, resolved here
}

// Every double of the table (the model's too): inf, -inf and nan are refused, naming the flag.
TEST(ConfigCheck, EveryDoubleFieldRefusesNonFiniteValues) {
  int doubles = 0;
  const TrainConfig base = valid();
  train::visit_fields(base, [&](const auto& member, const FieldInfo& f) {
    if constexpr (std::is_floating_point_v<std::remove_cvref_t<decltype(member)>>) {
      ++doubles;
      for (double bad : {std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(),
                         std::numeric_limits<double>::quiet_NaN()}) {
        TrainConfig c = valid();
        train::visit_fields(c, [&](auto& m, const FieldInfo& g) {
          if constexpr (std::is_floating_point_v<std::remove_reference_t<decltype(m)>>)
            if (std::string(g.flag) == f.flag) m = bad;
        });
        const std::string e = refusal(c);
        EXPECT_NE(e.find(std::string("--") + f.flag + " must be a finite number"), std::string::npos) << f.flag << ": " << e;
      }
    }
  });
  // lr, min-lr, cooldown, muon-lr, embed-lr, muon-momentum, muon-momentum-warmup,
  // muon-momentum-start, weight-decay, beta1, beta2, grad-clip, comm-timeout, time-budget,
  // dropout, softcap
  EXPECT_EQ(doubles, 16);
}

// Each rule, on a value just outside it, for every row that has it.
TEST(ConfigCheck, EveryRowsRuleRefusesAValueOutsideIt) {
  int checked = 0;
  const TrainConfig base = valid();
  train::visit_fields(base, [&](const auto& member, const FieldInfo& f) {
    using T = std::remove_cvref_t<decltype(member)>;
    std::vector<std::pair<TrainConfig, std::string>> cases;
    if constexpr (std::is_same_v<T, std::string>) {
      if (f.check == Check::Required) {
        TrainConfig c = valid();
        train::visit_fields(c, [&](auto& m, const FieldInfo& g) {
          if constexpr (std::is_same_v<std::remove_reference_t<decltype(m)>, std::string>)
            if (std::string(g.flag) == f.flag) m = "";
        });
        cases.emplace_back(c, " is required");
      }
    } else if constexpr (!std::is_same_v<T, bool>) {
      switch (f.check) {
        case Check::Positive: cases.emplace_back(with(f.flag, 0), " must be positive"); break;
        case Check::NonNegative: cases.emplace_back(with(f.flag, -1), " must be ≥ 0"); break;
        case Check::Fraction:
          cases.emplace_back(with(f.flag, 1.0), " must be in [0, 1)");
          cases.emplace_back(with(f.flag, -0.5), " must be in [0, 1)");
          break;
        case Check::UnitInterval:
          cases.emplace_back(with(f.flag, 1.5), " must be in [0, 1]");
          cases.emplace_back(with(f.flag, -0.5), " must be in [0, 1]");
          break;
        case Check::CountOrAll: cases.emplace_back(with(f.flag, -1), " must be a positive count or all, got '-1'"); break;
        case Check::Threads:
          cases.emplace_back(with(f.flag, -1), " must be in 0..");
          cases.emplace_back(with(f.flag, parallel::kMaxThreads + 1), " must be in 0..");
          break;
        case Check::Timeout:
          cases.emplace_back(with(f.flag, 0.5), " must be 0 (wait forever) or at least 1 second");
          cases.emplace_back(with(f.flag, -1), " must be 0 (wait forever) or at least 1 second");
          break;
        default: break;
      }
    }
    for (const auto& [c, needle] : cases) {
      ++checked;
      const std::string e = refusal(c);
      EXPECT_NE(e.find(std::string("--") + f.flag + needle), std::string::npos) << f.flag << ": " << e;
    }
  });
  EXPECT_GE(checked, 20);
}

// ranks × grad_accum in checked arithmetic: 4 × 2^62 wrapped to 0 (a division by zero on
// every rank), 2 × (2^63 − 1) to −2 (which divides an even batch).
TEST(ConfigCheck, RanksTimesGradAccumDoesNotWrap) {
  TrainConfig c = valid();
  c.grad_accum = int64_t{1} << 62;
  EXPECT_NE(refusal(c, 4).find("does not fit 64 bits"), std::string::npos) << refusal(c, 4);
  c.grad_accum = std::numeric_limits<int64_t>::max();
  EXPECT_NE(refusal(c, 2).find("does not fit 64 bits"), std::string::npos) << refusal(c, 2);
  c.grad_accum = 5;
  EXPECT_NE(refusal(c, 2).find("--batch 12 must be divisible by ranks × --grad-accum = 2 × 5 = 10"), std::string::npos)
      << refusal(c, 2);
  c.grad_accum = 2;
  EXPECT_EQ(refusal(c, 3), "");
}

TEST(ConfigCheck, AnUnknownModelListsTheKnownOnes) {
  TrainConfig c = valid();
  c.model.name = "rnn";
  EXPECT_NE(refusal(c).find("unknown model 'rnn' (known: gpt, modern, mlp)"), std::string::npos) << refusal(c);
}

// --model mlp --layers 7: a flag the chosen model does not read is a usage error naming it.
cli::TrainFlags flags_of(const std::vector<std::string>& args) {
  cxxopts::Options options("train");
  cli::add_train_flags(options);
  std::vector<const char*> argv = {"train"};
  for (const auto& a : args) argv.push_back(a.c_str());
  return cli::read_train_flags(options.parse(static_cast<int>(argv.size()), argv.data()));
}

std::string usage_error(const cli::TrainFlags& f) {
  try {
    cli::refuse_model_flags_that_mean_nothing(f);
  } catch (const cli::UsageError& e) {
    return e.what();
  }
  return "";
}

// A choice's settings mean something only to the run that made it: --embed-lr is Muon's,
// --cooldown WSD's. At their defaults (as a run's config.toml lists them) they are accepted.
TEST(ConfigCheck, ASettingOfAChoiceNotMadeIsRefused) {
  TrainConfig c = valid();
  train::setting(c, "embed-lr") = 0.1;
  EXPECT_NE(refusal(c).find("train: --embed-lr is a setting of --optimizer muon (this run's is adamw)"), std::string::npos)
      << refusal(c);
  c.optimizer = train::OptimizerChoice("muon");
  EXPECT_EQ(refusal(c), "");
  train::setting(c, "cooldown") = 0.5;
  EXPECT_NE(refusal(c).find("train: --cooldown is a setting of --schedule wsd (this run's is cosine)"), std::string::npos)
      << refusal(c);
  c.schedule = train::ScheduleChoice("wsd");
  EXPECT_EQ(refusal(c), "");
  EXPECT_THROW(train::setting(c, "no-such-setting"), std::invalid_argument);
}

TEST(ConfigCheck, FlagsTheChosenModelDoesNotHaveAreRefused) {
  const std::string e = usage_error(flags_of({"--model", "mlp", "--layers", "7", "--heads", "3"}));
  EXPECT_NE(e.find("--layers: the model mlp has no such setting (it takes --embd, --block, --hidden)"), std::string::npos) << e;
  EXPECT_NE(usage_error(flags_of({"--model", "mlp", "--dropout", "0.1"})).find("--dropout: the model mlp"), std::string::npos);
  EXPECT_NE(usage_error(flags_of({"--hidden", "64"})).find("--hidden: the model gpt has no such setting"), std::string::npos);
  EXPECT_EQ(usage_error(flags_of({"--model", "mlp", "--embd", "8", "--block", "4", "--hidden", "16"})), "");
  EXPECT_EQ(usage_error(flags_of({"--layers", "2", "--heads", "2", "--dropout", "0.1"})), "");
}

TEST(ConfigCheck, AConfigFileMayListAnotherModelsFieldsOnlyAtTheirDefaults) {
  const auto d = testing_util::temp_dir("config_check_file");
  const std::string file = (d / "run.toml").string();
  std::ofstream(file) << "model = \"mlp\"\nlayers = 4\nheads = 4\nhidden = 64\n";  // as a run's config.toml lists them
  EXPECT_EQ(usage_error(flags_of({"--config", file})), "");
  std::ofstream(file) << "model = \"mlp\"\nlayers = 7\n";
  EXPECT_NE(usage_error(flags_of({"--config", file})).find("--config: layers = 7: the model mlp has no such setting"),
            std::string::npos);
}

TEST(ConfigCheck, WithInitFromOnlyDropoutOfTheModelFlagsMayBeGiven) {
  EXPECT_NE(usage_error(flags_of({"--init-from", "run", "--layers", "2"})).find("--layers cannot be combined with --init-from"),
            std::string::npos);
  EXPECT_EQ(usage_error(flags_of({"--init-from", "run", "--dropout", "0.1"})), "");
}

}  // namespace
}  // namespace ag
