// The evaluation of a run: the mean loss over eval_iters random batches of one split, in eval
// mode and without recording a graph, from a generator of its own (so evaluating never
// changes the training batches). With several ranks the batches are shared out and the
// result is the same, bit for bit, as one process's.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "autograd/random.h"
#include "models/language_model.h"
#include "train/distributed.h"

namespace ag::train {

// The mean loss, or nothing when a stop was asked (SIGINT/SIGTERM) before it finished; the
// ranks agree on that. The model is back in training mode either way.
std::optional<double> estimate_loss(models::LanguageModel& model, const std::vector<int64_t>& ids, int64_t batch,
                                    int64_t eval_iters, Generator& gen, Comm& comm);

}  // namespace ag::train
