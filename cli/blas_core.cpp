#include "cli/blas_core.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

extern "C" char* openblas_get_corename(void);
extern "C" char* openblas_get_config(void);

namespace ag::cli {

const char* openblas_core_name() { return openblas_get_corename(); }
const char* openblas_config() { return openblas_get_config(); }

void ensure_fast_openblas_core(char** argv) {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("ATTOGRAD_KEEP_OPENBLAS_CORE")) return;
  const std::string core = openblas_get_corename();
  const bool generic = core == "Prescott" || core == "Core2" || core == "Penryn" || core == "Dunnington" ||
                       core == "Nehalem" || core == "Katmai" || core == "Coppermine" || core == "Northwood";
  if (!generic) return;
  __builtin_cpu_init();
  const char* better = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    better = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    better = "Haswell";
  if (!better) return;
  setenv("OPENBLAS_CORETYPE", better, 1);
  execv("/proc/self/exe", argv);  // only returns on failure: then carry on with the slow kernels
  unsetenv("OPENBLAS_CORETYPE");
}

}  // namespace ag::cli
