#include "autograd/kernels/bf16_matrix.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "autograd/buffer_cache.h"
#include "autograd/kernels/bf16.h"

namespace ag::kernels {

Bf16Matrix::Bf16Matrix(Bf16Matrix&& other) noexcept
    : storage_(std::exchange(other.storage_, nullptr)),
      capacity_(std::exchange(other.capacity_, 0)),
      rows_(std::exchange(other.rows_, 0)),
      cols_(std::exchange(other.cols_, 0)),
      ld_(std::exchange(other.ld_, 1)),
      native_(other.native_) {}

Bf16Matrix& Bf16Matrix::operator=(Bf16Matrix&& other) noexcept {
  if (this != &other) {
    buffer_cache::release(storage_, capacity_);
    storage_ = std::exchange(other.storage_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    rows_ = std::exchange(other.rows_, 0);
    cols_ = std::exchange(other.cols_, 0);
    ld_ = std::exchange(other.ld_, 1);
    native_ = other.native_;
  }
  return *this;
}

Bf16Matrix::~Bf16Matrix() { buffer_cache::release(storage_, capacity_); }

void Bf16Matrix::reshape(int64_t rows, int64_t cols, bool native) {
  rows_ = rows, cols_ = cols, ld_ = std::max<int64_t>(cols, 1), native_ = native;
  const size_t element = native ? sizeof(uint16_t) : sizeof(float);
  const size_t bytes = (static_cast<size_t>(rows * cols) * element + 63) / 64 * 64;  // the cache's multiple of 64
  if (bytes <= capacity_) return;
  // Grows only; what it held is not kept (nothing is rounded yet after a reshape).
  buffer_cache::release(storage_, capacity_);
  storage_ = nullptr, capacity_ = 0;  // (still consistent if allocate throws)
  storage_ = buffer_cache::allocate(bytes);
  capacity_ = bytes;
}

void Bf16Matrix::claim_rows(int64_t r0, int64_t r1) {
  if (r1 <= r0) return;
  const size_t element = native_ ? sizeof(uint16_t) : sizeof(float);
  std::memset(static_cast<char*>(storage_) + static_cast<size_t>(r0 * ld_) * element, 0,
              static_cast<size_t>((r1 - r0) * ld_) * element);
}

void Bf16Matrix::round_rows(const float* src, int64_t ld, int64_t r0, int64_t r1) {
  round_block_into_rows(src + r0 * ld, ld, r0, r1);
}

void Bf16Matrix::round_block_into_rows(const float* block, int64_t ld, int64_t r0, int64_t r1) {
  if (native_)
    round_block_to_bf16(block, r1 - r0, cols_, ld, bits_row(r0));
  else
    round_block_to_bf16(block, r1 - r0, cols_, ld, values_row(r0));
}

void Bf16Matrix::round_rows_summing(const float* src, int64_t ld, int64_t r0, int64_t r1, double* sums) {
  if (native_)
    round_block_to_bf16_summing_columns(src + r0 * ld, r1 - r0, cols_, ld, bits_row(r0), ld_, sums);
  else
    round_block_to_bf16_summing_columns(src + r0 * ld, r1 - r0, cols_, ld, values_row(r0), ld_, sums);
}

void Bf16Matrix::round(const float* src, int64_t rows, int64_t cols, int64_t ld, bool native) {
  reshape(rows, cols, native);
  round_rows(src, ld, 0, rows);
}

const void* Bf16Matrix::at(int64_t r, int64_t c) const {
  return native_ ? static_cast<const void*>(static_cast<const uint16_t*>(storage_) + r * ld_ + c)
                 : static_cast<const void*>(static_cast<const float*>(storage_) + r * ld_ + c);
}

}  // namespace ag::kernels
