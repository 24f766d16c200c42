// --time-budget SECONDS (docs/speedrun.md): a run that ends when the budget is spent, its data,
// steps and final evaluation included, between 98% and 100.5% of it. A policy apart from the
// loop: after each step the run tells it the elapsed time and what the step took, and it plans
// the step count again (at most --iters) from its estimates of a step's time and of the final
// evaluation's; the schedule's factor follows the plan (train/schedules/registry.h), so the
// decay follows the elapsed time.
//
// Steps need not be alike: under --block-warmup or --batch-warmup (train/step_shape.h) the early
// steps process fewer tokens than the later ones. The estimate is per token, held as the
// seconds of a full step (batch × block tokens), so that a step of a share s of those tokens is
// expected to take s times it; each step timed counts as its time over its share, and the plan
// sums the shares of the steps to come. Steps all alike (share 1) give the plan they always did.
//
// What it decided from a clock is its BudgetState, which the train state keeps: a run resumed
// from a checkpoint continues from that plan and those estimates, so that with the same clock
// readings (a fake clock in the tests) it makes the decisions the run that never stopped made.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "models/language_model.h"
#include "train/config/run_config.h"

namespace ag::train {

// Everything the policy decided from a clock.
struct BudgetState {
  int64_t cap = 0;         // --iters as given: no plan goes beyond it
  int64_t planned = 0;     // the last plan: the run's step count
  int64_t timed = 0;       // steps timed so far
  double step_s = 0;       // the estimate of a full step's seconds (the mean of the first steps timed, each over its share, then recent ones weigh more)
  double eval_s = -1;      // the final evaluation's seconds, timed once (-1: not yet)
  double eval_step_s = 0;  // the step estimate when eval_s was timed: the evaluation's estimate scales with the steps'
  bool operator==(const BudgetState&) const = default;
};

// As the train state's metadata keeps it (JSON, doubles that read back exactly); the reader
// throws std::runtime_error naming `source`.
std::string budget_state_to_json(const BudgetState& s);
BudgetState budget_state_from_json(const std::string& text, const std::string& source);

// How the steps' sizes vary: step it's tokens over a full step's, in (0, 1], and the first step
// from which every step is full. The default: every step is.
struct StepShares {
  int64_t full_from = 0;
  std::function<double(int64_t it)> share = {};  // asked for it < full_from only
};

class TimeBudget {
 public:
  // The share of the budget left unplanned, for what follows the last plan: the last step runs
  // longer or shorter than the estimate, and the final evaluation than its timing scaled (on this
  // shared 2-core machine, within ±0.5 s of a 2–3 s evaluation). The budget is a limit.
  static constexpr double kSpare = 0.0075;
  // Steps weigh 1/n into the step estimate while n ≤ kRecentSteps, then 1/kRecentSteps: the
  // estimate follows a machine whose load changes within a few seconds.
  static constexpr int64_t kRecentSteps = 16;

  // A new run: nothing timed, the plan at cap (--iters).
  TimeBudget(double budget_s, int64_t cap, StepShares shares = {});
  // A resumed one, from its recorded state.
  TimeBudget(double budget_s, BudgetState state, StepShares shares = {});

  // After a step: steps_done steps done, elapsed_s of the budget spent, the step (step
  // steps_done − 1) took step_s seconds (< 0: not timed, as the run's first step). Returns the
  // new plan: the steps done, then the number of steps whose estimated times fill what the budget
  // less its spare leaves after the final evaluation, to the nearest step (a step counts when
  // half of it fits); at most the cap. Before any step is timed the plan stays at the cap.
  int64_t after_step(int64_t steps_done, double elapsed_s, double step_s);
  // Several ranks: the plan they agreed on replaces this rank's.
  void agree(int64_t planned) { state_.planned = planned; }

  // The final evaluation is timed once, after the first timed step (final_eval_seconds).
  bool wants_eval_time() const { return state_.eval_s < 0 && state_.timed > 0; }
  void set_eval_time(double eval_s);
  // The final evaluation's seconds as planned now (0 before it was timed).
  double eval_estimate() const;

  double budget_s() const { return budget_s_; }
  const BudgetState& state() const { return state_; }

 private:
  double share(int64_t it) const { return it < shares_.full_from && shares_.share ? shares_.share(it) : 1.0; }
  int64_t steps_that_fit(int64_t steps_done, double left) const;  // left > 0 seconds from step steps_done on

  double budget_s_;
  BudgetState state_;
  StepShares shares_;
};

// The seconds the final evaluation (--eval-iters batches of each split, or the whole validation
// split) takes on one process, from one batch of each shape timed on `model` twice, the faster
// kept (no randomness drawn; the model is left in training mode). now_ns: the run's clock.
double final_eval_seconds(models::LanguageModel& model, const TrainConfig& cfg, const std::vector<int64_t>& val_ids,
                          const std::function<int64_t()>& now_ns);

}  // namespace ag::train
