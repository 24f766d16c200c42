// Embedding: a lookup table [num_embeddings, dim]; N(0, 1) init as in PyTorch.
//   nn::Embedding emb(10, 4);
//   nn::Embedding pad(10, 4); pad.set_padding_idx(0);   // torch.nn.Embedding(10, 4, padding_idx=0)
//   nn::Embedding pre = nn::Embedding::from_pretrained(weights);                   // frozen
//   nn::Embedding tuned = nn::Embedding::from_pretrained(weights, {.freeze = false, .padding_idx = 0});
#pragma once
#include <optional>

#include "nn/module.h"

namespace ag::nn {

// torch.nn.Embedding.from_pretrained's keyword arguments that attograd's Embedding has.
struct EmbeddingFromPretrainedOptions {
  bool freeze = true;  // the weight does not require grad
  std::optional<int64_t> padding_idx{};  // as set_padding_idx, but the row keeps its values
};

class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t dim, DType dtype = DType::Float32, Generator& gen = default_generator());
  // An Embedding whose weight is `embeddings` (2-d, floating): the same storage (writes to
  // either are seen by the other, as torch's Parameter of it), not the same tensor handle, so
  // the flag freeze sets is the embedding's own.
  static Embedding from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options = {});
  Tensor forward(const Tensor& ids) const override;  // int64 (...) -> (..., dim)
  // torch's padding_idx (negative counts from the end): that row gets no gradient, and is zeroed
  // here, as torch's constructor zeroes it. Out of range throws torch's message.
  void set_padding_idx(int64_t padding_idx);

  int64_t num_embeddings, dim;
  Tensor weight;  // (num_embeddings, dim)
  std::optional<int64_t> padding_idx;  // in [0, num_embeddings)

 private:
  Embedding(const Tensor& embeddings, bool freeze);
};

}  // namespace ag::nn
