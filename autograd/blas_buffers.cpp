#include "autograd/blas_buffers.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/memory_limit.h"
#include "autograd/parallel.h"

// OpenBLAS's own allocator of work buffers (driver/others/memory.c), exported by libopenblas.
extern "C" void* blas_memory_alloc(int procpos);
extern "C" void blas_memory_free(void* buffer);

namespace ag {

namespace {
std::mutex g_mu;
int g_reserved = 0;  // buffers this process made OpenBLAS map (they stay mapped)
}  // namespace

int reserve_blas_buffers(int threads) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (threads <= g_reserved) return threads;
  // Holding the first ones while taking the next makes each a different slot. Slots mapped
  // before (by calls already made) may be handed out first; the check below does not know it
  // and counts each as new: it errs on the safe side.
  std::vector<void*> held;
  const int64_t left = address_space_left();
  for (int i = 0; i < threads; ++i) {
    // Every buffer past those reserved before may be a new mapping: each must fit.
    if (i >= g_reserved && left / kBlasBufferBytes < i + 1 - g_reserved) break;
    void* p = blas_memory_alloc(0);
    if (!p) break;
    held.push_back(p);
  }
  for (void* p : held) blas_memory_free(p);
  g_reserved = std::max(g_reserved, static_cast<int>(held.size()));
  return static_cast<int>(held.size());
}

int blas_buffers_reserved() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_reserved;
}

void reserve_blas_buffers_for_threads() {
  const int threads = parallel::num_threads();
  const int n = reserve_blas_buffers(threads);
  if (n >= threads) return;
  const std::string each = human_bytes(kBlasBufferBytes);
  if (n == 0)
    throw std::runtime_error("OpenBLAS needs a work buffer of " + each +
                             " of address space for each thread that calls it, but the address-space limit (ulimit -v " +
                             std::to_string(address_space_limit() / 1024) + ") leaves only " +
                             human_bytes(address_space_left()) + " with " + human_bytes(address_space_in_use()) +
                             " in use; raise ulimit -v by at least " + each);
  std::fprintf(stderr,
               "attograd: the address-space limit (ulimit -v) leaves room for the OpenBLAS work buffers (%s each) of "
               "only %d of %d threads; running on %d\n",
               each.c_str(), n, threads, n);
  parallel::set_num_threads(n);
}

}  // namespace ag
