#include "optim/lr_scheduler.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace ag::optim::lr_scheduler {

namespace {
// Python's // and % on integers: rounded toward −∞, the remainder has the divisor's sign.
int64_t floordiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }
int64_t pymod(int64_t a, int64_t b) { return a - floordiv(a, b) * b; }
}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer, int64_t last_epoch) : opt_(optimizer), last_epoch_(last_epoch) {
  if (last_epoch < -1) throw std::invalid_argument("LRScheduler: last_epoch must be ≥ -1, got " + std::to_string(last_epoch));
  for (size_t g = 0; g < opt_.num_param_groups(); ++g) {
    std::optional<double>& initial = opt_.initial_lr(g);
    if (!initial && last_epoch != -1)
      throw std::invalid_argument("param 'initial_lr' is not specified in param_groups[" + std::to_string(g) +
                                  "] when resuming an optimizer");
    if (!initial) initial = opt_.get_lr(g);  // torch: group.setdefault("initial_lr", group["lr"])
    base_lrs_.push_back(*initial);
  }
}

std::vector<double> LRScheduler::current_lrs() const {
  std::vector<double> out;
  for (size_t g = 0; g < opt_.num_param_groups(); ++g) out.push_back(opt_.get_lr(g));
  return out;
}

void LRScheduler::initial_step() {
  step_count_ = 0;
  is_initial_ = true;
  step();
  is_initial_ = false;
}

void LRScheduler::step() {
  ++step_count_;
  update_lr(std::nullopt);
}

void LRScheduler::update_lr(std::optional<int64_t> epoch) {
  std::vector<double> values;
  if (!epoch) {
    ++last_epoch_;
    values = get_lr();
  } else {
    last_epoch_ = *epoch;
    auto closed = closed_form_lr();
    values = closed ? *closed : get_lr();
  }
  if (values.size() != opt_.num_param_groups())
    throw std::logic_error("LRScheduler: " + std::to_string(values.size()) + " lrs for " +
                           std::to_string(opt_.num_param_groups()) + " parameter groups");
  for (size_t g = 0; g < values.size(); ++g) opt_.set_lr(g, values[g]);
  last_lr_ = current_lrs();
}

// ---- StepLR ---------------------------------------------------------------------------------

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  if (step_size <= 0) throw std::invalid_argument("StepLR: step_size must be positive, got " + std::to_string(step_size));
  initial_step();
}

std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0 || pymod(last_epoch_, step_size_) != 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, static_cast<double>(floordiv(last_epoch_, step_size_))));
  return lrs;
}

// ---- CosineAnnealingLR ----------------------------------------------------------------------

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  if (T_max <= 0) throw std::invalid_argument("CosineAnnealingLR: T_max must be positive, got " + std::to_string(T_max));
  initial_step();
}

std::vector<double> CosineAnnealingLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (is_initial_) return lrs;
  // (torch has one more branch, for a scheduler made with last_epoch ≥ 0, which is not offered.)
  const double T = static_cast<double>(T_max_), e = static_cast<double>(last_epoch_);
  if (pymod(last_epoch_ - 1 - T_max_, 2 * T_max_) == 0) {
    for (size_t g = 0; g < lrs.size(); ++g) lrs[g] = lrs[g] + (base_lrs_[g] - eta_min_) * (1 - std::cos(M_PI / T)) / 2;
    return lrs;
  }
  for (double& lr : lrs) lr = (1 + std::cos(M_PI * e / T)) / (1 + std::cos(M_PI * (e - 1) / T)) * (lr - eta_min_) + eta_min_;
  return lrs;
}

std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_)
    lrs.push_back(eta_min_ + (base - eta_min_) * (1 + std::cos(M_PI * static_cast<double>(last_epoch_) / static_cast<double>(T_max_))) / 2);
  return lrs;
}

// ---- LinearLR -------------------------------------------------------------------------------

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  if (!(start_factor > 0 && start_factor <= 1))
    throw std::invalid_argument("LinearLR: Starting multiplicative factor expected to be greater than 0 and less or equal to 1.");
  if (!(end_factor >= 0 && end_factor <= 1))
    throw std::invalid_argument("LinearLR: Ending multiplicative factor expected to be between 0 and 1.");
  if (total_iters < 0) throw std::invalid_argument("LinearLR: total_iters must be ≥ 0, got " + std::to_string(total_iters));
  initial_step();
}

