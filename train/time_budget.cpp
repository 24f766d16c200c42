#include "train/time_budget.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

#include "autograd/engine.h"
#include "train/evaluate.h"

namespace ag::train {

std::string budget_state_to_json(const BudgetState& s) {
  return nlohmann::json{{"cap", s.cap},       {"planned", s.planned}, {"timed", s.timed},
                        {"step_s", s.step_s}, {"eval_s", s.eval_s},   {"eval_step_s", s.eval_step_s}}
      .dump();
}

BudgetState budget_state_from_json(const std::string& text, const std::string& source) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    BudgetState s;
    auto count = [&](const char* key) {
      const auto& v = j.at(key);
      if (!v.is_number_integer() || v.get<int64_t>() < 0) throw std::runtime_error(std::string("'") + key + "' is not a count");
      return v.get<int64_t>();
    };
    auto number = [&](const char* key) {
      const auto& v = j.at(key);
      if (!v.is_number() || !std::isfinite(v.get<double>())) throw std::runtime_error(std::string("'") + key + "' is not a finite number");
      return v.get<double>();
    };
    s.cap = count("cap"), s.planned = count("planned"), s.timed = count("timed");
    s.step_s = number("step_s"), s.eval_s = number("eval_s"), s.eval_step_s = number("eval_step_s");
    if (s.planned > s.cap || s.step_s < 0 || s.eval_step_s < 0) throw std::runtime_error("the numbers do not fit together");
    return s;
  } catch (const std::exception& e) {
    throw std::runtime_error(source + ": __metadata__ 'time_budget' is not a time budget's state: " + e.what());
  }
}

TimeBudget::TimeBudget(double budget_s, int64_t cap, StepShares shares) : budget_s_(budget_s), shares_(std::move(shares)) {
  state_.cap = state_.planned = cap;
}

TimeBudget::TimeBudget(double budget_s, BudgetState state, StepShares shares)
    : budget_s_(budget_s), state_(state), shares_(std::move(shares)) {}

void TimeBudget::set_eval_time(double eval_s) {
  state_.eval_s = std::max(0.0, eval_s);
  state_.eval_step_s = state_.step_s;
}

double TimeBudget::eval_estimate() const {
  if (state_.eval_s < 0) return 0;
  // A machine that got busier since the evaluation was timed runs it slower too.
  return state_.eval_step_s > 0 ? state_.eval_s * (state_.step_s / state_.eval_step_s) : state_.eval_s;
}

int64_t TimeBudget::after_step(int64_t steps_done, double elapsed_s, double step_s) {
  if (step_s >= 0) {
    ++state_.timed;
    const double weight = 1.0 / static_cast<double>(std::min(state_.timed, kRecentSteps));
    const int64_t it = steps_done - 1;  // the step just timed
    const double full_step_s = it < shares_.full_from ? step_s / share(it) : step_s;
    state_.step_s += weight * (full_step_s - state_.step_s);
  }
  if (state_.timed == 0 || !(state_.step_s > 0)) return state_.planned = std::max(std::min(state_.planned, state_.cap), steps_done);
  const double left = budget_s_ * (1.0 - kSpare) - elapsed_s - eval_estimate();
  if (steps_done < shares_.full_from) {  // steps of several sizes to come
    const int64_t more = left > 0 ? steps_that_fit(steps_done, left) : 0;
    return state_.planned = std::min(state_.cap, steps_done + more);
  }
  // The nearest count: the run ends within half a step of the target, either side.
  const double more = left > 0 ? std::floor(left / state_.step_s + 0.5) : 0.0;
  const double total = static_cast<double>(steps_done) + more;
  state_.planned = total >= static_cast<double>(state_.cap) ? state_.cap : std::max(steps_done, static_cast<int64_t>(total));
  return state_.planned;
}

// The steps of the warmup one by one (each counts when half of it fits, as the nearest count
// below does), then the full steps after it all at once.
int64_t TimeBudget::steps_that_fit(int64_t steps_done, double left) const {
  int64_t it = steps_done;
  for (; it < shares_.full_from && it < state_.cap; ++it) {
    const double d = state_.step_s * share(it);
    if (0.5 * d > left) return it - steps_done;
    left -= d;
  }
  const double full = left > 0 ? std::floor(left / state_.step_s + 0.5) : 0.0;
  const double cap_left = static_cast<double>(state_.cap - it);
  return it - steps_done + (full >= cap_left ? state_.cap - it : static_cast<int64_t>(full));
}

double final_eval_seconds(models::LanguageModel& model, const TrainConfig& cfg, const std::vector<int64_t>& val_ids,
                          const std::function<int64_t()>& now_ns) {
  const int64_t T = cfg.model.block_size;
  auto time_batch = [&](int64_t rows) {  // one forward of `rows` windows of the validation text
    const int64_t t0 = now_ns();
    NoGradGuard no_grad;
    model.eval();
    std::vector<int64_t> x(static_cast<size_t>(rows * T));
    for (size_t k = 0; k < x.size(); ++k) x[k] = val_ids[k % val_ids.size()];
    const Tensor xt = Tensor::from_vector(x, {rows, T});
    (void)model.loss(xt, xt).item();
    model.train();
    return static_cast<double>(now_ns() - t0) * 1e-9;
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
