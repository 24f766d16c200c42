// The attention probe: one MultiheadAttention forward and backward on tensors from a
// safetensors CASE file, returning the RESULT tensors. `attograd attention` wraps it; the
// parity tests run it on cases written by PyTorch.
//
// CASE tensors: query, key, value, in_proj_weight, out_proj.weight (required); in_proj_bias,
//   out_proj.bias, attn_mask (BOOL or the float dtype), key_padding_mask (BOOL), grad_output
//   (optional; without it the gradient is that of output.sum()). Floats are all F32 or all F64.
// CASE __metadata__: num_heads (required); batch_first, is_causal, average_attn_weights as
//   "true"/"false" (defaults false, false, true). Any other key is refused (a misspelt
//   "is_casual" must not silently mean false).
// RESULT: output, attn_weights, and grad.<name> for query, key, value and each parameter present.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "autograd/safetensors.h"

namespace ag::nn {

// Throws std::runtime_error naming the case (its source) and the problem, also when its
// memory estimate (below) exceeds what this process may use, before anything is allocated.
std::vector<std::pair<std::string, Tensor>> run_attention_probe(const SafeTensorsFile& case_file);

// About the bytes running the case takes, from its tensors' shapes alone (0 when the shapes
// are not those of an attention case; the probe then names the problem). Throws
// std::overflow_error when the sizes do not fit 64 bits.
int64_t attention_probe_memory_bytes(const SafeTensorsFile& case_file, int64_t num_heads, bool batch_first);

}  // namespace ag::nn
