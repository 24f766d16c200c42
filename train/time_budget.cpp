#include "train/time_budget.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "autograd/engine.h"
#include "train/evaluate.h"

namespace ag::train {

int64_t iters_for_budget(double budget_s, double elapsed_s, double step_s, double eval_s, int64_t steps_done, int64_t cap) {
  if (!(step_s > 0)) return std::min(steps_done, cap);
  const double left = std::max(0.0, budget_s * (1.0 - kBudgetSpare) - elapsed_s - eval_s);
  const double more = std::floor(left / step_s);
  const double total = static_cast<double>(steps_done) + more;
  if (total >= static_cast<double>(cap)) return cap;
  return std::max(steps_done, static_cast<int64_t>(total));
}

double final_eval_seconds(models::LanguageModel& model, const TrainConfig& cfg, const std::vector<int64_t>& val_ids) {
  using Clock = std::chrono::steady_clock;
  const int64_t T = cfg.model.block_size;
  auto time_batch = [&](int64_t rows) {  // one forward of `rows` windows of the validation text
    const Clock::time_point t0 = Clock::now();
    NoGradGuard no_grad;
    model.eval();
    std::vector<int64_t> x(static_cast<size_t>(rows * T));
    for (size_t k = 0; k < x.size(); ++k) x[k] = val_ids[k % val_ids.size()];
    const Tensor xt = Tensor::from_vector(x, {rows, T});
    (void)model.loss(xt, xt).item();
    model.train();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  // Each shape timed twice, the faster kept: a first call of a shape pays for memory the
  // evaluation's other batches reuse (timed once, a 120 s run with a 2.6 s evaluation ended
  // 4.6 s early).
  auto batch_s = [&](int64_t rows) { return std::min(time_batch(rows), time_batch(rows)); };
  const double random_batch_s = batch_s(cfg.batch_size);
  if (cfg.eval_iters != kEvalWholeSplit) return 2.0 * static_cast<double>(cfg.eval_iters) * random_batch_s;
  const int64_t split = split_batches(static_cast<int64_t>(val_ids.size()), T, kSplitRows);
  return static_cast<double>(kTrainBatchesWithWholeSplit) * random_batch_s + static_cast<double>(split) * batch_s(kSplitRows);
}

}  // namespace ag::train
