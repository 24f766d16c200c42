// Embedding: a lookup table [num_embeddings, dim]; N(0, 1) init as in PyTorch.
//   nn::Embedding emb(10, 4);
//   nn::Embedding pre = nn::Embedding::from_pretrained(weights);                   // frozen
//   nn::Embedding tuned = nn::Embedding::from_pretrained(weights, {.freeze = false});
#pragma once
#include "nn/module.h"

namespace ag::nn {

// torch.nn.Embedding.from_pretrained's keyword arguments that attograd's Embedding has.
struct EmbeddingFromPretrainedOptions {
  bool freeze = true;  // the weight does not require grad
};

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim, DType dtype = DType::Float32, Generator& gen = default_generator());
  // An Embedding whose weight is `embeddings` (2-d, floating): the same storage (writes to
  // either are seen by the other, as torch's Parameter of it), not the same tensor handle, so
  // the flag freeze sets is the embedding's own.
  static Embedding from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options = {});
  Tensor forward(const Tensor& ids) const override;  // int64 (...) -> (..., dim)

  int64_t num_embeddings, dim;
  Tensor weight;  // (num_embeddings, dim)

 private:
  Embedding(const Tensor& embeddings, bool freeze);
};

}  // namespace ag::nn
