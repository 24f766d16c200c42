// A float32 matrix rounded to bfloat16 (autograd/kernels/bf16.h) as a tight (rows, cols) block,
// in the form a provider's bf16 path takes it: bf16 bits for oneDNN's native bf16 GEMM, float32
// values for the portable path through sgemm (gemm_provider.h). A GEMM under autocast rounds its
// operands into these; a weight's is kept for the autocast region (autograd/autocast.h) so
// that it is rounded once per step, not once per GEMM.
//
// Its storage comes from the tensor buffer cache (autograd/buffer_cache.h) and is not zeroed: a
// step rounds the same sizes every step (a layer's input, the gradient of its output, the MLP's
// hidden activations), and fresh zero-filled vectors had cost a serial memset and page faults
// before every parallel rounding (240 µs of a 1.1 ms linear backward on the default model).
#pragma once
#include <cstddef>
#include <cstdint>

namespace ag::kernels {

class Bf16Matrix {
 public:
  Bf16Matrix() = default;
  Bf16Matrix(const Bf16Matrix&) = delete;
  Bf16Matrix& operator=(const Bf16Matrix&) = delete;
  Bf16Matrix(Bf16Matrix&& other) noexcept;
  Bf16Matrix& operator=(Bf16Matrix&& other) noexcept;
  ~Bf16Matrix();

  // src (rows, cols) at row stride ld. Keeps its storage between calls (it only grows).
  void round(const float* src, int64_t rows, int64_t cols, int64_t ld, bool native);
  // The same in two stages, so that threads can round disjoint rows of one matrix: reshape()
  // (storage for rows × cols, its contents undefined), then round_rows() for each block of rows
  // [r0, r1) of src (row stride ld). An operand that several GEMMs read (a linear's input, the
  // gradient of its output) is so rounded once, in parallel, and kept.
  void reshape(int64_t rows, int64_t cols, bool native);
  void round_rows(const float* src, int64_t ld, int64_t r0, int64_t r1);
  // The same for a block whose first row is `block` (row stride ld): its rows become rows
  // [r0, r1) here. Several blocks of one source (a packed qkv's heads) so fill one matrix.
  void round_block_into_rows(const float* block, int64_t ld, int64_t r0, int64_t r1);
  // round_rows(), each column c of those rows also added row by row into sums[c] (double):
  // threads can so round disjoint rows of the gradient of a linear's output and sum its bias
  // gradient in the same read.
  void round_rows_summing(const float* src, int64_t ld, int64_t r0, int64_t r1, double* sums);
  // Rows [r0, r1) zeroed with memset, by the thread that is about to write them. The storage is
  // recycled, and its lines were last read by both cores (the weight gradient's GEMM reads every
  // row of a rounded gradient), so each plain store of the rounding would first wait for the
  // other core's copy of its line to be invalidated, line after line. memset's `rep stosb`
  // writes whole lines without fetching them. Half of the default model's 768×128 gradient, on
  // a Zen 4: rounding alone 40 µs, this and then the rounding 29, when the two vCPUs shared an
  // L3 (a 60 ns round trip between them); 222 against 74 when they did not (320 ns).
  // Only where it was measured to pay: before every rounding (weights, q/k/v tiles, GELU's h)
  // the extra pass cost more than it saved. round_rows_parallel_summing_columns calls it.
  void claim_rows(int64_t r0, int64_t r1);
  // Element (r, c)'s address, as the provider's bf16 path reads it (bits or values).
  const void* at(int64_t r, int64_t c) const;
  // Row r's storage (after reshape()), for a kernel that rounds as it computes a row (the fused
  // MLP's GELU): native() says which of the two it is.
  uint16_t* bits_row(int64_t r) { return static_cast<uint16_t*>(storage_) + r * ld_; }
  float* values_row(int64_t r) { return static_cast<float*>(storage_) + r * ld_; }
  const void* data() const { return storage_; }
  int64_t ld() const { return ld_; }  // cols (at least 1)
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  bool native() const { return native_; }  // bf16 bits (else float32 values)

 private:
  void* storage_ = nullptr;  // bf16 bits or float32 values, as native_ says
  size_t capacity_ = 0;      // bytes held (a multiple of 64)
  int64_t rows_ = 0, cols_ = 0, ld_ = 1;
  bool native_ = false;
};

}  // namespace ag::kernels
