// What attograd measures of the machine it runs on is measured once and kept, so that every run
// on the machine uses the same figures (runs and a run and its resume show comparable MFU, and
// --gemm auto makes the same choice each time): a small JSON file in the user's cache folder,
//   $XDG_CACHE_HOME/attograd/peak_flops.json, else ~/.cache/attograd/peak_flops.json,
// one entry per key, each key naming what the figures depend on: the machine (CPU model and
// core count), the GEMM provider with its kernel set (OpenBLAS "Zen", oneDNN "2.6.3
// avx512_core_bf16") and the precision (bf16 only when not fp32); a new CPU, another OpenBLAS
// kernel (OPENBLAS_CORETYPE), provider or precision gets its own entry. Delete the file to
// measure again.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "autograd/autocast.h"

namespace ag::tuning {

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

// The cache file's path, or "" when neither XDG_CACHE_HOME nor HOME is set.
std::string kept_path();

// The kept values of `fields` under `key` (all of them, positive) or false; and keeping them,
// which returns where ("kept in PATH") or why not (a file that cannot be written is not an
// error: the figures measured now are used).
bool read_kept(const std::string& key, const std::vector<std::string>& fields, std::vector<double>& values);
std::string keep(const std::string& key, const std::vector<std::pair<std::string, double>>& values);

// The thread's CPU time in seconds: timings that a busy machine does not lengthen.
double thread_cpu_seconds();

}  // namespace ag::tuning
