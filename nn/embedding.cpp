#include "nn/embedding.h"

#include "autograd/ops.h"

namespace ag::nn {

Embedding::Embedding(int64_t n, int64_t d, DType dtype, Generator& gen) : num_embeddings(n), dim(d) {
  if (n <= 0 || d <= 0) throw std::invalid_argument("Embedding: sizes must be positive, got " + std::to_string(n) + " x " + std::to_string(d));
  weight = register_parameter("weight", {{n, d}, Init::normal(1.0), OptimGroup::Decay, 0}, dtype, gen);
}

Tensor Embedding::forward(const Tensor& ids) const { return embedding(ids, weight); }

}  // namespace ag::nn
