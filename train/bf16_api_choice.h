// --gemm-bf16: which of oneDNN's interfaces runs a bf16 run's native GEMMs
// (autograd/kernels/gemm_provider.h: Bf16Api): the matmul primitive (AMX tiles where the CPU
// has them) or the gemm API. `auto` is resolved as --gemm auto resolves the provider
// (train/gemm_choice.h), before it: both timed single-threaded in thread CPU time at the shapes
// the command runs, in alternating turns, kept per machine (tuning/gemm_timing.h); the matmul
// primitive only where it is faster by kGemmChoiceMargin (the gemm API stays where it is as
// fast). Where the interface cannot matter (fp32, --gemm openblas, no native bf16 path) auto
// is the gemm API and nothing is timed. The run records the interface, never auto.
#pragma once
#include <string>
#include <vector>

#include "train/gemm_choice.h"

namespace ag::train {

struct Bf16ApiDecision {
  kernels::Bf16Api api = kernels::Bf16Api::Gemm;  // what the run records
  bool runs = false;  // whether it runs the GEMMs (else fp32, --gemm openblas, or no native bf16 path)
  std::string how;    // "chosen by --gemm-bf16 auto: ...", "--gemm-bf16 matmul"; "" unless it runs
};

// Resolves `asked` for GEMMs at `precision` going to `gemm` (auto: perhaps oneDNN), timing
// `shapes` (auto_gemm_shapes) when auto must. Throws ConfigError naming --gemm-bf16 when a bf16
// run asks for an interface that cannot run here.
Bf16ApiDecision decide_bf16_api(GemmBf16Choice asked, GemmChoice gemm, Precision precision,
                                const std::vector<tuning::GemmShapeNT>& shapes);

// Sets the process's interface (kernels::set_bf16_api): the decision's where it runs, else the
// gemm API; ConfigError naming --gemm-bf16 when it cannot run here.
void use_bf16_api(const Bf16ApiDecision& d);

}  // namespace ag::train
