#include "autograd/buffer_cache.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

namespace ag::buffer_cache {

namespace {
constexpr size_t kMinCachedSize = size_t(1) << 16;   // 64 KiB: below this, malloc does fine
constexpr size_t kMaxCachedBytes = size_t(1) << 31;  // 2 GiB held at most

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kEnabled = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kEnabled = false;
#else
constexpr bool kEnabled = true;
#endif
#else
constexpr bool kEnabled = true;
#endif

struct Cache {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free_lists;  // by exact size
  size_t held = 0;
};
Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: tensors may be freed during exit
  return *c;
}
}  // namespace

void* allocate(size_t bytes) {
  if (kEnabled && bytes >= kMinCachedSize) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.free_lists.find(bytes);
    if (it != c.free_lists.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      c.held -= bytes;
      return p;
    }
  }
  void* p = std::aligned_alloc(64, bytes);
  if (!p) throw std::bad_alloc();
  return p;
}

void release(void* p, size_t bytes) {
  if (!p) return;
  if (kEnabled && bytes >= kMinCachedSize) {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    if (c.held + bytes <= kMaxCachedBytes) {
      c.free_lists[bytes].push_back(p);
      c.held += bytes;
      return;
    }
  }
  std::free(p);
}

int64_t cached_bytes() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return static_cast<int64_t>(c.held);
}

void clear() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& [size, list] : c.free_lists)
    for (void* p : list) std::free(p);
  c.free_lists.clear();
  c.held = 0;
}

}  // namespace ag::buffer_cache
