#include "train/bf16_api_choice.h"

#include <algorithm>

#include "autograd/kernels/bf16.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/gemm_provider.h"
#include "train/config/config_error.h"
#include "train/peak_flops.h"

namespace ag::train {

Bf16ApiTiming time_bf16_apis(const std::vector<GemmShapeNT>& shapes) {
  Bf16ApiTiming t;
  if (!kernels::bf16_api_available(kernels::Bf16Api::Gemm)) return t;
  int64_t a_max = 1, b_max = 1, c_max = 1;
  for (const auto& s : shapes)
    a_max = std::max(a_max, s.M * s.K), b_max = std::max(b_max, s.K * s.N), c_max = std::max(c_max, s.M * s.N);
  const std::vector<uint16_t> A(static_cast<size_t>(a_max), kernels::bf16_bits(0.01f)),
      B(static_cast<size_t>(b_max), kernels::bf16_bits(0.02f));
  std::vector<float> C(static_cast<size_t>(c_max));
  const kernels::GemmProviderGuard onednn(kernels::GemmProvider::OneDNN);
  const auto [gemm, matmul] = time_in_alternation([&](bool newer) {
    const kernels::Bf16Api api = newer ? kernels::Bf16Api::Matmul : kernels::Bf16Api::Gemm;
    if (!kernels::bf16_api_available(api)) return 0.0;
    const kernels::Bf16ApiGuard use(api);
    return thread_gflops(gemm_flop(shapes), [&] {
      for (const auto& s : shapes)
        kernels::gemm_rounded_blocks(s.ta, s.tb, s.M, s.N, s.K, 1.0f, A.data(), s.ta ? s.M : s.K, B.data(),
                                     s.tb ? s.K : s.N, true, 0.0f, C.data(), s.N);
    });
  });
  return {gemm, matmul};
}

namespace {

// Whether the interface can matter to GEMMs at `precision` going to `gemm`: bf16 on oneDNN's
// native path (an AVX-512 CPU), now or once --gemm auto has chosen.
bool interface_matters(GemmChoice gemm, Precision precision) {
  return precision == Precision::BF16 && gemm != GemmChoice::OpenBLAS &&
         kernels::bf16_api_available(kernels::Bf16Api::Gemm);
}

}  // namespace

Bf16ApiDecision decide_bf16_api(GemmBf16Choice asked, GemmChoice gemm, Precision precision,
                                const std::vector<GemmShapeNT>& shapes) {
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
  // Kept beside --gemm auto's choices, under a key of its own: the machine with its providers
  // (never the one in use, as --gemm auto's key), at bf16, and the shapes.
  std::string sig = "gemm-bf16 auto | " + this_machine_every_provider(precision) + " | " +
                    std::to_string(kGemmTimingTurns) + " turns |";
  for (const auto& s : shapes)
    sig += std::string(" ") + (s.ta ? "T" : "N") + (s.tb ? "T" : "N") + std::to_string(s.M) + "x" +
           std::to_string(s.N) + "x" + std::to_string(s.K);
  const TimedChoice c = choose_by_timing(sig, "gemm", "matmul", [&] {
    const Bf16ApiTiming t = time_bf16_apis(shapes);
    return std::pair{t.gemm_gflops, t.matmul_gflops};
  });
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
