// The core's arithmetic limit, which no GEMM passes: how many floating-point operations one
// thread issues per second when it does nothing but independent multiply-adds on the widest
// vectors the CPU has. `bench train` sets its GEMM floor against it (the floor is what the
// provider's GEMMs reach at the step's shapes; this is what the core could), so that a step's
// distance from "the machine's matmul limit" reads in two parts: the provider's, then the step's.
// Measured on a 2-vCPU Zen 4 (bench/README.md): 118 GFLOP/s float32 per thread (32 flop a
// cycle: two 256-bit FMA pipes, a 512-bit FMA taking both) and 236 with AVX512_BF16's dot
// product (two multiply-adds a lane per instruction). On an AMX CPU a native bf16 GEMM runs on
// tiles, and its limit is the tiles' (amx_bf16_peak).
#pragma once

#include <string>

namespace ag::tuning {

struct FmaPeak {
  double gflops;     // per thread; NaN where the CPU lacks the instruction (nothing measured)
  std::string what;  // "avx512 fma fp32", "avx2 fma fp32", "avx512_bf16 dot", "amx bf16 tiles", or "" when not measured
};

// float32 multiply-adds (vfmadd213ps) on the widest vectors the CPU has: AVX-512, else AVX2.
FmaPeak fp32_fma_peak();
// AVX512_BF16's dot product (vdpbf16ps: bf16 pairs into float32), as oneDNN's avx512_core_bf16
// GEMM issues it. Not the limit of an AMX GEMM (tiles): amx_bf16_peak below.
FmaPeak bf16_dot_peak();

// Whether this thread may use AMX's bf16 tiles: the CPU has AMX-TILE and AMX-BF16 (CPUID) and
// Linux grants the process the tile data state (arch_prctl ARCH_REQ_XCOMP_PERM, which this
// asks for, as oneDNN does); *why says which is missing otherwise.
bool amx_bf16_usable(std::string* why = nullptr);
// AMX's bf16 tile dot product (tdpbf16ps: a 16×16 float32 tile += 16×32 bf16 · 32×16 bf16,
// 16384 flop an instruction), as oneDNN's brg:avx512_core_amx_bf16 kernels issue it; NaN and ""
// where amx_bf16_usable is false. The probe checks the tiles' sums, so a tile instruction that
// did not do its work reads as NaN, not as a peak.
FmaPeak amx_bf16_peak();

}  // namespace ag::tuning
