// A float32 matrix rounded to bfloat16 (autograd/kernels/bf16.h) as a tight (rows, cols) block,
// in the form a provider's bf16 path takes it: bf16 bits for oneDNN's native bf16 GEMM, float32
// values for the portable path through sgemm (gemm_provider.h). A GEMM under autocast rounds its
// operands into these; a weight's is kept for the autocast region (autograd/autocast.h) so
// that it is rounded once per step, not once per GEMM.
#pragma once
#include <cstdint>
#include <vector>

namespace ag::kernels {

class Bf16Matrix {
 public:
  // src (rows, cols) at row stride ld. Keeps its storage between calls (it only grows).
  void round(const float* src, int64_t rows, int64_t cols, int64_t ld, bool native);
  const void* data() const { return data_; }
  int64_t ld() const { return ld_; }  // cols (at least 1)
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  bool native() const { return native_; }  // bf16 bits (else float32 values)

 private:
  std::vector<uint16_t> bits_;
  std::vector<float> values_;
  const void* data_ = nullptr;
  int64_t rows_ = 0, cols_ = 0, ld_ = 1;
  bool native_ = false;
};

}  // namespace ag::kernels
