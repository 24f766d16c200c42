// The speedrun's schedules besides the learning rate's (docs/speedrun.md): Muon's momentum warmup
// (--muon-momentum-warmup), the sequence-length warmup (--block-warmup) and the batch warmup
// (--batch-warmup). Each step's shape and momentum, the rules on their flags, and whole runs:
// the steps' own tokens in the throughput, an exact resume, and a time budget that is spent
// although the early steps are cheaper. The twin's side is tests/train/test_schedule_parity.cpp.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "models/registry.h"
#include "optim/combined.h"
#include "optim/muon.h"
#include "tests/train/small_run.h"
#include "tests/test_util.h"
#include "train/config/config_check.h"
#include "train/config/config_error.h"
#include "train/step_shape.h"
#include "train/trainer.h"

using namespace ag;
using namespace ag::train;
using namespace ag::testing_util;
namespace fs = std::filesystem;

namespace {
TrainConfig shaped(int64_t batch, int64_t block) {
  TrainConfig c;
  c.batch_size = batch;
  c.model.block_size = block;
  return c;
}
}  // namespace

TEST(StepShape, WithoutAWarmupEveryStepIsFull) {
  const TrainConfig c = shaped(16, 128);
  for (int64_t it : {0, 1, 500}) {
    EXPECT_EQ(step_shape(c, it, 1).batch, 16);
    EXPECT_EQ(step_shape(c, it, 1).block, 128);
    EXPECT_EQ(step_share(c, it, 1), 1.0);
  }
  EXPECT_EQ(full_shape_from(c), 0);
  EXPECT_EQ(tokens_of_steps(c, 3, 10, 1), 7.0 * 16 * 128);
}

// From --block-start at step 0 to block at step W, linearly, rounded down to a multiple of 8,
// never below the start, never falling; block from step W on.
TEST(StepShape, TheSequenceLengthRisesInMultiplesOf8) {
  TrainConfig c = shaped(16, 128);
  c.block_warmup = 100, c.block_start = 32;
  EXPECT_EQ(step_shape(c, 0, 1).block, 32);
  EXPECT_EQ(step_shape(c, 50, 1).block, 80);    // 32 + 96·50/100
  EXPECT_EQ(step_shape(c, 99, 1).block, 120);   // 32 + 95 = 127, down to 120
  EXPECT_EQ(step_shape(c, 100, 1).block, 128);
  EXPECT_EQ(step_shape(c, 5000, 1).block, 128);
  int64_t last = 0;
  for (int64_t it = 0; it < 100; ++it) {
    const StepShape s = step_shape(c, it, 1);
    EXPECT_EQ(s.block % 8, 0) << it;
    EXPECT_GE(s.block, last) << it;
    EXPECT_EQ(s.batch, 16) << it;
    EXPECT_DOUBLE_EQ(step_share(c, it, 1), static_cast<double>(s.block) / 128.0) << it;
    last = s.block;
  }
  EXPECT_EQ(full_shape_from(c), 100);
  c.block_start = 20;  // not a multiple of 8: the start stays the floor
  EXPECT_EQ(step_shape(c, 1, 1).block, 20);
  EXPECT_EQ(step_shape(c, 50, 1).block, 72);  // 20 + 108·50/100 = 74, down to 72
}

// The batch rises in multiples of ranks × --grad-accum, so that every step splits as --batch does.
TEST(StepShape, TheBatchRisesInMultiplesOfRanksTimesMicroBatches) {
  TrainConfig c = shaped(16, 64);
  c.batch_warmup = 10, c.batch_start = 4, c.grad_accum = 2;
  EXPECT_EQ(step_shape(c, 0, 2).batch, 4);
  EXPECT_EQ(step_shape(c, 5, 2).batch, 8);  // 4 + 12·5/10 = 10, down to a multiple of 4
  EXPECT_EQ(step_shape(c, 9, 2).batch, 12);
  EXPECT_EQ(step_shape(c, 10, 2).batch, 16);
  EXPECT_EQ(step_shape(c, 5, 1).batch, 10);  // one rank, two micro-batches: multiples of 2
  // Both warmups at once: the shares multiply, and the tokens add up step by step.
  c.block_warmup = 20, c.block_start = 32;
  EXPECT_EQ(full_shape_from(c), 20);
  EXPECT_DOUBLE_EQ(step_share(c, 0, 2), (4.0 * 32) / (16.0 * 64));
  double sum = 0;
  for (int64_t it = 3; it < 30; ++it) sum += static_cast<double>(step_shape(c, it, 2).tokens());
  EXPECT_EQ(tokens_of_steps(c, 3, 30, 2), sum);
  EXPECT_EQ(tokens_of_steps(c, 30, 3, 2), 0.0);
}

