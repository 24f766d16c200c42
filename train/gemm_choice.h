// --gemm: which provider runs a run's GEMMs (autograd/kernels/gemm_provider.h). `auto` is
// resolved before the run starts, by timing both providers on this model's own GEMM shapes at
// the run's precision (a fraction of a second, tuning/gemm_timing.h), and kept per machine
// beside the MFU peak (tuning/kept.h), so every run of that shape on that machine makes
// the same choice. OpenBLAS stays unless oneDNN is clearly faster (by 5%). The run records the
// provider chosen, never `auto`: a resumed run continues on it. Under bf16 the interface oneDNN
// is called through (--gemm-bf16, train/bf16_api_choice.h) is chosen first, the same way, and
// oneDNN is then timed through it. A command times the products it runs: a training step's, or
// (sample, eval) the forward products alone.
#pragma once
#include <string>

#include "models/param_table.h"
#include "distributed/comm.h"
#include "train/config/run_config.h"
#include "tuning/tuning.h"

namespace ag::train {

struct GemmDecision {
  kernels::GemmProvider provider = kernels::GemmProvider::OpenBLAS;
  std::string how;  // "chosen by --gemm auto: 231 against openblas's 118 GFLOP/s ... (kept in PATH)"
  kernels::Bf16Api bf16_api = kernels::Bf16Api::Gemm;  // --gemm-bf16 (train/bf16_api_choice.h)
  std::string bf16_how;                                // "" where the interface does not matter
};

// One process (sample, eval, bench): resolves `asked` and `asked_bf16` for a model of this table
// at `rows` positions per GEMM chunk running `work`, sets the process's provider and bf16
// interface and returns them with how they were chosen. Throws ConfigError naming --gemm or
// --gemm-bf16 when the choice cannot run here.
GemmDecision apply_gemm_choice(GemmChoice asked, GemmBf16Choice asked_bf16, Precision precision,
                               const models::ParamTable& table, int64_t rows, tuning::GemmWork work);

// A run: resolves cfg.gemm (auto: rank 0 decides, every rank follows), sets the process's provider
// and returns it with how it was chosen. Throws ConfigError naming --gemm when the provider
// cannot run here. A resumed run passes its recorded choice (never auto).
GemmDecision apply_gemm_choice(const TrainConfig& cfg, const models::ParamTable& table, distributed::Comm& comm);

// A run's provider and bf16 interface while the run lives (apply_gemm_choice), then the
// process's previous ones again: a program or a test that runs several runs gets its own back.
class RunGemm {
 public:
  RunGemm(const TrainConfig& cfg, const models::ParamTable& table, distributed::Comm& comm);
  ~RunGemm();
  RunGemm(const RunGemm&) = delete;
  RunGemm& operator=(const RunGemm&) = delete;
  const GemmDecision& decision() const { return decision_; }

 private:
  kernels::GemmProvider prev_;
  kernels::Bf16Api prev_bf16_api_;
  GemmDecision decision_;
};

// The run header's lines: "gemm: onednn 2.6.3 (JIT for avx512_core_bf16), chosen by ...[; bf16
// GEMMs through matmul, chosen by ...]" and "precision: bf16 (bf16 GEMMs native: ...)".
std::string gemm_header(const GemmDecision& d);
std::string precision_header(Precision p, kernels::GemmProvider provider);

}  // namespace ag::train
