#include "train/evaluate.h"

#include <algorithm>
#include <stdexcept>

#include "autograd/engine.h"
#include "data/batch.h"
#include "train/interrupt.h"

namespace ag::train {

namespace {
// A stop (SIGINT/SIGTERM) before batch i of an evaluation. With several ranks it is agreed at
// the start of each round of N batches, never in between, so that all stop at the same batch.
bool stop_before_batch(int64_t i, distributed::Comm& comm) {
  const bool asked = InterruptGuard::requested();
  if (!comm.distributed()) return asked;
  if (i % comm.size() != 0) return false;
  double any = asked ? 1.0 : 0.0;
  comm.allreduce_sum(&any, 1);
  return any > 0;
}

int64_t split_windows(int64_t split_size, int64_t block_size) { return split_size > 0 ? (split_size - 1) / block_size : 0; }
}  // namespace

// Checks for SIGINT and SIGTERM between batches, since a long evaluation must not make a stop
// request wait. With several ranks, every rank draws every batch (the generators stay in step)
// and computes the loss of batches i with i % N == rank; the sum over ranks of these vectors
// holds each loss exactly once (x + 0 is exact), and it is added up in the same order as by one
// process. The ranks agree on a stop before each round of N batches, so they all stop at the
// same one.
std::optional<double> estimate_loss(models::LanguageModel& model, const std::vector<int64_t>& ids, int64_t batch,
                                    int64_t eval_iters, Generator& gen, distributed::Comm& comm) {
  NoGradGuard no_grad;
  model.eval();
  std::vector<double> losses(static_cast<size_t>(eval_iters), 0.0);
  for (int64_t i = 0; i < eval_iters; ++i) {
    if (stop_before_batch(i, comm)) {
      model.train();
      return std::nullopt;
    }
    auto [x, y] = data::get_batch(ids, batch, model.block_size(), gen);
    if (i % comm.size() == comm.rank()) losses[static_cast<size_t>(i)] = model.loss(x, y).item();
  }
  comm.allreduce_sum(losses.data(), static_cast<int>(losses.size()));
  model.train();
  double total = 0;
  for (double l : losses) total += l;
  return total / static_cast<double>(eval_iters);
}

int64_t split_batches(int64_t split_size, int64_t block_size, int64_t batch) {
  return (split_windows(split_size, block_size) + batch - 1) / batch;
}

std::optional<double> split_loss(models::LanguageModel& model, const std::vector<int64_t>& ids, int64_t batch, distributed::Comm& comm) {
  NoGradGuard no_grad;
  model.eval();
  const int64_t T = model.block_size(), windows = split_windows(static_cast<int64_t>(ids.size()), T);
  const int64_t batches = split_batches(static_cast<int64_t>(ids.size()), T, batch);
  if (batches == 0) throw std::invalid_argument("split_loss: the split holds no window of block_size + 1 characters");
  // Each batch's summed loss (its mean times its rows: every row has T targets), shared out and
  // added up as estimate_loss's.
  std::vector<double> sums(static_cast<size_t>(batches), 0.0);
  for (int64_t b = 0; b < batches; ++b) {
    if (stop_before_batch(b, comm)) {
      model.train();
      return std::nullopt;
    }
    if (b % comm.size() != comm.rank()) continue;
    const int64_t first = b * batch, rows = std::min(batch, windows - first);
    std::vector<int64_t> x(static_cast<size_t>(rows * T)), y(x.size());
    for (int64_t r = 0; r < rows; ++r) {
      const auto from = ids.begin() + (first + r) * T;  // window first + r: characters [from, from + T]
      std::copy(from, from + T, x.begin() + r * T);
      std::copy(from + 1, from + T + 1, y.begin() + r * T);
    }
    const double mean = model.loss(Tensor::from_vector(x, {rows, T}), Tensor::from_vector(y, {rows, T})).item();
    sums[static_cast<size_t>(b)] = mean * static_cast<double>(rows);
  }
  comm.allreduce_sum(sums.data(), static_cast<int>(sums.size()));
  model.train();
  double total = 0;
  for (double v : sums) total += v;
  return total / static_cast<double>(windows);
}

}  // namespace ag::train
