// --time-budget's policy (train/time_budget.h) on simulated clocks: whatever the steps and the
// final evaluation take, and however the machine's load changes while the run goes, the run it
// plans ends between 98% and 100.5% of its budget. No real time is measured here.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "tests/test_util.h"
#include "train/step_shape.h"
#include "train/time_budget.h"

using namespace ag;
using namespace ag::train;

namespace {

// A run under the policy: step i takes step_s(i) seconds (the first, a warm-up, is not timed);
// the final evaluation is timed once, after the first timed step, as eval_s times the load then,
// and takes eval_s times the load at the end. load(t): the machine's slowdown at time t (1:
// as when eval_s was measured). Returns where the run ends, as a fraction of the budget, and
// the steps it took.
struct Outcome {
  double fraction = 0;
  int64_t steps = 0;
  std::vector<int64_t> plans;  // after each step
};
Outcome simulate(double budget_s, const std::function<double(int64_t)>& step_s, double eval_s,
                 const std::function<double(double)>& load = [](double) { return 1.0; }, double startup_s = 0.3,
                 int64_t cap = 1000000, StepShares shares = {}) {
  TimeBudget b(budget_s, cap, std::move(shares));
  std::vector<int64_t> plans;
  double t = startup_s;  // reading the data, building the model
  int64_t steps = 0, planned = cap;
  while (steps < planned) {
    const double d = step_s(steps) * load(t);
    t += d;
    ++steps;
    planned = b.after_step(steps, t, steps > 1 ? d : -1.0);
    if (b.wants_eval_time()) {
      b.set_eval_time(eval_s * load(t));
      planned = b.after_step(steps, t, -1.0);
    }
    EXPECT_GE(planned, steps);
    EXPECT_LE(planned, cap);
    plans.push_back(planned);
  }
  t += eval_s * load(t);
  return {t / budget_s, steps, plans};
}

void expect_within_window(const Outcome& o) {
  EXPECT_GE(o.fraction, 0.98) << o.steps << " steps";
  EXPECT_LE(o.fraction, 1.005) << o.steps << " steps";
}

// A deterministic jitter in [−0.3, 0.3]: steps on a shared machine.
double jitter(int64_t i) { return 0.3 * std::sin(static_cast<double>(i) * 12.9898) * std::cos(static_cast<double>(i) * 4.1414); }

}  // namespace

TEST(TimeBudget, SteadyStepsEndWithinTheWindow) {
  for (double budget : {120.0, 300.0}) {
    SCOPED_TRACE(budget);
    expect_within_window(simulate(budget, [](int64_t i) { return i == 0 ? 0.5 : 0.06; }, 2.5));
  }
}

TEST(TimeBudget, JitteryStepsEndWithinTheWindow) {
  for (double budget : {120.0, 300.0}) {
    SCOPED_TRACE(budget);
    expect_within_window(simulate(budget, [](int64_t i) { return 0.08 * (1 + jitter(i)); }, 3.0));
  }
}

// The load rises halfway (the neighbours start a build): the steps and the final evaluation both
// take 60% longer from then on. The plan follows the steps' time, and the evaluation's estimate
// scales with it. And the other way round.
TEST(TimeBudget, ALoadChangeMidRunStillEndsWithinTheWindow) {
  for (double budget : {120.0, 300.0}) {
    SCOPED_TRACE(budget);
    expect_within_window(
        simulate(budget, [](int64_t i) { return 0.07 * (1 + jitter(i)); }, 2.5, [&](double t) { return t < budget / 2 ? 1.0 : 1.6; }));
    expect_within_window(
        simulate(budget, [](int64_t i) { return 0.07 * (1 + jitter(i)); }, 2.5, [&](double t) { return t < budget / 2 ? 1.6 : 1.0; }));
    // Late: in the last tenth, where the decay is nearly done.
    expect_within_window(
        simulate(budget, [](int64_t) { return 0.07; }, 2.5, [&](double t) { return t < 0.9 * budget ? 1.0 : 1.3; }));
  }
}

