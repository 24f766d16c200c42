#include "base/memory_limit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <limits>
#include <stdexcept>

namespace ag {

namespace {
constexpr int64_t kNoLimit = std::numeric_limits<int64_t>::max();
}  // namespace

int64_t address_space_limit() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
      rl.rlim_cur >= static_cast<rlim_t>(kNoLimit))
    return kNoLimit;
  return static_cast<int64_t>(rl.rlim_cur);
}

MemoryLimit memory_limit() {
  MemoryLimit m{kNoLimit, "nothing"};
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && pages <= kNoLimit / page) m = {static_cast<int64_t>(pages) * page, "physical memory"};
  const int64_t as = address_space_limit();
  if (as < m.bytes) m = {as, "the address-space limit (ulimit -v)"};
  std::ifstream cg("/sys/fs/cgroup/memory.max");
  long long v = 0;
  if (cg >> v && v > 0 && v < m.bytes) m = {static_cast<int64_t>(v), "the cgroup's memory.max"};
  return m;
}

std::string human_bytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  char buf[48];
  if (b >= 1e12) std::snprintf(buf, sizeof buf, "%.3g TB", b / 1e12);
  else if (b >= 1e9) std::snprintf(buf, sizeof buf, "%.3g GB", b / 1e9);
  else if (b >= 1e6) std::snprintf(buf, sizeof buf, "%.3g MB", b / 1e6);
  else std::snprintf(buf, sizeof buf, "%.3g KB", b / 1e3);
  return buf;
}

int64_t address_space_in_use() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");  // "size resident ...", in pages
  long long pages = 0;
  const bool ok = f && std::fscanf(f, "%lld", &pages) == 1;
  if (f) std::fclose(f);
  return ok ? pages * ::sysconf(_SC_PAGESIZE) : 0;
}

int64_t address_space_left() {
  const int64_t limit = address_space_limit();
  if (limit == kNoLimit) return kNoLimit;
  return std::max<int64_t>(0, limit - address_space_in_use());
}

void require_address_space(const std::string& what, int64_t need_bytes, const std::string& advice) {
  const int64_t limit = address_space_limit();
  if (limit == kNoLimit) return;
  const int64_t in_use = address_space_in_use(), left = std::max<int64_t>(0, limit - in_use);
  if (need_bytes <= left) return;
  throw std::runtime_error(what + " needs about " + human_bytes(need_bytes) + " of address space, more than the " +
                           human_bytes(left) + " the address-space limit (ulimit -v " + std::to_string(limit / 1024) +
                           ") leaves with " + human_bytes(in_use) + " in use; " + advice);
}

}  // namespace ag
