// The evaluation of a run, in eval mode and without recording a graph: the mean loss over
// eval_iters random batches of one split, from a generator of its own (so evaluating never
// changes the training batches), or (--eval-iters all) over the whole split in order. With
// several ranks the batches are shared out and the result is the same, bit for bit, as one
// process's.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "autograd/random.h"
#include "models/language_model.h"
#include "distributed/comm.h"

namespace ag::train {

// The mean loss, or nothing when a stop was asked (SIGINT/SIGTERM) before it finished; the
// ranks agree on that. The model is back in training mode either way.
std::optional<double> estimate_loss(models::LanguageModel& model, const std::vector<int64_t>& ids, int64_t batch,
                                    int64_t eval_iters, Generator& gen, distributed::Comm& comm);

// --eval-iters all: windows per batch of split_loss (its result does not depend on the batch but
// through rounding), and the random batches of the training split's loss beside it.
inline constexpr int64_t kSplitRows = 64;
inline constexpr int64_t kTrainBatchesWithWholeSplit = 20;

// The mean loss per predicted character over the whole split, cut into windows of block_size
// characters (each predicting the next block_size, so every character after the first of a
// window is a target once; a tail shorter than a window is left out), batch windows at a time,
// in order. No randomness: the same weights always give the same number. Nothing when a stop
// was asked before it finished.
std::optional<double> split_loss(models::LanguageModel& model, const std::vector<int64_t>& ids, int64_t batch, distributed::Comm& comm);
// The batches split_loss evaluates.
int64_t split_batches(int64_t split_size, int64_t block_size, int64_t batch);

}  // namespace ag::train
