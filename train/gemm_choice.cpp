#include "train/gemm_choice.h"

#include <algorithm>

#include "autograd/kernels/gemm_provider.h"
#include "autograd/parallel.h"
#include "train/bf16_api_choice.h"
#include "train/config/config_error.h"

namespace ag::train {

namespace {

void use(const GemmDecision& d) {
  std::string why;
  if (!kernels::gemm_provider_available(d.provider, &why))
    throw ConfigError(std::string("--gemm ") + kernels::gemm_provider_name(d.provider) + " cannot run here: " + why);
  kernels::set_gemm_provider(d.provider);
}

void note_bf16(GemmDecision& d, const Bf16ApiDecision& b) {
  use_bf16_api(b);  // before the provider is timed: oneDNN is timed through it
  d.bf16_api = b.api;
  d.bf16_how = b.how;
}
}  // namespace

GemmDecision apply_gemm_choice(GemmChoice asked, GemmBf16Choice asked_bf16, Precision precision,
                               const models::ParamTable& table, int64_t rows, tuning::GemmWork work) {
  GemmDecision d;
  note_bf16(d, decide_bf16_api(asked_bf16, asked, precision, tuning::auto_gemm_shapes(table, rows, work)));
  if (asked == GemmChoice::Auto) {
    const tuning::ProviderChoice p = tuning::choose_gemm_provider(precision, table, rows, work);
    d.provider = p.provider, d.how = p.how;
  } else {
    d.provider = gemm_provider_of(asked);
    d.how = "--gemm " + std::string(choice_name(asked));
  }
  use(d);
  return d;
}

GemmDecision apply_gemm_choice(const TrainConfig& cfg, const models::ParamTable& table, distributed::Comm& comm) {
  GemmDecision d;
  // A GEMM chunk's rows: a micro-batch's positions shared by the pool's threads.
  const int64_t positions = cfg.batch_size / std::max<int64_t>(comm.size() * cfg.grad_accum, 1) * cfg.model.block_size;
  const int64_t rows = positions / std::max(parallel::num_threads(), 1);
  // The bf16 interface first (auto: rank 0 decides, every rank follows).
  const auto shapes = tuning::auto_gemm_shapes(table, rows, tuning::GemmWork::TrainingStep);
  Bf16ApiDecision bf16;
  if (cfg.gemm_bf16 != GemmBf16Choice::Auto || comm.is_root()) bf16 = decide_bf16_api(cfg.gemm_bf16, cfg.gemm, cfg.precision, shapes);
  if (cfg.gemm_bf16 == GemmBf16Choice::Auto) {
    uint8_t api = static_cast<uint8_t>(bf16.api);
    comm.broadcast(&api, 1);
    if (!comm.is_root()) {
      bf16 = decide_bf16_api(gemm_bf16_choice_of(static_cast<kernels::Bf16Api>(api)), cfg.gemm, cfg.precision, shapes);
      if (bf16.runs) bf16.how = "chosen by --gemm-bf16 auto on rank 0";
    }
  }
  note_bf16(d, bf16);
  if (cfg.gemm == GemmChoice::Auto) {
    uint8_t chosen = 0;
    if (comm.is_root()) {
      const tuning::ProviderChoice p =
          tuning::choose_gemm_provider(cfg.precision, table, rows, tuning::GemmWork::TrainingStep);
      d.provider = p.provider, d.how = p.how;
      chosen = static_cast<uint8_t>(d.provider);
    }
    comm.broadcast(&chosen, 1);  // every rank runs rank 0's choice: the run records one
    d.provider = static_cast<kernels::GemmProvider>(chosen);
    if (!comm.is_root()) d.how = "chosen by --gemm auto on rank 0";
  } else {
    d.provider = gemm_provider_of(cfg.gemm);
    d.how = "--gemm " + std::string(choice_name(cfg.gemm));
  }
  use(d);
  return d;
}

RunGemm::RunGemm(const TrainConfig& cfg, const models::ParamTable& table, distributed::Comm& comm)
    : prev_(kernels::gemm_provider()), prev_bf16_api_(kernels::bf16_api()), decision_(apply_gemm_choice(cfg, table, comm)) {}

RunGemm::~RunGemm() {
  try {
    kernels::set_gemm_provider(prev_);
    kernels::set_bf16_api(prev_bf16_api_);
  } catch (const std::exception&) {
    // prev_ ran before this run, so it runs now: never reached
  }
}

std::string gemm_header(const GemmDecision& d) {
  std::string line = "gemm: " + kernels::gemm_provider_description(d.provider) + ", " + d.how;
  if (!d.bf16_how.empty() && d.provider == kernels::GemmProvider::OneDNN)
    line += std::string("; bf16 GEMMs through oneDNN's ") + kernels::bf16_api_name(d.bf16_api) + ", " + d.bf16_how;
  return line;
}

std::string precision_header(Precision p, kernels::GemmProvider provider) {
  if (p == Precision::FP32) return "precision: fp32";
  return "precision: bf16 autocast (" + kernels::bf16_path_description(provider) +
         "; weights, optimizer, norms, softmax and loss in float32)";
}

}  // namespace ag::train
