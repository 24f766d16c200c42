// The peak MFU is measured against, kept per machine so that every run on it uses the same
// one: runs (and a run and its resume) then show comparable MFU. Measured once, the first time
// a machine needs it, and kept in a small JSON file in the user's cache folder:
//   $XDG_CACHE_HOME/attograd/peak_flops.json, else ~/.cache/attograd/peak_flops.json
// keyed by the machine (CPU model and core count) and the GEMM provider with its kernel set
// (OpenBLAS "Zen"): a new CPU, another OpenBLAS kernel (OPENBLAS_CORETYPE) or another provider
// gets its own entry. Delete the file to measure again.
//
// What is measured: single-threaded sgemm 1024³ on the calling thread (how attograd runs its
// GEMMs: one OpenBLAS thread inside each chunk of its pool), the best of several timings; the
// peak of `threads` threads is that times threads. On a machine whose threads share cores this
// overstates the peak, so the MFU errs low.
#pragma once
#include <cstdint>
#include <string>

namespace ag::train {

struct MachineKey {
  std::string cpu;       // "AMD EPYC 7B13" (/proc/cpuinfo's model name)
  int cores = 0;         // logical CPUs
  std::string provider;  // the GEMM library: "openblas"
  std::string kernel;    // its kernel set: "Zen"
  std::string text() const;  // "AMD EPYC 7B13 | 2 cores | openblas Zen": the cache's key
};
MachineKey this_machine();

struct PeakFlops {
  double gflops = 0;             // of the run: per thread × threads (with several ranks, summed)
  double per_thread_gflops = 0;
  std::string source;            // "kept in PATH", "measured now, kept in PATH", or why it is not kept
};

// The cache file's path, or "" when neither XDG_CACHE_HOME nor HOME is set.
std::string peak_cache_path();

// The kept per-thread peak of this machine times threads; measured (about half a second) and
// kept when the cache has none. Never fails: a cache that cannot be read or written is said
// so in `source`, and the peak measured now is used.
PeakFlops kept_peak_flops(int threads);

// How sgemm_gflops times: the calling thread's CPU time (a single-threaded sgemm on a busy
// machine, which waits for a core in wall time), or wall time (OpenBLAS's own threads).
enum class SgemmClock { ThreadCpu, Wall };

// OpenBLAS sgemm n × n × n on `threads` of its own threads (its count restored afterwards), in
// GFLOP/s: one call untimed (page faults, OpenBLAS's buffers), then the best of `trials`
// timings of `reps` calls. The one sgemm timer: the MFU peak below and `attograd bench sgemm`.
double sgemm_gflops(int64_t n, int threads, int reps, int trials, SgemmClock clock);

// The peak itself: single-threaded sgemm 1024³, the best of 5 timings of 2 calls in the thread's
// CPU time (so that a busy machine does not lower it).
double measure_sgemm_gflops_per_thread();

}  // namespace ag::train