std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= start_factor_;
    return lrs;
  }
  if (is_initial_ || last_epoch_ > total_iters_) return lrs;
  const double span = end_factor_ - start_factor_;
  for (double& lr : lrs)
    lr *= 1.0 + span / (static_cast<double>(total_iters_) * start_factor_ + static_cast<double>(last_epoch_ - 1) * span);
  return lrs;
}

std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  if (total_iters_ == 0) throw std::invalid_argument("LinearLR: total_iters 0 has no closed form (torch: ZeroDivisionError)");
  std::vector<double> lrs;
  const double done = static_cast<double>(std::min(total_iters_, last_epoch_));
  for (double base : base_lrs_)
    lrs.push_back(base * (start_factor_ + (end_factor_ - start_factor_) * done / static_cast<double>(total_iters_)));
  return lrs;
}

// ---- ConstantLR -----------------------------------------------------------------------------

ConstantLR::ConstantLR(Optimizer& optimizer, double factor, int64_t total_iters)
    : LRScheduler(optimizer), factor_(factor), total_iters_(total_iters) {
  if (!(factor >= 0 && factor <= 1))  // torch's message
    throw std::invalid_argument("ConstantLR: Constant multiplicative factor expected to be between 0 and 1.");
  initial_step();
}

std::vector<double> ConstantLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= factor_;
  } else if (last_epoch_ == total_iters_) {
    for (double& lr : lrs) lr *= 1.0 / factor_;
  }
  return lrs;
}

std::optional<std::vector<double>> ConstantLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * (last_epoch_ >= total_iters_ ? 1.0 : factor_));
  return lrs;
}

// ---- ExponentialLR --------------------------------------------------------------------------

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) {
  initial_step();
}

std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (!is_initial_)
    for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, static_cast<double>(last_epoch_)));
  return lrs;
}

// ---- MultiStepLR ----------------------------------------------------------------------------

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  std::sort(milestones_.begin(), milestones_.end());
  initial_step();
}

std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  const auto hits = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (hits == 0) return lrs;
  for (double& lr : lrs) lr *= std::pow(gamma_, static_cast<double>(hits));
  return lrs;
}

std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
  const auto passed = std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin();
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, static_cast<double>(passed)));
  return lrs;
}

// ---- PolynomialLR ---------------------------------------------------------------------------

PolynomialLR::PolynomialLR(Optimizer& optimizer, int64_t total_iters, double power)
    : LRScheduler(optimizer), total_iters_(total_iters), power_(power) {
  if (total_iters <= 0)
    throw std::invalid_argument("PolynomialLR: total_iters must be positive, got " + std::to_string(total_iters));
  initial_step();
}

std::vector<double> PolynomialLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (is_initial_ || last_epoch_ > total_iters_) return lrs;
  const double T = static_cast<double>(total_iters_), e = static_cast<double>(last_epoch_);
  const double decay = std::pow((1.0 - e / T) / (1.0 - (e - 1) / T), power_);
  for (double& lr : lrs) lr *= decay;
  return lrs;
}

std::optional<std::vector<double>> PolynomialLR::closed_form_lr() const {
  const double done = static_cast<double>(std::min(total_iters_, last_epoch_)) / static_cast<double>(total_iters_);
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(1.0 - done, power_));
  return lrs;
}

// ---- MultiplicativeLR -----------------------------------------------------------------------

MultiplicativeLR::MultiplicativeLR(Optimizer& optimizer, std::vector<Fn> lr_lambdas)
    : LRScheduler(optimizer), lr_lambdas_(std::move(lr_lambdas)) {
  if (lr_lambdas_.size() == 1 && optimizer.num_param_groups() > 1)
    lr_lambdas_.assign(optimizer.num_param_groups(), lr_lambdas_[0]);
  if (lr_lambdas_.size() != optimizer.num_param_groups())
    throw std::invalid_argument("MultiplicativeLR: Expected " + std::to_string(optimizer.num_param_groups()) +
                                " lr_lambdas, but got " + std::to_string(lr_lambdas_.size()));
  for (const Fn& f : lr_lambdas_)
    if (!f) throw std::invalid_argument("MultiplicativeLR: an lr_lambda is empty");
  initial_step();
}

