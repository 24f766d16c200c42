// How much memory this process may use: the smallest of the machine's physical memory, the
// address-space limit (ulimit -v) and the cgroup's memory.max. Used to refuse, up front and
// with a message naming the estimate, a model or batch that could never fit.
#pragma once
#include <cstdint>
#include <string>

namespace ag {

struct MemoryLimit {
  int64_t bytes;      // INT64_MAX when nothing could be read
  std::string where;  // "physical memory", "ulimit -v", "cgroup memory.max"
};
MemoryLimit memory_limit();

// "1.5 GB", "320 MB", "12 KB": for messages.
std::string human_bytes(int64_t bytes);

}  // namespace ag
