// Learning-rate schedulers, as torch.optim.lr_scheduler: each takes the optimizer by
// reference, sets every group's lr at construction (epoch 0), and step(), called after
// opt.step(), moves to the next epoch. The values are torch's, step by step, computed as torch
// computes them: from the groups' current lrs (torch's chainable get_lr), and from the closed
// form only where torch uses it (SequentialLR at a milestone).
//
//   optim::AdamW opt(model.parameters(), {.lr = 1e-3});
//   auto warmup = std::make_shared<lr_scheduler::LinearLR>(opt, 0.1, 1.0, 100);
//   auto decay = std::make_shared<lr_scheduler::CosineAnnealingLR>(opt, 900, 1e-4);
//   lr_scheduler::SequentialLR sched(opt, {warmup, decay}, {100});
//   for (...) { ...; opt.step(); sched.step(); }
//
// The first scheduler made on an optimizer records each group's lr as its initial_lr; every
// scheduler starts from those (torch's base_lrs). torch's last_epoch argument (resuming a
// schedule) is LambdaLR's only: a LambdaLR made with last_epoch = k − 1 on an optimizer whose
// groups have their initial_lr (a restored state dict holds them) sets the lrs of epoch k, as
// torch's; the chainable schedulers compute from the current lrs and do not offer it.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "optim/optimizer.h"

namespace ag::optim::lr_scheduler {

class LRScheduler {
 public:
  // last_epoch ≥ 0 (resuming): every group must have its initial_lr already.
  explicit LRScheduler(Optimizer& optimizer, int64_t last_epoch = -1);
  LRScheduler(const LRScheduler&) = delete;
  LRScheduler& operator=(const LRScheduler&) = delete;
  virtual ~LRScheduler() = default;

  virtual void step();
  std::vector<double> get_last_lr() const { return last_lr_; }
  int64_t last_epoch() const { return last_epoch_; }
  const std::vector<double>& base_lrs() const { return base_lrs_; }
  Optimizer& optimizer() const { return opt_; }

 protected:
  // The lrs of epoch last_epoch_, from the groups' current lrs.
  virtual std::vector<double> get_lr() = 0;
  // The lrs of epoch last_epoch_ from base_lrs alone, for schedules that have a closed form.
  virtual std::optional<std::vector<double>> closed_form_lr() const { return std::nullopt; }
  // torch's _initial_step: the last line of every scheduler's constructor.
  void initial_step();
  std::vector<double> current_lrs() const;

  Optimizer& opt_;
  std::vector<double> base_lrs_;
  int64_t last_epoch_ = -1;
  int64_t step_count_ = 0;
  bool is_initial_ = false;  // inside initial_step
  std::vector<double> last_lr_;

 private:
  void update_lr(std::optional<int64_t> epoch);  // torch's _update_lr
  friend class SequentialLR;
};

// lr × gamma every step_size epochs.
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  int64_t step_size_;
  double gamma_;
};

// Half a cosine from the base lr down to eta_min over T_max epochs (then back up, periodically).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0.0);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  int64_t T_max_;
  double eta_min_;
};

// The lr's factor goes linearly from start_factor to end_factor over total_iters epochs.
class LinearLR : public LRScheduler {
 public:
  explicit LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

// lr × factor until total_iters epochs have passed, then lr (torch's warm-up by a constant).
class ConstantLR : public LRScheduler {
 public:
  explicit ConstantLR(Optimizer& optimizer, double factor = 1.0 / 3, int64_t total_iters = 5);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  double factor_;
  int64_t total_iters_;
};

// lr × gamma every epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  double gamma_;
};

// lr × gamma at each milestone epoch (a milestone listed twice counts twice).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  std::vector<int64_t> milestones_;  // sorted
  double gamma_;
};

// lr × (1 − epoch/total_iters)^power, reaching 0 at total_iters.
class PolynomialLR : public LRScheduler {
 public:
  explicit PolynomialLR(Optimizer& optimizer, int64_t total_iters = 5, double power = 1.0);

 protected:
  std::vector<double> get_lr() override;
  std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  int64_t total_iters_;
  double power_;
};

// lr × fn(epoch) every epoch after the first, one function for all groups or one per group.
class MultiplicativeLR : public LRScheduler {
 public:
  using Fn = std::function<double(int64_t epoch)>;
  MultiplicativeLR(Optimizer& optimizer, std::vector<Fn> lr_lambdas);

 protected:
  std::vector<double> get_lr() override;

 private:
  std::vector<Fn> lr_lambdas_;
};

// lr = base_lr × fn(epoch), one function for all groups or one per group: each group's lr is
// a factor on its own initial_lr, so groups of different peaks follow one shape. A function
// may read more than the epoch (a run's step count, fixed as it goes: train/schedules/).
class LambdaLR : public LRScheduler {
 public:
  using Fn = std::function<double(int64_t epoch)>;
  LambdaLR(Optimizer& optimizer, Fn lr_lambda, int64_t last_epoch = -1);
  LambdaLR(Optimizer& optimizer, std::vector<Fn> lr_lambdas, int64_t last_epoch = -1);

 protected:
  std::vector<double> get_lr() override;

 private:
  std::vector<Fn> lr_lambdas_;
};

// schedulers[i] runs from milestones[i−1] (restarting at its epoch 0 there) to milestones[i].
class SequentialLR : public LRScheduler {
 public:
  SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers, std::vector<int64_t> milestones);
  void step() override;

 protected:
  std::vector<double> get_lr() override;  // throws, as torch's: SequentialLR only steps its schedulers

 private:
  static void recursive_undo(LRScheduler& s);
  std::vector<std::shared_ptr<LRScheduler>> schedulers_;
  std::vector<int64_t> milestones_;
};

}  // namespace ag::optim::lr_scheduler
