// What --gemm auto and --gemm-bf16 auto time, and the choices they make from the timings: each
// contender single-threaded in thread CPU time (a busy machine does not lengthen it) at the
// shapes a command runs, in alternating turns, the figures kept per machine (tuning/kept.h), the
// newer contender (oneDNN; its matmul primitive) chosen only where faster by kGemmChoiceMargin.
// The run-level choices (the flags, every rank following rank 0, the run's record) are train's
// (train/gemm_choice.h).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/autocast.h"
#include "autograd/kernels/gemm_provider.h"
#include "models/param_table.h"

namespace ag::tuning {

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
// The shapes --gemm auto times for `work` at `rows` positions per GEMM chunk, at most 512 (the
// measurement stays short; larger blocks run at the same speed).
std::vector<GemmShapeNT> auto_gemm_shapes(const models::ParamTable& table, int64_t rows, GemmWork work);

// 2·M·N·K over the shapes.
double gemm_flop(const std::vector<GemmShapeNT>& shapes);
// GFLOP/s of `run` (`flop` floating-point operations) on this thread: the best of 3 runs after
// an untimed one (JIT kernels generated, buffers allocated, pages touched), in thread CPU time.
double thread_gflops(double flop, const std::function<void()>& run);

struct GemmTiming {
  double openblas_gflops = 0, onednn_gflops = 0;  // per thread, over the shapes
};
// Each provider at `shapes` under the given precision, in alternation (time_in_alternation).
GemmTiming time_gemm_providers(const std::vector<GemmShapeNT>& shapes, Precision precision);

struct Bf16ApiTiming {
  double gemm_gflops = 0, matmul_gflops = 0;  // per thread, over the shapes; 0 where it cannot run
};
// oneDNN's native bf16 GEMM through each interface at `shapes`, on operands already rounded
// (the rounding is the same for both), in alternation. Both 0 where oneDNN has no native bf16
// path here.
Bf16ApiTiming time_bf16_apis(const std::vector<GemmShapeNT>& shapes);

// The turns each contender takes, in alternation, and the margin by which the newer one
// (oneDNN; the matmul primitive) must be faster to be chosen.
inline constexpr int kGemmTimingTurns = 5;
inline constexpr double kGemmChoiceMargin = 1.05;

// Two ways of running the same GEMMs, the incumbent (OpenBLAS; oneDNN's gemm API) and a newer
// one (oneDNN; its matmul primitive): time_one(false) and time_one(true) in alternation,
// kGemmTimingTurns turns, each the best of its turns: {incumbent, newer} GFLOP/s.
std::pair<double, double> time_in_alternation(const std::function<double(bool newer)>& time_one);
// How `auto` decides between two such: their figures kept under `key` (as "NAME_gflops"), else
// measure() now and kept; the newer only where faster by kGemmChoiceMargin.
struct TimedChoice {
  bool newer = false;
  std::string how;  // "231 against openblas's 118 GFLOP/s per thread at this model's shapes (kept)"
};
TimedChoice choose_by_timing(const std::string& key, const std::string& incumbent, const std::string& newer,
                             const std::function<std::pair<double, double>()>& measure);

// --gemm auto's provider for a model of this table at `rows` positions per GEMM chunk running
// `work` at `precision` (under bf16, oneDNN timed through the bf16 interface set), and how it
// was chosen: "chosen by --gemm auto: 231 against openblas's 118 GFLOP/s ... (kept)". The
// provider in use is left as it was.
struct ProviderChoice {
  kernels::GemmProvider provider = kernels::GemmProvider::OpenBLAS;
  std::string how;
};
ProviderChoice choose_gemm_provider(Precision precision, const models::ParamTable& table, int64_t rows,
                                    GemmWork work);
// --gemm-bf16 auto's interface at `shapes`, where oneDNN's native bf16 path runs and its matmul
// primitive can: newer is the matmul primitive, else the gemm API.
TimedChoice choose_bf16_api(const std::vector<GemmShapeNT>& shapes);

}  // namespace ag::tuning