TEST(TimeBudget, ThePlanStaysAtTheCapUntilAStepIsTimedAndNeverPassesIt) {
  TimeBudget b(100, 500);
  EXPECT_EQ(b.after_step(1, 1.0, -1.0), 500);  // the warm-up step: nothing timed yet
  EXPECT_FALSE(b.wants_eval_time());
  // 100 s less its 0.75% spare, 10 s gone, 0.5 s a step: 10 done + 178.5 → 189 (the nearest count).
  EXPECT_EQ(b.after_step(10, 10.0, 0.5), 189);
  EXPECT_TRUE(b.wants_eval_time());
  b.set_eval_time(20);  // 40 fewer
  EXPECT_EQ(b.after_step(10, 10.0, -1.0), 149);
  EXPECT_EQ(b.state().planned, 149);
  TimeBudget fast(100, 120);
  fast.after_step(1, 0.1, -1.0);
  EXPECT_EQ(fast.after_step(2, 0.2, 0.01), 120);  // the cap
  TimeBudget late(100, 1000);
  late.after_step(1, 90, -1.0);
  EXPECT_EQ(late.after_step(20, 101, 0.5), 20);  // spent: no more steps
  const Outcome capped = simulate(100, [](int64_t) { return 0.01; }, 1.0, [](double) { return 1.0; }, 0.3, 300);
  EXPECT_EQ(capped.steps, 300);
}

// The estimate: the mean of the first kRecentSteps steps timed, then recent steps weigh
// 1/kRecentSteps, so that a change of load is followed within some dozens of steps.
TEST(TimeBudget, TheStepEstimateFollowsRecentSteps) {
  TimeBudget b(1000, 1000000);
  b.after_step(1, 1, -1);
  for (int64_t i = 2; i < 2 + TimeBudget::kRecentSteps; ++i) b.after_step(i, static_cast<double>(i), i % 2 ? 0.1 : 0.3);
  EXPECT_NEAR(b.state().step_s, 0.2, 1e-12);
  for (int64_t i = 100; i < 200; ++i) b.after_step(i, static_cast<double>(i), 0.5);
  EXPECT_NEAR(b.state().step_s, 0.5, 1e-3);
}

TEST(TimeBudget, ItsStateReadsBackExactlyAndBadStatesAreRefused) {
  TimeBudget b(120, 100000);
  b.after_step(1, 0.5, -1);
  b.after_step(2, 0.6, 0.1234567890123);
  b.set_eval_time(2.718281828459045);
  const BudgetState s = b.state();
  EXPECT_EQ(budget_state_from_json(budget_state_to_json(s), "state"), s);
  for (const char* bad : {"{}", "[1]", "{\"cap\":5,\"planned\":6,\"timed\":1,\"step_s\":0.1,\"eval_s\":1,\"eval_step_s\":0.1}",
                          "{\"cap\":5,\"planned\":4,\"timed\":-1,\"step_s\":0.1,\"eval_s\":1,\"eval_step_s\":0.1}", "not json"}) {
    const std::string e = testing_util::error_of([&] { budget_state_from_json(bad, "run/train_state.safetensors"); });
    EXPECT_NE(e.find("run/train_state.safetensors: __metadata__ 'time_budget'"), std::string::npos) << bad << ": " << e;
  }
}

// Steps that grow (--block-warmup, --batch-warmup: train/step_shape.h): the early steps are a
// fraction of a full step's tokens and take about that fraction of its time. The estimate is
// per token (each step timed over its share, each step to come at its share), so the run still ends within the window, and the plan made early in the
// warmup is already the count the run ends at, within 5% (planned from the small steps as if
// all were alike, it would be several times too many, and the decay would start late).
TEST(TimeBudget, StepsThatGrowStillEndWithinTheWindow) {
  for (double budget : {120.0, 300.0}) {
    for (int64_t warmup : {300, 5000}) {  // 5000: longer than the run
      SCOPED_TRACE(std::to_string(budget) + " s, warmup " + std::to_string(warmup));
      TrainConfig c;
      c.batch_size = 16, c.model.block_size = 128;
      c.block_warmup = warmup, c.block_start = 16;
      c.batch_warmup = warmup / 2, c.batch_start = 4;
      const StepShares shares{full_shape_from(c), [c](int64_t it) { return step_share(c, it, 1); }};
      auto step_s = [&](int64_t i) { return i == 0 ? 0.5 : 0.07 * shares.share(i) * (1 + jitter(i)); };
      const Outcome o = simulate(budget, step_s, 2.5, [](double) { return 1.0; }, 0.3, 1000000, shares);
      expect_within_window(o);
      ASSERT_GT(o.plans.size(), 60u);
      EXPECT_NEAR(static_cast<double>(o.plans[40]), static_cast<double>(o.steps), 0.05 * static_cast<double>(o.steps));
    }
  }
}

