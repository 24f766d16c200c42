// ag::nn::functional, as libtorch's torch::nn::functional: the losses with their options
// structs, and layer_norm, linear, embedding, softmax and log_softmax (declared in
// autograd/ops.h, with the ops they are made of; these are the same functions, so a call is
// never ambiguous between the two names), except binary_cross_entropy, which is two functions
// in libtorch too (below). Usual spelling:
//   namespace F = ag::nn::functional;
//   F::cross_entropy(logits, targets, {.ignore_index = 0, .label_smoothing = 0.1});
//   F::mse_loss(y, target, {.reduction = ag::kSum});
#pragma once
#include <optional>

#include "autograd/ops.h"

namespace ag::nn::functional {

using ag::Reduction;
using ag::kMean;
using ag::kNone;
using ag::kSum;

using ag::BinaryCrossEntropyFuncOptions;
using ag::BinaryCrossEntropyWithLogitsFuncOptions;
using ag::CrossEntropyFuncOptions;
using ag::L1LossFuncOptions;
using ag::MSELossFuncOptions;
using ag::NLLLossFuncOptions;

using ag::binary_cross_entropy_with_logits;
using ag::cross_entropy;
using ag::embedding;
using ag::l1_loss;
using ag::layer_norm;
using ag::linear;
using ag::log_softmax;
using ag::mse_loss;
using ag::nll_loss;
using ag::softmax;

// torch::nn::functional::embedding with its options: a lookup whose rows at padding_idx pass no
// gradient back to the weight (their values are the weight's row all the same).
struct EmbeddingFuncOptions {
  std::optional<int64_t> padding_idx{};  // negative counts from the end
};
Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& options);
// padding_idx in [−n, n) as an index in [0, n); torch's message, starting with `who`, otherwise.
int64_t padding_index(int64_t padding_idx, int64_t num_embeddings, const char* who);

// torch::nn::functional::binary_cross_entropy: the target must have the input's shape
// (libtorch's deprecation message otherwise), where ag::binary_cross_entropy, ATen's, reads both
// with their size-1 dims squeezed out (an (N, 1) input against an (N) target).
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& options = {});

}  // namespace ag::nn::functional
