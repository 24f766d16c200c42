// --gemm: which provider runs a run's GEMMs (autograd/kernels/gemm_provider.h). `auto` is
// resolved before the run starts, by timing both providers on this model's own GEMM shapes at
// the run's precision (a fraction of a second), and kept per machine beside the MFU peak
// (train/peak_flops.h: the same cache file), so every run of that shape on that machine makes
// the same choice. OpenBLAS stays unless oneDNN is clearly faster (by 5%). The run records the
// provider chosen, never `auto`: a resumed run continues on it.
#pragma once
#include <string>
#include <vector>

#include "models/param_table.h"
#include "distributed/comm.h"
#include "train/config/run_config.h"

namespace ag::train {

struct GemmShapeNT {  // one GEMM of the measurement: C (M, N) = op(A) · op(B), inner K
  bool ta = false, tb = false;
  int64_t M = 0, N = 0, K = 0;
};

// The GEMMs of one step of a model at `rows` positions per thread: for every matrix a matmul
// reads, its forward x·Wᵀ and its backward's g·W and gᵀ·x.
std::vector<GemmShapeNT> step_gemm_shapes(const models::ParamTable& table, int64_t rows);

struct GemmTiming {
  double openblas_gflops = 0, onednn_gflops = 0;  // per thread, over the shapes
};
// Single-threaded, thread CPU time, under the given precision: each provider the best of its
// rounds, over several turns taken in alternation (kTurns in gemm_choice.cpp).
GemmTiming time_gemm_providers(const std::vector<GemmShapeNT>& shapes, Precision precision);

struct GemmDecision {
  kernels::GemmProvider provider = kernels::GemmProvider::OpenBLAS;
  std::string how;  // "chosen by --gemm auto: 231 against openblas's 118 GFLOP/s ... (kept in PATH)"
};

// One process (sample, eval, bench): resolves `asked` for a model of this table at `rows`
// positions per GEMM chunk, sets the process's provider and returns it with how it was chosen.
// Throws ConfigError naming --gemm when the provider cannot run here.
GemmDecision apply_gemm_choice(GemmChoice asked, Precision precision, const models::ParamTable& table, int64_t rows);

// A run: resolves cfg.gemm (auto: rank 0 decides, every rank follows), sets the process's provider
// and returns it with how it was chosen. Throws ConfigError naming --gemm when the provider
// cannot run here. A resumed run passes its recorded choice (never auto).
GemmDecision apply_gemm_choice(const TrainConfig& cfg, const models::ParamTable& table, distributed::Comm& comm);

// A run's provider while the run lives (apply_gemm_choice), then the process's previous one
// again: a program or a test that runs several runs gets its own back.
class RunGemm {
 public:
  RunGemm(const TrainConfig& cfg, const models::ParamTable& table, distributed::Comm& comm);
  ~RunGemm();
  RunGemm(const RunGemm&) = delete;
  RunGemm& operator=(const RunGemm&) = delete;
  const GemmDecision& decision() const { return decision_; }

 private:
  kernels::GemmProvider prev_;
  GemmDecision decision_;
};

// The run header's lines: "gemm: onednn 2.6.3 (JIT for avx512_core_bf16), chosen by ..." and
// "precision: bf16 (bf16 GEMMs native: ...)".
std::string gemm_header(const GemmDecision& d);
std::string precision_header(Precision p, kernels::GemmProvider provider);

}  // namespace ag::train
