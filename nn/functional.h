// ag::nn::functional, as libtorch's torch::nn::functional: the losses with their options
// structs, and layer_norm, linear, embedding, softmax and log_softmax (declared in
// autograd/ops.h, with the ops they are made of; these are the same
// functions, so a call is never ambiguous between the two names). Usual spelling:
//   namespace F = ag::nn::functional;
//   F::cross_entropy(logits, targets, {.ignore_index = 0, .label_smoothing = 0.1});
//   F::mse_loss(y, target, {.reduction = ag::kSum});
#pragma once
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

using ag::binary_cross_entropy;
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

}  // namespace ag::nn::functional
