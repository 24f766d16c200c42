// The peak MFU is measured against, kept per machine so that every run on it uses the same
// one: runs (and a run and its resume) then show comparable MFU. Measured once, the first time
// a machine needs it, and kept in a small JSON file in the user's cache folder:
//   $XDG_CACHE_HOME/attograd/peak_flops.json, else ~/.cache/attograd/peak_flops.json
// keyed by the machine (CPU model and core count), the GEMM provider in use with its kernel set
// (OpenBLAS "Zen", oneDNN "2.6.3 avx512_core_bf16") and the precision (bf16 only when not
// fp32): a new CPU, another OpenBLAS kernel (OPENBLAS_CORETYPE), provider or precision gets
// its own entry. Delete the file to measure again. --gemm auto keeps its timings there too
// (train/gemm_choice.h).
//
// What is measured: a single-threaded GEMM 1024³ on the calling thread through the provider
// in use (how attograd runs its GEMMs: one single-threaded GEMM inside each chunk of its pool),
// at the precision (bf16: the autocast path), the best of several timings; the peak of
// `threads` threads is that times threads. On a machine whose threads share cores this
// overstates the peak, so the MFU errs low.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "autograd/autocast.h"

namespace ag::train {

struct MachineKey {
  std::string cpu;       // "AMD EPYC 7B13" (/proc/cpuinfo's model name)
  int cores = 0;         // logical CPUs
  std::string provider;  // the GEMM library: "openblas"
  std::string kernel;    // its kernel set: "Zen"
  Precision precision = Precision::FP32;
  // "AMD EPYC 7B13 | 2 cores | openblas Zen" (and " | bf16" at bf16): the cache's key
  std::string text() const;
};
// With the provider in use (kernels::gemm_provider()).
MachineKey this_machine(Precision precision = Precision::FP32);
// The machine with every provider that runs here and its kernel set, whichever is in use:
// "AMD EPYC 7B13 | 2 cores | openblas Zen, onednn 2.6.3 avx512_core_bf16" (and " | bf16").
// The key of a choice between providers, which the provider set before must not change (the
// command starts on OpenBLAS; a Python session may have set oneDNN before it trains).
std::string this_machine_every_provider(Precision precision = Precision::FP32);

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

// Other numbers kept in the same file, under a key of their own: the kept values of `fields`
// (all of them, positive) or false; and keeping them, which returns where ("kept in PATH") or
// why not.
bool read_kept(const std::string& key, const std::vector<std::string>& fields, std::vector<double>& values);
std::string keep(const std::string& key, const std::vector<std::pair<std::string, double>>& values);

// The thread's CPU time in seconds: timings that a busy machine does not lengthen.
double thread_cpu_seconds();

}  // namespace ag::train
