#include "train/gemm_choice.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <tuple>

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/gemm_provider.h"
#include "autograd/parallel.h"
#include "train/config/config_error.h"
#include "train/peak_flops.h"

namespace ag::train {

std::vector<GemmShapeNT> step_gemm_shapes(const models::ParamTable& table, int64_t rows) {
  std::set<std::pair<int64_t, int64_t>> weights;  // (out, in) of every matrix a matmul reads, once
  auto add = [&](const models::ParamRow& r) {
    if (r.spec.matmul_uses > 0 && r.spec.shape.size() == 2) weights.insert({r.spec.shape[0], r.spec.shape[1]});
  };
  for (const auto& r : table.first) add(r);
  for (const auto& r : table.per_layer) add(r);
  for (const auto& r : table.last) add(r);
  std::vector<GemmShapeNT> out;
  for (const auto& [o, i] : weights) {
    out.push_back({false, true, rows, o, i});   // y = x·Wᵀ       (rows, out)
    out.push_back({false, false, rows, i, o});  // dx = g·W       (rows, in)
    out.push_back({true, false, o, i, rows});   // dW = gᵀ·x      (out, in)
  }
  return out;
}

namespace {
constexpr int kTurns = 5;  // each provider's turns in time_gemm_providers
}  // namespace

GemmTiming time_gemm_providers(const std::vector<GemmShapeNT>& shapes, Precision precision) {
  int64_t a_max = 1, b_max = 1, c_max = 1;
  double flop = 0;
  for (const auto& s : shapes) {
    a_max = std::max(a_max, s.M * s.K), b_max = std::max(b_max, s.K * s.N), c_max = std::max(c_max, s.M * s.N);
    flop += 2.0 * static_cast<double>(s.M * s.N * s.K);
  }
  const std::vector<float> A(static_cast<size_t>(a_max), 0.01f), B(static_cast<size_t>(b_max), 0.02f);
  std::vector<float> C(static_cast<size_t>(c_max));
  const AutocastGuard at(precision);
  auto time_one = [&](kernels::GemmProvider p) {
    if (!kernels::gemm_provider_available(p)) return 0.0;
    const kernels::GemmProviderGuard use(p);
    auto all = [&] {
      for (const auto& s : shapes)
        kernels::gemm(s.ta, s.tb, s.M, s.N, s.K, 1.0f, A.data(), s.ta ? s.M : s.K, B.data(), s.tb ? s.K : s.N, 0.0f,
                      C.data(), s.N);
    };
    all();  // untimed: JIT kernels generated, buffers allocated, pages touched
    double best = 1e300;
    for (int round = 0; round < 3; ++round) {
      const double t0 = thread_cpu_seconds();
      all();
      best = std::min(best, thread_cpu_seconds() - t0);
    }
    return flop / std::max(best, 1e-9) / 1e9;
  };
  // Alternating, so that a machine growing busier does not favour the one measured first, and
  // kTurns times: where the two are within a few percent, each turn's best still moves by about
  // that much (on a Zen 4, oneDNN 102-108 and OpenBLAS 91-100 GFLOP/s at the default model's
  // shapes), and two turns had once kept OpenBLAS at 4% on a machine where oneDNN runs the
  // step's linear GEMMs 10% faster.
  GemmTiming t;
  for (int turn = 0; turn < kTurns; ++turn) {
    t.openblas_gflops = std::max(t.openblas_gflops, time_one(kernels::GemmProvider::OpenBLAS));
    t.onednn_gflops = std::max(t.onednn_gflops, time_one(kernels::GemmProvider::OneDNN));
  }
  return t;
}

namespace {

// oneDNN only when clearly faster: OpenBLAS stays wherever it is as fast.
constexpr double kOneDnnMargin = 1.05;

std::string format_gflops(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

// The decision for auto, with how it was made. rows: of one GEMM chunk, at most 512 (the
// measurement stays short; larger blocks run at the same speed).
GemmDecision decide_auto(Precision precision, const models::ParamTable& table, int64_t rows) {
  GemmDecision d;
  if (!kernels::gemm_provider_available(kernels::GemmProvider::OneDNN)) {
    d.how = "chosen by --gemm auto: the only provider built";
    return d;
  }
  rows = std::clamp<int64_t>(rows, 1, 512);
  const auto shapes = step_gemm_shapes(table, rows);
  // The key names both providers' kernels, never the one in use: the command and a Python session
  // that set another provider before read the same entry, and so make the same choice. (The
  // turns are in the key: a choice kept from a measurement of fewer is measured again.)
  std::string sig = "gemm auto | " + this_machine_every_provider(precision) + " | rows " + std::to_string(rows) +
                    " | " + std::to_string(kTurns) + " turns |";
  for (const auto& s : shapes) sig += " " + std::to_string(s.N) + "x" + std::to_string(s.K);
  const kernels::GemmProviderGuard restore(kernels::gemm_provider());
  GemmTiming t;
  std::vector<double> kept;
  std::string source;
  if (read_kept(sig, {"openblas_gflops", "onednn_gflops"}, kept)) {
    t = {kept[0], kept[1]};
    source = "kept";
  } else {
    t = time_gemm_providers(shapes, precision);
    source = "measured now, " + keep(sig, {{"openblas_gflops", t.openblas_gflops}, {"onednn_gflops", t.onednn_gflops}});
  }
  const bool onednn = t.onednn_gflops > kOneDnnMargin * t.openblas_gflops;
  d.provider = onednn ? kernels::GemmProvider::OneDNN : kernels::GemmProvider::OpenBLAS;
  d.how = "chosen by --gemm auto: " + format_gflops(onednn ? t.onednn_gflops : t.openblas_gflops) + " against " +
          (onednn ? "openblas's " + format_gflops(t.openblas_gflops) : "onednn's " + format_gflops(t.onednn_gflops)) +
          " GFLOP/s per thread at this model's shapes (" + source + ")";
  return d;
}

void use(const GemmDecision& d) {
  std::string why;
  if (!kernels::gemm_provider_available(d.provider, &why))
    throw ConfigError(std::string("--gemm ") + kernels::gemm_provider_name(d.provider) + " cannot run here: " + why);
  kernels::set_gemm_provider(d.provider);
}

}  // namespace

GemmDecision apply_gemm_choice(GemmChoice asked, Precision precision, const models::ParamTable& table, int64_t rows) {
  GemmDecision d;
  if (asked == GemmChoice::Auto) {
    d = decide_auto(precision, table, rows);
  } else {
    d.provider = gemm_provider_of(asked);
    d.how = "--gemm " + std::string(choice_name(asked));
  }
  use(d);
  return d;
}

GemmDecision apply_gemm_choice(const TrainConfig& cfg, const models::ParamTable& table, distributed::Comm& comm) {
  GemmDecision d;
  if (cfg.gemm == GemmChoice::Auto) {
    uint8_t chosen = 0;
    if (comm.is_root()) {
      // A GEMM chunk's rows: a micro-batch's positions shared by the pool's threads.
      const int64_t positions = cfg.batch_size / std::max<int64_t>(comm.size() * cfg.grad_accum, 1) * cfg.model.block_size;
      d = decide_auto(cfg.precision, table, positions / std::max(parallel::num_threads(), 1));
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
    : prev_(kernels::gemm_provider()), decision_(apply_gemm_choice(cfg, table, comm)) {}

RunGemm::~RunGemm() {
  try {
    kernels::set_gemm_provider(prev_);
  } catch (const std::exception&) {
    // prev_ ran before this run, so it runs now: never reached
  }
}

std::string gemm_header(const GemmDecision& d) {
  return "gemm: " + kernels::gemm_provider_description(d.provider) + ", " + d.how;
}

std::string precision_header(Precision p, kernels::GemmProvider provider) {
  if (p == Precision::FP32) return "precision: fp32";
  return "precision: bf16 autocast (" + kernels::bf16_path_description(provider) +
         "; weights, optimizer, norms, softmax and loss in float32)";
}

}  // namespace ag::train
