#include "tuning/gemm_timing.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "autograd/kernels/bf16.h"
#include "autograd/kernels/gemm.h"
#include "tuning/kept.h"

namespace ag::tuning {

namespace {
// (out, in) of every matrix a matmul reads, once.
std::set<std::pair<int64_t, int64_t>> matmul_weights(const models::ParamTable& table) {
  std::set<std::pair<int64_t, int64_t>> weights;
  auto add = [&](const models::ParamRow& r) {
    if (r.spec.matmul_uses > 0 && r.spec.shape.size() == 2) weights.insert({r.spec.shape[0], r.spec.shape[1]});
  };
  for (const auto& r : table.first) add(r);
  for (const auto& r : table.per_layer) add(r);
  for (const auto& r : table.last) add(r);
  return weights;
}
}  // namespace

std::vector<GemmShapeNT> step_gemm_shapes(const models::ParamTable& table, int64_t rows) {
  std::vector<GemmShapeNT> out;
  for (const auto& [o, i] : matmul_weights(table)) {
    out.push_back({false, true, rows, o, i});   // y = x·Wᵀ       (rows, out)
    out.push_back({false, false, rows, i, o});  // dx = g·W       (rows, in)
    out.push_back({true, false, o, i, rows});   // dW = gᵀ·x      (out, in)
  }
  return out;
}

std::vector<GemmShapeNT> forward_gemm_shapes(const models::ParamTable& table, int64_t rows) {
  std::vector<GemmShapeNT> out;
  for (const auto& [o, i] : matmul_weights(table)) out.push_back({false, true, rows, o, i});  // y = x·Wᵀ (rows, out)
  return out;
}

std::vector<GemmShapeNT> auto_gemm_shapes(const models::ParamTable& table, int64_t rows, GemmWork work) {
  rows = std::clamp<int64_t>(rows, 1, 512);
  return work == GemmWork::Forward ? forward_gemm_shapes(table, rows) : step_gemm_shapes(table, rows);
}

double gemm_flop(const std::vector<GemmShapeNT>& shapes) {
  double flop = 0;
  for (const auto& s : shapes) flop += 2.0 * static_cast<double>(s.M * s.N * s.K);
  return flop;
}

double thread_gflops(double flop, const std::function<void()>& run) {
  run();  // untimed
  double best = 1e300;
  for (int round = 0; round < 3; ++round) {
    const double t0 = thread_cpu_seconds();
    run();
    best = std::min(best, thread_cpu_seconds() - t0);
  }
  return flop / std::max(best, 1e-9) / 1e9;
}

double time_gemm_shapes(const std::vector<GemmShapeNT>& shapes, Precision precision) {
  int64_t a_max = 1, b_max = 1, c_max = 1;
  for (const auto& s : shapes)
    a_max = std::max(a_max, s.M * s.K), b_max = std::max(b_max, s.K * s.N), c_max = std::max(c_max, s.M * s.N);
  const std::vector<float> A(static_cast<size_t>(a_max), 0.01f), B(static_cast<size_t>(b_max), 0.02f);
  std::vector<float> C(static_cast<size_t>(c_max));
  const AutocastGuard at(precision);
  return thread_gflops(gemm_flop(shapes), [&] {
    for (const auto& s : shapes)
      kernels::gemm(s.ta, s.tb, s.M, s.N, s.K, 1.0f, A.data(), s.ta ? s.M : s.K, B.data(), s.tb ? s.K : s.N, 0.0f,
                    C.data(), s.N);
  });
}

std::pair<double, double> time_in_alternation(const std::function<double(bool newer)>& time_one) {
  // Alternating, so that a machine growing busier does not favour the one measured first, and
  // kGemmTimingTurns times: where the two are within a few percent, each turn's best still moves by about
  // that much (on a Zen 4, oneDNN 102-108 and OpenBLAS 91-100 GFLOP/s at the default model's
  // shapes), and two turns had once kept OpenBLAS at 4% on a machine where oneDNN runs the
  // step's linear GEMMs 10% faster.
  std::pair<double, double> best{0, 0};
  for (int turn = 0; turn < kGemmTimingTurns; ++turn) {
    best.first = std::max(best.first, time_one(false));
    best.second = std::max(best.second, time_one(true));
  }
  return best;
}

GemmTiming time_gemm_providers(const std::vector<GemmShapeNT>& shapes, Precision precision) {
  const auto [openblas, onednn] = time_in_alternation([&](bool newer) {
    const kernels::GemmProvider p = newer ? kernels::GemmProvider::OneDNN : kernels::GemmProvider::OpenBLAS;
    if (!kernels::gemm_provider_available(p)) return 0.0;
    const kernels::GemmProviderGuard use(p);
    return time_gemm_shapes(shapes, precision);
  });
  return {openblas, onednn};
}

namespace {
std::string format_gflops(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}
}  // namespace

TimedChoice choose_by_timing(const std::string& key, const std::string& incumbent, const std::string& newer,
                             const std::function<std::pair<double, double>()>& measure) {
  const std::string fi = incumbent + "_gflops", fn = newer + "_gflops";
  std::pair<double, double> t;
  std::vector<double> kept;
  std::string source;
  if (read_kept(key, {fi, fn}, kept)) {
    t = {kept[0], kept[1]};
    source = "kept";
  } else {
    t = measure();
    source = "measured now, " + keep(key, {{fi, t.first}, {fn, t.second}});
  }
  TimedChoice c;
  c.newer = t.second > kGemmChoiceMargin * t.first;  // the incumbent stays wherever it is as fast
  const double chosen = c.newer ? t.second : t.first, other = c.newer ? t.first : t.second;
  c.how = format_gflops(chosen) + " against " + (c.newer ? incumbent : newer) + "'s " + format_gflops(other) +
          " GFLOP/s per thread at this model's shapes (" + source + ")";
  return c;
}

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

ProviderChoice choose_gemm_provider(Precision precision, const models::ParamTable& table, int64_t rows,
                                    GemmWork work) {
  ProviderChoice d;
  if (!kernels::gemm_provider_available(kernels::GemmProvider::OneDNN)) {
    d.how = "chosen by --gemm auto: the only provider built";
    return d;
  }
  rows = std::clamp<int64_t>(rows, 1, 512);
  const auto shapes = auto_gemm_shapes(table, rows, work);
  // The key names both providers' kernels, never the one in use: the command and a Python session
  // that set another provider before read the same entry, and so make the same choice. (The
  // turns are in the key: a choice kept from a measurement of fewer is measured again.)
  std::string sig = "gemm auto | " + this_machine_every_provider(precision) + " | rows " + std::to_string(rows) +
                    " | " + std::to_string(kGemmTimingTurns) + " turns |";
  for (const auto& s : shapes) sig += " " + std::to_string(s.N) + "x" + std::to_string(s.K);
  if (work == GemmWork::Forward) sig += " | forward";
  // oneDNN is timed through the bf16 interface set (chosen before the provider).
  if (precision == Precision::BF16) sig += std::string(" | bf16 ") + kernels::bf16_api_name(kernels::bf16_api());
  const kernels::GemmProviderGuard restore(kernels::gemm_provider());
  const TimedChoice c = choose_by_timing(sig, "openblas", "onednn", [&] {
    const GemmTiming t = time_gemm_providers(shapes, precision);
    return std::pair{t.openblas_gflops, t.onednn_gflops};
  });
  d.provider = c.newer ? kernels::GemmProvider::OneDNN : kernels::GemmProvider::OpenBLAS;
  d.how = "chosen by --gemm auto: " + c.how;
  return d;
}

TimedChoice choose_bf16_api(const std::vector<GemmShapeNT>& shapes) {
  // Kept beside --gemm auto's choices, under a key of its own: the machine with its providers
  // (never the one in use, as --gemm auto's key), at bf16, and the shapes.
  std::string sig = "gemm-bf16 auto | " + this_machine_every_provider(Precision::BF16) + " | " +
                    std::to_string(kGemmTimingTurns) + " turns |";
  for (const auto& s : shapes)
    sig += std::string(" ") + (s.ta ? "T" : "N") + (s.tb ? "T" : "N") + std::to_string(s.M) + "x" +
           std::to_string(s.N) + "x" + std::to_string(s.K);
  return choose_by_timing(sig, "gemm", "matmul", [&] {
    const Bf16ApiTiming t = time_bf16_apis(shapes);
    return std::pair{t.gemm_gflops, t.matmul_gflops};
  });
}

}  // namespace ag::tuning
