// --gemm: which provider runs a run's GEMMs (autograd/kernels/gemm_provider.h). `auto` is
// resolved before the run starts, by timing both providers on this model's own GEMM shapes at
// the run's precision (a fraction of a second), and kept per machine beside the MFU peak
// (train/peak_flops.h: the same cache file), so every run of that shape on that machine makes
// the same choice. OpenBLAS stays unless oneDNN is clearly faster (by 5%). The run records the
// provider chosen, never `auto`: a resumed run continues on it. Under bf16 the interface oneDNN
// is called through (--gemm-bf16, train/bf16_api_choice.h) is chosen first, the same way, and
// oneDNN is then timed through it. A command times the products it runs: a training step's, or
// (sample, eval) the forward products alone.
#pragma once
#include <functional>
#include <string>
#include <utility>
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
// The forward products x·Wᵀ alone, at `rows` positions: what sample (1 row, a decode step) and
// eval (a block) run.
std::vector<GemmShapeNT> forward_gemm_shapes(const models::ParamTable& table, int64_t rows);
// What a command runs, and so which shapes --gemm auto times for it.
enum class GemmWork : uint8_t { TrainingStep, Forward };

struct GemmTiming {
  double openblas_gflops = 0, onednn_gflops = 0;  // per thread, over the shapes
};
// Single-threaded, thread CPU time, under the given precision: each provider the best of its
// rounds, over several turns taken in alternation (kTurns in gemm_choice.cpp).
GemmTiming time_gemm_providers(const std::vector<GemmShapeNT>& shapes, Precision precision);
// Two ways of running the same GEMMs, the incumbent (OpenBLAS; oneDNN's gemm API) and a newer
// one (oneDNN; its matmul primitive): time_one(false) and time_one(true) in alternation,
// kGemmTimingTurns turns, each the best of its turns: {incumbent, newer} GFLOP/s.
std::pair<double, double> time_in_alternation(const std::function<double(bool newer)>& time_one);
// How `auto` decides between two such: their figures kept under `key` (as "NAME_gflops", beside
// the MFU peak, train/peak_flops.h), else measure() now and kept; the newer only where faster by
// kGemmChoiceMargin.
struct TimedChoice {
  bool newer = false;
  std::string how;  // "231 against openblas's 118 GFLOP/s per thread at this model's shapes (kept)"
};
TimedChoice choose_by_timing(const std::string& key, const std::string& incumbent, const std::string& newer,
                             const std::function<std::pair<double, double>()>& measure);
// GFLOP/s of `run` (`flop` floating-point operations) on this thread: the best of 3 runs after
// an untimed one (JIT kernels generated, buffers allocated, pages touched), in thread CPU time.
double thread_gflops(double flop, const std::function<void()>& run);
// 2·M·N·K over the shapes.
double gemm_flop(const std::vector<GemmShapeNT>& shapes);
// The shapes --gemm auto times for `work` at `rows` positions per GEMM chunk, at most 512 (the
// measurement stays short; larger blocks run at the same speed).
std::vector<GemmShapeNT> auto_gemm_shapes(const models::ParamTable& table, int64_t rows, GemmWork work);
// The turns each contender takes, in alternation, and the margin by which the newer one
// (oneDNN; the matmul primitive) must be faster to be chosen.
inline constexpr int kGemmTimingTurns = 5;
inline constexpr double kGemmChoiceMargin = 1.05;

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
                               const models::ParamTable& table, int64_t rows, GemmWork work);

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