std::vector<double> MultiplicativeLR::get_lr() {
  std::vector<double> lrs = current_lrs();
  if (!is_initial_)
    for (size_t g = 0; g < lrs.size(); ++g) lrs[g] *= lr_lambdas_[g](last_epoch_);
  return lrs;
}

// ---- LambdaLR -------------------------------------------------------------------------------

LambdaLR::LambdaLR(Optimizer& optimizer, Fn lr_lambda, int64_t last_epoch)
    : LambdaLR(optimizer, std::vector<Fn>(optimizer.num_param_groups(), std::move(lr_lambda)), last_epoch) {}

LambdaLR::LambdaLR(Optimizer& optimizer, std::vector<Fn> lr_lambdas, int64_t last_epoch)
    : LRScheduler(optimizer, last_epoch), lr_lambdas_(std::move(lr_lambdas)) {
  if (lr_lambdas_.size() != optimizer.num_param_groups())
    throw std::invalid_argument("LambdaLR: Expected " + std::to_string(optimizer.num_param_groups()) + " lr_lambdas, but got " +
                                std::to_string(lr_lambdas_.size()));
  for (const Fn& f : lr_lambdas_)
    if (!f) throw std::invalid_argument("LambdaLR: an lr_lambda is empty");
  initial_step();
}

std::vector<double> LambdaLR::get_lr() {
  std::vector<double> lrs;
  for (size_t g = 0; g < base_lrs_.size(); ++g) lrs.push_back(base_lrs_[g] * lr_lambdas_[g](last_epoch_));
  return lrs;
}

// ---- SequentialLR ---------------------------------------------------------------------------

SequentialLR::SequentialLR(Optimizer& optimizer, std::vector<std::shared_ptr<LRScheduler>> schedulers,
                           std::vector<int64_t> milestones)
    : LRScheduler(optimizer), schedulers_(std::move(schedulers)), milestones_(std::move(milestones)) {
  if (schedulers_.empty()) throw std::invalid_argument("SequentialLR expects at least one scheduler, but got no scheduler.");
  for (size_t i = 0; i < schedulers_.size(); ++i) {
    if (!schedulers_[i]) throw std::invalid_argument("SequentialLR: scheduler " + std::to_string(i) + " is null");
    if (&schedulers_[i]->optimizer() != &optimizer)
      throw std::invalid_argument("SequentialLR expects all schedulers to belong to the same optimizer, but got scheduler at index " +
                                  std::to_string(i) + " of another optimizer");
  }
  if (milestones_.size() != schedulers_.size() - 1)
    throw std::invalid_argument(
        "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone points, "
        "but got number of schedulers " +
        std::to_string(schedulers_.size()) + " and the number of milestones to be equal to " + std::to_string(milestones_.size()));
  last_epoch_ = 0;
  // Back to the initial lrs, the schedulers' construction steps undone, then the initial step
  // of the scheduler of epoch 0 alone.
  for (size_t g = 0; g < opt_.num_param_groups(); ++g) opt_.set_lr(g, *opt_.initial_lr(g));
  for (auto& s : schedulers_) recursive_undo(*s);
  const auto idx = static_cast<size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), 0) - milestones_.begin());
  schedulers_[idx]->initial_step();
  last_lr_ = schedulers_[idx]->get_last_lr();
}

void SequentialLR::recursive_undo(LRScheduler& s) {
  if (auto* seq = dynamic_cast<SequentialLR*>(&s)) {
    for (auto& child : seq->schedulers_) recursive_undo(*child);
  } else {
    --s.last_epoch_;
  }
}

void SequentialLR::step() {
  ++last_epoch_;
  const auto idx = static_cast<size_t>(std::upper_bound(milestones_.begin(), milestones_.end(), last_epoch_) - milestones_.begin());
  LRScheduler& s = *schedulers_[idx];
  if (idx > 0 && milestones_[idx - 1] == last_epoch_)
    s.update_lr(0);  // the next scheduler starts at its epoch 0
  else
    s.step();
  last_lr_ = s.get_last_lr();
}

std::vector<double> SequentialLR::get_lr() {
  throw std::logic_error("SequentialLR has no get_lr of its own (as torch's): it cannot be restarted at a milestone of another SequentialLR");
}

}  // namespace ag::optim::lr_scheduler
