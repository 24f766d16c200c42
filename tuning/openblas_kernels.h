// The OpenBLAS kernel set a process runs on (its name: autograd/kernels/openblas_core.h). OpenBLAS picks its kernels from the CPU model when
// it loads; builds older than the CPU (Debian 12 ships 0.3.21) do not know recent Xeons (an
// Intel family 6, model 207 is one) and fall back to SSE3 "Prescott" kernels, about 6x slower
// for sgemm there. OPENBLAS_CORETYPE names the kernels, but OpenBLAS reads it only while it
// initialises, so use_fast_openblas_core() sets it and runs that initialisation again
// (gotoblas_dynamic_quit, then gotoblas_dynamic_init: OpenBLAS's own entry points, exported by
// its DYNAMIC_ARCH builds, Debian's among them; looked up at run time, so that another build
// links too). It does so only when:
//   * OPENBLAS_CORETYPE is not set already (the user's or the machine's choice always wins),
//   * ATTOGRAD_KEEP_OPENBLAS_CORE is not set,
//   * OpenBLAS reports a generic core, and
//   * the CPU has AVX-512 (-> SkylakeX kernels) or AVX2+FMA (-> Haswell kernels).
// The attograd program and the Python module call it once as they start, before any BLAS call:
// both then run the same kernels in the same process (an earlier version re-executed the
// program, which renamed the process "exe" and left Python on Prescott's kernels).
#pragma once
#include <string>

namespace ag::tuning {

// Returns the kernel set it switched to ("SkylakeX"), or "" when nothing changed. Call it while
// no other thread is inside OpenBLAS. The variable stays set, so child processes start on it.
std::string use_fast_openblas_core();

}  // namespace ag::tuning
