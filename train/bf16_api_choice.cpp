#include "train/bf16_api_choice.h"

#include "autograd/kernels/gemm_provider.h"
#include "train/config/config_error.h"

namespace ag::train {

namespace {

// Whether the interface can matter to GEMMs at `precision` going to `gemm`: bf16 on oneDNN's
// native path (an AVX-512 CPU), now or once --gemm auto has chosen.
bool interface_matters(GemmChoice gemm, Precision precision) {
  return precision == Precision::BF16 && gemm != GemmChoice::OpenBLAS &&
         kernels::bf16_api_available(kernels::Bf16Api::Gemm);
}

}  // namespace

Bf16ApiDecision decide_bf16_api(GemmBf16Choice asked, GemmChoice gemm, Precision precision,
                                const std::vector<tuning::GemmShapeNT>& shapes) {
  Bf16ApiDecision d;
  if (!interface_matters(gemm, precision)) {
    // Recorded as asked (auto: the gemm API, what such runs always ran); it runs nothing.
    if (asked != GemmBf16Choice::Auto) d.api = bf16_api_of(asked);
    return d;
  }
  d.runs = true;
  if (asked != GemmBf16Choice::Auto) {
    d.api = bf16_api_of(asked);
    d.how = "--gemm-bf16 " + std::string(choice_name(asked));
    return d;
  }
  std::string why;
  if (!kernels::bf16_api_available(kernels::Bf16Api::Matmul, &why)) {
    d.how = "chosen by --gemm-bf16 auto: oneDNN's matmul primitive cannot run here (" + why + ")";
    return d;
  }
  const tuning::TimedChoice c = tuning::choose_bf16_api(shapes);
  d.api = c.newer ? kernels::Bf16Api::Matmul : kernels::Bf16Api::Gemm;
  d.how = "chosen by --gemm-bf16 auto: " + c.how;
  return d;
}

void use_bf16_api(const Bf16ApiDecision& d) {
  std::string why;
  if (d.runs && !kernels::bf16_api_available(d.api, &why))
    throw ConfigError(std::string("--gemm-bf16 ") + kernels::bf16_api_name(d.api) + " cannot run here: " + why);
  kernels::set_bf16_api(d.runs ? d.api : kernels::Bf16Api::Gemm);
}

}  // namespace ag::train
