#include "data/batch.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace ag::data {

std::pair<Tensor, Tensor> get_batch(const std::vector<int64_t>& ids, int64_t batch, int64_t block, Generator& gen) {
  if (batch < 1 || block < 1)
    throw std::invalid_argument("get_batch: batch and block must be at least 1, got batch " + std::to_string(batch) +
                                ", block " + std::to_string(block));
  const int64_t len = static_cast<int64_t>(ids.size());
  if (len < block + 1)
    throw std::invalid_argument("get_batch: " + std::to_string(len) + " tokens cannot hold a window of block " +
                                std::to_string(block) + " plus one target (need " + std::to_string(block + 1) + ")");

  Tensor x = Tensor::empty({batch, block}, DType::Int64);
  Tensor y = Tensor::empty({batch, block}, DType::Int64);
  int64_t* xp = x.data<int64_t>();
  int64_t* yp = y.data<int64_t>();
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t i = gen.randint(0, len - block);
    const auto src = ids.begin() + i;
    std::copy(src, src + block, xp + b * block);
    std::copy(src + 1, src + block + 1, yp + b * block);
  }
  return {x, y};
}

std::vector<std::pair<int64_t, int64_t>> eval_windows(int64_t n_tokens, int64_t block) {
  if (block < 1) throw std::invalid_argument("eval_windows: block must be at least 1, got " + std::to_string(block));
  // n tokens give n - 1 (input, next character) pairs; the window at i covers targets i+1 .. i+length.
  std::vector<std::pair<int64_t, int64_t>> windows;
  for (int64_t i = 0; i + 1 < n_tokens; i += block) windows.emplace_back(i, std::min(block, n_tokens - 1 - i));
  return windows;
}

}  // namespace ag::data
