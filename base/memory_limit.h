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

// The address-space limit (ulimit -v) in bytes, INT64_MAX without one; the address space this
// process maps now (VmSize); and what the limit leaves of it (INT64_MAX without a limit).
// Address space, not memory: OpenBLAS's buffers (autograd/blas_buffers.h), thread stacks and
// malloc's arenas take it long before they take memory.
int64_t address_space_limit();
int64_t address_space_in_use();
int64_t address_space_left();

// Throws std::runtime_error("<what> needs about X of address space, more than the Y the
// address-space limit (ulimit -v N) leaves with Z in use; <advice>") unless need_bytes fit in
// what the limit leaves. Nothing is checked without such a limit.
void require_address_space(const std::string& what, int64_t need_bytes, const std::string& advice);

}  // namespace ag
