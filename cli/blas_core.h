// OpenBLAS picks its kernels from the CPU model at load time. Builds older than the CPU
// (Debian 12 ships 0.3.21) do not know recent Xeons and fall back to SSE3 "Prescott" kernels,
// about 6x slower for sgemm here. OPENBLAS_CORETYPE overrides the choice, but only before the
// library loads, so the attograd program re-executes itself with it set when:
//   * OPENBLAS_CORETYPE is not set already (the user's choice always wins),
//   * OpenBLAS reports a generic core, and
//   * the CPU has AVX-512 (-> SkylakeX kernels) or AVX2+FMA (-> Haswell kernels).
// ATTOGRAD_KEEP_OPENBLAS_CORE=1 turns this off.
#pragma once

namespace ag::cli {

// Returns only if nothing needs changing (or re-executing failed); otherwise execs.
void ensure_fast_openblas_core(char** argv);

// The kernel set OpenBLAS is using, e.g. "SkylakeX".
const char* openblas_core_name();

// How the OpenBLAS in use was built, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64".
const char* openblas_config();

}  // namespace ag::cli
