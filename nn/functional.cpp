#include "nn/functional.h"

namespace ag::nn::functional {

int64_t padding_index(int64_t padding_idx, int64_t num_embeddings, const char* who) {
  if (padding_idx >= num_embeddings || padding_idx < -num_embeddings)  // torch's messages
    throw std::invalid_argument(std::string(who) + " must be within num_embeddings (padding_idx " + std::to_string(padding_idx) + ", num_embeddings " +
                                std::to_string(num_embeddings) + ")");
  return padding_idx < 0 ? padding_idx + num_embeddings : padding_idx;
}

Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options) {
  Tensor out = ag::embedding(input, weight);
  if (!options.padding_idx || !out.requires_grad()) return out;
  const int64_t pad = padding_index(*options.padding_idx, weight.size(0), "Padding_idx");
  // out = weight[ids] with the rows at pad taken from a detached copy  =>  dweight[pad] = 0
  return where(unsqueeze(eq(input, static_cast<double>(pad)), -1), out.detach(), out);
}

Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options) {
  if (input.shape() != target.shape())  // libtorch's message
    throw std::invalid_argument("Using a target size (" + shape_str(target.shape()) +
                                ") that is different to the input size (" + shape_str(input.shape()) +
                                ") is deprecated. Please ensure they have the same size.");
  return ag::binary_cross_entropy(input, target, options);
}

}  // namespace ag::nn::functional
