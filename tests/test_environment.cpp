// The environment of every test in attograd_tests, set before main:
// - the sgemm peak that MFU is measured against (tuning/peak_flops.h) is kept in the build
//   folder, never in the user's cache, where a peak measured while the tests load the machine
//   would stay (the command-line tests get the same folder from CMake: ATTOGRAD_TEST_CACHE);
// - OpenBLAS runs the kernels the attograd program and the Python module choose
//   (tuning/openblas_kernels.h), not the generic ones an OpenBLAS older than the CPU
//   falls back to.
#include <cstdlib>

#include "tuning/openblas_kernels.h"

namespace {
[[maybe_unused]] const bool kTestCache = [] { return setenv("XDG_CACHE_HOME", ATTOGRAD_BINARY_DIR "/test-cache", 1) == 0; }();
[[maybe_unused]] const bool kOpenBlasCore = [] { return !ag::tuning::use_fast_openblas_core().empty(); }();
}  // namespace
