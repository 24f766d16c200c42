// OpenBLAS's work buffers, reserved before the first BLAS call.
//
// OpenBLAS (0.3.21, Debian 12's DYNAMIC_ARCH build) gives every call that is running at once a
// work buffer of BUFFER_SIZE = 32 << 22 bytes (128 MiB, common_x86_64.h) from a table of slots,
// mapping a slot the first time it is needed and keeping it. attograd's threads each call it,
// so up to parallel::num_threads() buffers are needed. When the address space (ulimit -v)
// cannot hold one more, blas_memory_alloc retries the mapping forever at 100% CPU, deaf to
// SIGTERM. So the buffers are taken up front, while the address space left is checked before
// each one: the pages are touched only as GEMMs need them, so a buffer costs address space,
// not memory.
#pragma once
#include <cstdint>

namespace ag {

// The address space one buffer takes (BUFFER_SIZE and its alignment pages);
// HardenAddressSpace.OpenBlasBufferIsWhatTheEstimateSays measures it.
constexpr int64_t kBlasBufferBytes = (int64_t(32) << 22) + 2 * 4096;

// Makes OpenBLAS map the buffers of `threads` calls at once, now: takes that many from its
// table (blas_memory_alloc) and gives them back, taking a new one only while the address space
// left holds it. Returns how many it holds (≤ threads); later calls, at most that many at
// once, never map again. Idempotent: buffers reserved before count.
int reserve_blas_buffers(int threads);
// How many reserve_blas_buffers holds so far.
int blas_buffers_reserved();

// Reserves a buffer for each of attograd's threads. When the address space holds fewer, the
// threads are reduced to as many (parallel::set_num_threads) and stderr says so, as when the
// system lets fewer threads start; when it holds none, throws std::runtime_error naming the
// buffer's size and the limit.
void reserve_blas_buffers_for_threads();

}  // namespace ag
