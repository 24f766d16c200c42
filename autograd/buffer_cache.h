// Reuse of large tensor buffers. A training step allocates the same sizes every step; giving a
// freed buffer back to the next request of the same size avoids the page faults (and zeroing
// by the kernel) that fresh multi-megabyte allocations cost each time. Small buffers go
// straight to malloc, which already recycles them well.
//
// The cache holds at most kMaxCachedBytes; beyond that, buffers are freed. It is off under
// AddressSanitizer, so that use-after-free is still caught there.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ag::buffer_cache {

void* allocate(size_t bytes);             // 64-byte aligned; bytes is a multiple of 64
void release(void* p, size_t bytes);      // p came from allocate(bytes)
int64_t cached_bytes();                   // held for reuse right now
void clear();                             // frees everything held

}  // namespace ag::buffer_cache
