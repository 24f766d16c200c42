// The peak MFU is measured against, kept per machine (tuning/kept.h) so that every run on it
// uses the same one. Measured once, the first time a machine needs it: a single-threaded GEMM
// 1024³ on the calling thread through the provider in use (how attograd runs its GEMMs: one
// single-threaded GEMM inside each chunk of its pool), at the precision (bf16: the autocast
// path), the best of several timings; the peak of `threads` threads is that times threads. On
// a machine whose threads share cores this overstates the peak, so the MFU errs low.
#pragma once
#include <cstdint>
#include <string>

#include "autograd/autocast.h"

namespace ag::tuning {

struct PeakFlops {
  double gflops = 0;             // of the run: per thread × threads (with several ranks, summed)
  double per_thread_gflops = 0;
  std::string source;            // "kept in PATH", "measured now, kept in PATH", or why it is not kept
};

// The kept per-thread peak of this machine times threads; measured (about half a second) and
// kept when the cache has none. Never fails: a cache that cannot be read or written is said
// so in `source`, and the peak measured now is used.
PeakFlops kept_peak_flops(int threads, Precision precision = Precision::FP32);

// How sgemm_gflops times: the calling thread's CPU time (a single-threaded GEMM on a busy
// machine, which waits for a core in wall time), or wall time (OpenBLAS's own threads).
enum class SgemmClock { ThreadCpu, Wall };

// A GEMM n × n × n through the provider in use (kernels::gemm) at `precision`, with OpenBLAS on
// `threads` of its own threads (its count restored afterwards), in GFLOP/s: one call untimed
// (page faults, the provider's buffers), then the best of `trials` timings of `reps` calls. The
// one GEMM peak timer: the MFU peak below and `attograd bench sgemm`.
double sgemm_gflops(int64_t n, int threads, int reps, int trials, SgemmClock clock, Precision precision = Precision::FP32);

// The peak itself: a single-threaded GEMM 1024³ at `precision`, the best of 5 timings of 2 calls
// in the thread's CPU time (so that a busy machine does not lower it).
double measure_sgemm_gflops_per_thread(Precision precision = Precision::FP32);

}  // namespace ag::tuning