TEST(StepShape, StartsLargerThanTheRunsShapeAreRefused) {
  const fs::path d = temp_dir("step_shape_rules");
  TrainConfig c = small_run(d, "run");  // batch 4, block 16
  c.block_warmup = 10, c.block_start = 32;
  EXPECT_NE(error_of<ConfigError>([&] { validate_config(c, 1); }).find("--block-start 32 must be at most --block 16"), std::string::npos);
  c.block_start = 8;
  EXPECT_NO_THROW(validate_config(c, 1));
  c.block_warmup = 0, c.block_start = 32;  // off: the start means nothing
  EXPECT_NO_THROW(validate_config(c, 1));
  c.batch_warmup = 10, c.batch_start = 8;
  EXPECT_NE(error_of<ConfigError>([&] { validate_config(c, 1); }).find("--batch-start 8 must be at most --batch 4"), std::string::npos);
  c.batch_start = 1, c.grad_accum = 2;
  EXPECT_NE(error_of<ConfigError>([&] { validate_config(c, 1); }).find("divisible by ranks × --grad-accum = 2"), std::string::npos);
  c.batch_start = 2;
  EXPECT_NO_THROW(validate_config(c, 1));
}

namespace {
TrainConfig modern_run(const fs::path& d, const std::string& name) {
  TrainConfig c = small_run(d, name);
  c.model.name = "modern";
  c.model.dropout = 0.0;
  c.optimizer = OptimizerChoice("muon");
  c.schedule = ScheduleChoice("wsd");
  setting(c, "embed-lr") = 0.05;
  return c;
}

double muon_momentum(optim::Optimizer& opt) {
  auto& muon = dynamic_cast<optim::Muon&>(dynamic_cast<optim::CombinedOptimizer&>(opt).part(1));
  return muon.param_groups().at(0).options.momentum;
}
}  // namespace

// Muon's momentum: --muon-momentum-start at step 0, linearly to --muon-momentum at step W, then
// held; without the warmup, --muon-momentum throughout (0.95, torch's default, unless given).
TEST(MuonMomentumWarmup, TheMomentumRisesLinearlyToMuonsMomentum) {
  const fs::path d = temp_dir("muon_momentum");
  TrainConfig c = modern_run(d, "run");
  c.model.vocab_size = 20;
  Generator gen(0);
  const auto model = models::find_model("modern").make(c.model, DType::Float32, gen);
  {
    const auto opt = c.optimizer->build(*model, c);
    EXPECT_EQ(muon_momentum(*opt), 0.95);
    c.optimizer->before_step(*opt, c, 7);  // off: left as built
    EXPECT_EQ(muon_momentum(*opt), 0.95);
  }
  setting(c, "muon-momentum") = 0.9;
  EXPECT_EQ(muon_momentum(*c.optimizer->build(*model, c)), 0.9);
  setting(c, "muon-momentum") = 0.95;
  setting(c, "muon-momentum-warmup") = 300;
  const auto opt = c.optimizer->build(*model, c);
  EXPECT_DOUBLE_EQ(muon_momentum(*opt), 0.85);  // built at step 0's
  for (const auto& [it, want] : std::vector<std::pair<int64_t, double>>{{0, 0.85}, {150, 0.9}, {300, 0.95}, {301, 0.95}, {30, 0.86}}) {
    c.optimizer->before_step(*opt, c, it);
    EXPECT_NEAR(muon_momentum(*opt), want, 1e-15) << it;
  }
  // The settings are Muon's: a run with another optimizer may not set them.
  TrainConfig adamw = small_run(d, "adamw");
  setting(adamw, "muon-momentum-warmup") = 300;
  EXPECT_NE(error_of<ConfigError>([&] { validate_config(adamw, 1); }).find("--muon-momentum-warmup is a setting of --optimizer muon"),
            std::string::npos);
}

namespace {
// (iter, tokens_per_s) of every step's metrics line.
std::vector<std::pair<int64_t, double>> throughputs(const fs::path& run) {
  std::ifstream in(run / "metrics.jsonl");
  std::vector<std::pair<int64_t, double>> out;
  for (std::string l; std::getline(in, l);) {
    const auto j = nlohmann::json::parse(l);
    if (j["val_loss"].is_null()) out.emplace_back(j["iter"].get<int64_t>(), j["tokens_per_s"].get<double>());
  }
  return out;
}
}  // namespace

