// Mixed precision on the CPU, torch.autocast("cpu", dtype=torch.bfloat16)'s model: inside an
// AutocastGuard(Precision::BF16), every float32 matrix product (linear, matmul, attention's
// Q·Kᵀ and P·V, the fused MLP, the tied head) takes its two operands rounded to bfloat16 and
// accumulates in float32; its output stays float32. Everything else (norms, softmax and its
// statistics, the loss, reductions, the optimizer, parameters and their .grad) runs as without
// the guard, in float32. float64 tensors are never touched.
//
// Per thread, like grad mode; attograd's pool runs each chunk of a parallel_for under the
// caller's setting (as torch's intra-op threads inherit its thread-local state), and a node's
// backward runs under the setting its forward was recorded under, so the gradients' GEMMs take
// bf16 operands too, whether or not backward() is called inside the guard (torch gets this
// from the bf16 tensors its backward receives).
//
//   {
//     ag::AutocastGuard bf16(ag::Precision::BF16);   // torch: with torch.autocast("cpu", dtype=torch.bfloat16):
//     loss = model.loss(x, y);
//   }
//   loss.backward();
#pragma once
#include <cstdint>

namespace ag {

class Tensor;
namespace kernels {
class Bf16Matrix;
}

enum class Precision : uint8_t { FP32, BF16 };
const char* precision_name(Precision p);  // "fp32", "bf16"

// This thread's precision of float32 GEMMs: FP32 outside any guard.
Precision autocast_precision();
bool is_autocast_enabled();  // autocast_precision() == BF16

// RAII: float32 GEMMs at precision `p` while it lives, then the previous setting.
// AutocastGuard(Precision::FP32) turns autocast off inside an autocast region
// (torch.autocast(..., enabled=False)).
class AutocastGuard {
 public:
  explicit AutocastGuard(Precision p = Precision::BF16);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  Precision prev_;
};
using autocast = AutocastGuard;  // torch's spelling: ag::autocast bf16(ag::Precision::BF16);

// A weight's bf16 copy for the GEMMs of this autocast region, as torch's autocast caches the
// casts of leaf tensors that require grad: rounded the first time a GEMM asks for it inside the
// outermost AutocastGuard(BF16) of this thread, then reused by every GEMM of the region (the
// forward's and, under the training step's guard, the backward's, which finds it through its
// saved copy: the same storage), so a training step rounds each weight once. Null outside
// autocast, for a float64 tensor, or for one that is not a 2-d contiguous leaf requiring grad
// (or the same storage as one kept). The region's copies are dropped when it ends (the
// optimizer then changes the weights), or when the tensor's version moves.
const kernels::Bf16Matrix* autocast_weight(const Tensor& w);
void clear_autocast_cache();  // torch.clear_autocast_cache()

namespace detail {
// The raw thread-local switch, for the pool and the engine, which carry a setting from one
// thread (or one moment) to another. Not a guard: callers restore what they set.
void set_autocast_precision(Precision p);
}  // namespace detail

}  // namespace ag
