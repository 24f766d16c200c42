// The OpenBLAS kernel set a process runs on and how the library was built; which kernels a
// process should run on a CPU newer than its OpenBLAS is tuning's (tuning/openblas_kernels.h).
#pragma once

namespace ag::kernels {

// The kernel set OpenBLAS is using, e.g. "SkylakeX".
const char* openblas_core_name();

// How the OpenBLAS in use was built, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64".
const char* openblas_config();

}  // namespace ag::kernels
