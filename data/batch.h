// Training batches and evaluation windows over a split's token ids.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "autograd/random.h"
#include "autograd/tensor.h"

namespace ag::data {

// Random windows for training: x and y are int64 tensors of shape (batch, block). Each row
// starts at i = gen.randint(0, len - block), so the block + 1 characters fit; x holds
// ids[i, i + block) and y the same shifted by one (the next character at each position).
// The draws come from gen alone, so the same generator state gives the same batch.
std::pair<Tensor, Tensor> get_batch(const std::vector<int64_t>& ids, int64_t batch, int64_t block, Generator& gen);

// Windows (start, length) that together predict every token of a split after the first
// exactly once: starts 0, block, 2 * block, ...; the window at i uses x = t[i, i + length)
// and y = t[i + 1, i + length + 1). Every window has length block except maybe the last,
// which is shorter; a zero-length window is left out.
std::vector<std::pair<int64_t, int64_t>> eval_windows(int64_t n_tokens, int64_t block);

}  // namespace ag::data