// The throughput counts each step's own tokens: on a clock where every step takes one second,
// step it's tokens/s is its batch × its sequence length.
TEST(RecipeSchedules, TheThroughputCountsEachStepsOwnTokens) {
  const fs::path d = temp_dir("schedule_tokens");
  TrainConfig c = modern_run(d, "run");
  c.iters = 40;
  c.eval_every = 1000;
  c.block_warmup = 30, c.block_start = 8;
  c.batch_warmup = 20, c.batch_start = 2;
  int64_t ns = 0;
  RunHooks h;
  h.clock = [&] { return ns; };
  h.after_step = [&](int64_t) { ns += 1'000'000'000; };
  std::ostringstream log;
  train_lm(c, log, h);
  const auto got = throughputs(d / "run");
  ASSERT_EQ(got.size(), 40u);
  for (const auto& [iter, tps] : got) EXPECT_EQ(tps, static_cast<double>(step_shape(c, iter - 1, 1).tokens())) << iter;
  EXPECT_EQ(got.front().second, 2.0 * 8);
  EXPECT_EQ(got.back().second, 4.0 * 16);
}

// The three warmups change nothing a checkpoint does not restore: a run cut within them, or
// after them, and resumed ends at the bits of the run that never stopped.
TEST(Resume, TheRecipesWarmupsResumeBitIdentical) {
  const fs::path d = temp_dir("resume_schedules");
  std::ostringstream log;
  auto config = [&](const std::string& name) {
    TrainConfig c = modern_run(d, name);
    c.iters = 150;
    c.eval_every = 50;
    setting(c, "muon-momentum-warmup") = 40;
    c.block_warmup = 60, c.block_start = 8;
    c.batch_warmup = 30, c.batch_start = 2;
    return c;
  };
  const TrainConfig straight = config("straight");
  train_lm(straight, log);
  for (int64_t k : {17, 49, 100})  // within every warmup, at an evaluation, after them all
    expect_cut_run_resumes_exactly(config("cut" + std::to_string(k)), k, straight.out_dir, log);
}

namespace {
// A budgeted run whose steps take time in proportion to their tokens on a fake clock (a full
// step 40 ms, plus 2 ms whatever its size), the evaluation's timing 0 s.
struct TokenClock {
  int64_t ns = 1'000'000'000;
  RunHooks hooks(const TrainConfig& c) {
    RunHooks h;
    h.clock = [this] { return ns; };
    h.after_step = [this, c](int64_t it) {
      ns += 2'000'000 + static_cast<int64_t>(40e6 * step_share(c, it, 1));
    };
    return h;
  }
};

TrainConfig budgeted(const fs::path& d, const std::string& name) {
  TrainConfig c = modern_run(d, name);
  c.time_budget = 10;
  c.iters = 1000000;
  c.eval_every = 1000000;
  c.block_warmup = 150, c.block_start = 8;
  c.batch_warmup = 100, c.batch_start = 1;
  return c;
}
}  // namespace

// Steps that grow (a quarter of a full step's tokens and less at first) do not fool the plan:
// the run ends within 98% and 100.5% of its budget, and a cut one resumes to the same bits.
TEST(TimeBudget, ARunWhoseStepsGrowEndsWithinItsBudgetAndResumesExactly) {
  const fs::path d = temp_dir("budget_growing");
  std::ostringstream log;
  const TrainConfig straight = budgeted(d, "straight");
  TokenClock clock;
  const TrainSummary want = train_lm(straight, log, clock.hooks(straight));
  EXPECT_GE(want.seconds, 0.98 * 10) << log.str();
  EXPECT_LE(want.seconds, 1.005 * 10) << log.str();
  EXPECT_GT(want.iters, 200);
  const TrainConfig cut = budgeted(d, "cut");
  TokenClock first, second;
  EXPECT_TRUE(train_lm(cut, log, interrupt_after(60, first.hooks(cut))).interrupted);
  second.ns = 5'000'000'000;
  const TrainSummary got = resume_lm(cut.out_dir, TrainConfig{}, {}, log, second.hooks(cut));
  EXPECT_EQ(got.iters, want.iters);
  EXPECT_EQ(read_bytes(fs::path(cut.out_dir) / "model.safetensors"), read_bytes(fs::path(straight.out_dir) / "model.safetensors"));
  EXPECT_EQ(losses(cut.out_dir), losses(straight.out_dir));
}
