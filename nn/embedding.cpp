#include "nn/embedding.h"

#include "autograd/grad_mode.h"
#include "autograd/ops.h"
#include "nn/functional.h"

namespace ag::nn {

Embedding::Embedding(int64_t n, int64_t d, DType dtype, Generator& gen) : num_embeddings(n), dim(d) {
  if (n <= 0 || d <= 0) throw std::invalid_argument("Embedding: sizes must be positive, got " + std::to_string(n) + " x " + std::to_string(d));
  weight = register_parameter("weight", {{n, d}, Init::normal(1.0), OptimGroup::Decay, 0}, dtype, gen);
}

Embedding::Embedding(const Tensor& embeddings, bool freeze) : num_embeddings(0), dim(0) {
  if (!embeddings.defined() || embeddings.dim() != 2)  // torch's message
    throw std::invalid_argument("Embeddings parameter is expected to be 2-dimensional, got " +
                                (embeddings.defined() ? describe(embeddings) : std::string("an undefined Tensor")));
  if (!is_floating(embeddings.dtype()))
    throw std::invalid_argument("Embedding::from_pretrained: the embeddings must be floating, got " + describe(embeddings));
  num_embeddings = embeddings.size(0), dim = embeddings.size(1);
  weight = register_parameter("weight", embeddings.detach(), /*requires_grad=*/!freeze);
}

Embedding Embedding::from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options) {
  Embedding e(embeddings, options.freeze);
  if (options.padding_idx) e.padding_idx = functional::padding_index(*options.padding_idx, e.num_embeddings, "Padding_idx");
  return e;
}

void Embedding::set_padding_idx(int64_t index) {
  padding_idx = functional::padding_index(index, num_embeddings, "Padding_idx");
  NoGradGuard no_grad;  // the row's initial values, as torch's _fill_padding_idx_with_zero
  weight.select(0, *padding_idx).zero_();
}

Tensor Embedding::forward(const Tensor& ids) const {
  return functional::embedding(ids, weight, {.padding_idx = padding_idx});
}

}  // namespace ag::nn
