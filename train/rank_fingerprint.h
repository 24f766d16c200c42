// Checks that every rank holds what rank 0 holds, by comparing a fingerprint (FNV-1a) with rank
// 0's: the corpus at the start, the weights at each evaluation (the allreduce gives every rank
// the same sums and the update is deterministic, so they may never drift). One process: no-ops.
#pragma once
#include <cstdint>

#include "data/corpus.h"
#include "distributed/comm.h"
#include <string>
#include <utility>
#include <vector>

namespace ag::train {

// Throws std::runtime_error naming the corpus when its token ids differ from rank 0's.
void check_same_corpus(distributed::Comm& comm, const data::Corpus& corpus);

// Throws std::runtime_error naming this rank and the iteration when the weights differ.
void check_same_weights(distributed::Comm& comm, const std::vector<std::pair<std::string, Tensor>>& params, int64_t iter);

}  // namespace ag::train
