#include "train/step.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "autograd/profiler.h"
#include "nn/utils/clip_grad.h"
#include "train/finite.h"
#include "train/interrupt.h"

namespace ag::train {

Step::Step(models::LanguageModel& model, optim::Optimizer& opt, distributed::Comm& comm, StepOptions options)
    : model_(model), opt_(opt), comm_(comm), options_(options) {
  if (options_.grad_accum < 1) throw std::invalid_argument("Step: grad_accum must be positive");
  if (comm_.distributed()) {
    reducer_ = std::make_unique<distributed::Reducer>(comm_, model_.parameters());
    reducer_->attach_hooks();  // buckets start reducing during backward
  }
}

Step::~Step() = default;

StepResult Step::run(const Tensor& x, const Tensor& y, int64_t iter) {
  const int64_t B = x.size(0), K = options_.grad_accum, N = comm_.size();
  if (B % N != 0 || (B / N) % K != 0)
    throw std::invalid_argument("Step: a batch of " + std::to_string(B) + " rows does not split into " +
                                std::to_string(N) + " ranks × " + std::to_string(K) + " micro-batches");
  const int64_t per_rank = B / N, micro = per_rank / K;
  StepResult r;
  // The step's phases for the profiler (--profile-steps): the events of each op nest in them.
  profiler::ScopeSequence phase("zero_grad", profiler::Category::Phase);
  opt_.zero_grad();
  {
    std::optional<DetectAnomalyGuard> anomaly;  // over this step's forwards and backwards
    std::optional<AnomalyScope> anomaly_step;
    if (options_.detect_anomaly) anomaly.emplace(), anomaly_step.emplace("training step " + std::to_string(iter));
    // bf16: every GEMM of the forwards and backwards; clipping and the optimizer stay outside
    const AutocastGuard precision(options_.precision);
    double loss_sum = 0;
    for (int64_t k = 0; k < K; ++k) {
      phase.next("forward");
      Tensor xs = x, ys = y;  // one process, one micro-batch: the batch itself
      if (micro != B) {
        const int64_t row = comm_.rank() * per_rank + k * micro;
        xs = narrow(x, 0, row, micro);
        ys = narrow(y, 0, row, micro);
      }
      Tensor loss = model_.loss(xs, ys);
      loss_sum += loss.item();
      if (K > 1) loss = loss * (1.0 / static_cast<double>(K));  // the step's loss is the mean over micro-batches
      if (reducer_ && k == K - 1) reducer_->prepare();
      phase.next("backward");
      loss.backward();
    }
    r.backward_end = std::chrono::steady_clock::now();
    phase.next("optimizer");  // the gradients' allreduce, the agreement, clipping and the update
    if (reducer_) reducer_->finish();
    r.loss = loss_sum / static_cast<double>(K);
  }
  // With several ranks: the step's loss is the mean of the ranks' losses, and a stop asked of
  // any rank (SIGINT/SIGTERM) is agreed on by all, so all stop after this same step.
  if (comm_.distributed()) {
    double agree[2] = {r.loss, InterruptGuard::requested() ? 1.0 : 0.0};
    comm_.allreduce_sum(agree, 2);
    r.loss = agree[0] / static_cast<double>(N);
    r.stop = agree[1] > 0;
  }
  if (after_backward) after_backward(r.loss);
  // The norm before clipping; with clipping off, infinity as the bound only measures it. The
  // gradients are averaged, so every rank sees the same norm and takes the same branch. The
  // norm is non-finite exactly when a gradient is: then nothing is scaled (torch's
  // error_if_nonfinite), and only then is the culprit looked for.
  const std::vector<Tensor> params = model_.parameters();
  const double bound = options_.grad_clip > 0 ? options_.grad_clip : std::numeric_limits<double>::infinity();
  bool finite_norm = true;
  try {
    r.grad_norm = nn::utils::clip_grad_norm_(params, bound, 2.0, /*error_if_nonfinite=*/true);
  } catch (const std::runtime_error&) {
    r.grad_norm = std::numeric_limits<double>::quiet_NaN();
    finite_norm = false;
  }
  if (std::isfinite(r.loss) && finite_norm) {
    opt_.step();
    return r;
  }
  std::string bad = "(the loss itself)";
  if (std::isfinite(r.loss)) {
    std::vector<std::pair<std::string, Tensor>> grads;
    for (const auto& [name, p] : model_.named_parameters()) grads.emplace_back(name, p.grad());
    bad = first_nonfinite(grads);
    if (bad.empty()) bad = "none (the norm of finite gradients overflowed)";
  }
  char msg[512];
  std::snprintf(msg, sizeof msg, "non-finite %s at iter %ld: loss %g, first non-finite gradient in %s",
                std::isfinite(r.loss) ? "gradient" : "loss", static_cast<long>(iter), r.loss, bad.c_str());
  r.nonfinite = msg;
  opt_.zero_grad();
  return r;
}

}  // namespace ag::train
