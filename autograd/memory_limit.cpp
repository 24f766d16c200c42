#include "autograd/memory_limit.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>

namespace ag {

MemoryLimit memory_limit() {
  MemoryLimit m{std::numeric_limits<int64_t>::max(), "nothing"};
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0 && pages <= std::numeric_limits<int64_t>::max() / page)
    m = {static_cast<int64_t>(pages) * page, "physical memory"};
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur < static_cast<rlim_t>(m.bytes))
    m = {static_cast<int64_t>(rl.rlim_cur), "the address-space limit (ulimit -v)"};
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

}  // namespace ag
