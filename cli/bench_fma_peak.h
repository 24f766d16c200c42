// The core's arithmetic limit, which no GEMM passes: how many floating-point operations one
// thread issues per second when it does nothing but independent multiply-adds on the widest
// vectors the CPU has. `bench train` sets its GEMM floor against it (the floor is what the
// provider's GEMMs reach at the step's shapes; this is what the core could), so that a step's
// distance from "the machine's matmul limit" reads in two parts: the provider's, then the step's.
// Measured on a 2-vCPU Zen 4 (bench/README.md): 118 GFLOP/s float32 per thread (32 flop a
// cycle: two 256-bit FMA pipes, a 512-bit FMA taking both) and 236 with AVX512_BF16's dot
// product (two multiply-adds a lane per instruction).
#pragma once

#include <string>

namespace ag::cli {

struct FmaPeak {
  double gflops;     // per thread; NaN where the CPU lacks the instruction (nothing measured)
  std::string what;  // "avx512 fma fp32", "avx2 fma fp32", "avx512_bf16 dot", or "" when not measured
};

// float32 multiply-adds (vfmadd213ps) on the widest vectors the CPU has: AVX-512, else AVX2.
FmaPeak fp32_fma_peak();
// AVX512_BF16's dot product (vdpbf16ps: bf16 pairs into float32), as oneDNN's avx512_core_bf16
// GEMM issues it. Not the limit of an AMX GEMM (tiles), which is not measured here.
FmaPeak bf16_dot_peak();

}  // namespace ag::cli
