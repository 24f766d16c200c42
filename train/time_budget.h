// --time-budget SECONDS (docs/speedrun.md): a run that ends, its final evaluation included, when
// the budget is spent. The steps after the first (a warm-up) up to kBudgetProbeEnd are timed;
// their mean and the time the final evaluation will take fix the step count, and the mean of
// every step timed by the end of that count's stable phase fixes it again there (train/run.cpp
// records it in the run's configuration, so that --resume continues it exactly). Evaluations
// before the last (--eval-every) are budgeted only by the second fix, as part of the steps' time.
#pragma once
#include <cstdint>
#include <vector>

#include "models/language_model.h"
#include "train/config/run_config.h"

namespace ag::train {

// The share of the budget the step count leaves unplanned: on a shared machine the steps after
// the last fix ran up to 7% slower or faster than the mean that fixed the count
// (docs/speedrun.md), and the budget is a limit, not a target.
inline constexpr double kBudgetSpare = 0.02;

// The step count: the steps done, then as many steps of step_s as fit in what is left of the
// budget, less its spare share, after the final evaluation (eval_s); at most cap, at least steps_done.
int64_t iters_for_budget(double budget_s, double elapsed_s, double step_s, double eval_s, int64_t steps_done, int64_t cap);

// The seconds the final evaluation (--eval-iters batches of each split, or the whole validation
// split) takes on one process, from one batch of each shape timed on `model` (no randomness
// drawn; the model is left in training mode).
double final_eval_seconds(models::LanguageModel& model, const TrainConfig& cfg, const std::vector<int64_t>& val_ids);

}  // namespace ag::train
