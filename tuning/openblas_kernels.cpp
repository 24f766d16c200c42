#include "tuning/openblas_kernels.h"

#include <dlfcn.h>

#include <cstdlib>

#include "autograd/kernels/openblas_core.h"

namespace ag::tuning {

std::string use_fast_openblas_core() {
  if (std::getenv("OPENBLAS_CORETYPE") || std::getenv("ATTOGRAD_KEEP_OPENBLAS_CORE")) return "";
  const std::string core = kernels::openblas_core_name();
  const bool generic = core == "Prescott" || core == "Core2" || core == "Penryn" || core == "Dunnington" ||
                       core == "Nehalem" || core == "Katmai" || core == "Coppermine" || core == "Northwood";
  if (!generic) return "";
  __builtin_cpu_init();
  const char* better = nullptr;
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq"))
    better = "SkylakeX";
  else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    better = "Haswell";
  if (!better) return "";
  using Entry = void (*)();
  const auto quit = reinterpret_cast<Entry>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  const auto init = reinterpret_cast<Entry>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  if (!quit || !init) return "";  // not a DYNAMIC_ARCH build: its one kernel set is all it has
  setenv("OPENBLAS_CORETYPE", better, 1);
  quit();  // forgets the kernel table chosen at load, so that init chooses again, from the variable
  init();
  return kernels::openblas_core_name();
}

}  // namespace ag::tuning
