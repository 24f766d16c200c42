// Embedding: a lookup table [num_embeddings, dim]; N(0, 1) init as in PyTorch.
#pragma once
#include "nn/module.h"

namespace ag::nn {

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim, DType dtype = DType::Float32, Generator& gen = default_generator());
  Tensor forward(const Tensor& ids) const override;  // int64 (...) -> (..., dim)

  int64_t num_embeddings, dim;
  Tensor weight;  // (num_embeddings, dim)
};

}  // namespace ag::nn
