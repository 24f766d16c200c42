#include "train/evaluate.h"

#include "autograd/engine.h"
#include "data/batch.h"
#include "train/interrupt.h"

namespace ag::train {

// Checks for SIGINT and SIGTERM between batches, since a long evaluation must not make a stop
// request wait. With several ranks, every rank draws every batch (the generators stay in step)
// and computes the loss of batches i with i % N == rank; the sum over ranks of these vectors
// holds each loss exactly once (x + 0 is exact), and it is added up in the same order as by one
// process. The ranks agree on a stop before each round of N batches, so they all stop at the
// same one.
std::optional<double> estimate_loss(models::LanguageModel& model, const std::vector<int64_t>& ids, int64_t batch,
                                    int64_t eval_iters, Generator& gen, Comm& comm) {
  NoGradGuard no_grad;
  model.eval();
  std::vector<double> losses(static_cast<size_t>(eval_iters), 0.0);
  for (int64_t i = 0; i < eval_iters; ++i) {
    bool stop = InterruptGuard::requested();
    if (comm.distributed()) {  // agreed at the start of each round, never in between
      double any = stop ? 1.0 : 0.0;
      if (i % comm.size() == 0) comm.allreduce_sum(&any, 1);
      stop = i % comm.size() == 0 && any > 0;
    }
    if (stop) {
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

}  // namespace ag::train
