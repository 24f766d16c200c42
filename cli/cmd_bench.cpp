// `attograd bench [train|forward|sample|attention|sgemm]`: throughput of the real code paths
// (`bench train` runs train::Step with the optimizer `attograd train --optimizer NAME` builds,
// the step `attograd train` runs), measured in this process. bench/compare.py runs each in a fresh process next to
// bench/torch_baseline.py and prints the side-by-side table (`make bench`).
#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <thread>
#include <nlohmann/json.hpp>

#include "autograd/engine.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/onednn.h"
#include "autograd/kernels/openblas_core.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "autograd/profiler.h"
#include "bench/gemm_floor.h"
#include "cli/bench_sample.h"
#include "cli/bench_allreduce.h"
#include "cli/bench_core_round_trip.h"
#include "cli/commands.h"
#include "cli/precision_flags.h"
#include "models/registry.h"
#include "nn/attention.h"
#include "distributed/comm.h"
#include "train/config/run_config.h"
#include "train/bf16_api_choice.h"
#include "train/gemm_choice.h"
#include "tuning/tuning.h"
#include "train/logging/profile.h"
#include "train/step.h"

namespace ag::cli {

namespace {

// bench train: rounds of timed steps, each followed by replays of the step's GEMM floor.
constexpr int64_t kFloorRounds = 3;
using Clock = std::chrono::steady_clock;

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // kB on Linux
}

struct BenchConfig {
  std::string name;
  models::ModelConfig model;  // the GPT
  int64_t batch;
};

// A GPT over 65 characters (tiny shakespeare's vocabulary).
models::ModelConfig gpt(int64_t layers, int64_t heads, int64_t embd, int64_t block) {
  models::ModelConfig c;
  c.name = "gpt", c.vocab_size = 65, c.n_layer = layers, c.n_head = heads, c.n_embd = embd, c.block_size = block;
  return c;
}

BenchConfig config_named(const std::string& name) {
  if (name == "default") return {name, gpt(4, 4, 128, 64), 12};
  if (name == "large") return {name, gpt(6, 6, 384, 256), 16};  // as configs/large.toml
  throw UsageError("--config must be default or large, got '" + name + "'");
}

// The core's limit for the multiply-add the step's GEMMs are built on: oneDNN's native bf16
// GEMM issues AMX's tile dot product where its JIT targets AMX (both interfaces: the gemm API's
// kernels and the matmul primitive's brgemm have AMX versions), else AVX512_BF16's dot product;
// every other GEMM, float32 FMAs (the portable bf16 path's too: sgemm on rounded values).
tuning::FmaPeak gemm_instruction_peak(Precision precision) {
  if (precision == Precision::BF16 && kernels::bf16_path_is_native()) {
    if (kernels::onednn::isa().find("amx") != std::string::npos) return tuning::amx_bf16_peak();
    return tuning::bf16_dot_peak();
  }
  return tuning::fp32_fma_peak();
}

// Runs fn repeatedly: `warmup` times untimed, then until `seconds` or `max_steps`; returns s/step.
// Under mpirun rank 0 decides when to stop and tells the others, so that every rank runs the
// same number of steps (each step holds collectives).
template <class F>
double time_steps(F fn, int warmup, double seconds, int64_t max_steps, int64_t& steps,
                  distributed::Comm& comm = distributed::Comm::single()) {
  for (int i = 0; i < warmup; ++i) fn();
  steps = 0;
  const auto t0 = Clock::now();
  for (;;) {
    char go = steps < max_steps && (steps < 3 || since(t0) < seconds);
    comm.broadcast(&go, 1);
    if (!go) break;
    fn();
    ++steps;
  }
  return since(t0) / static_cast<double>(steps);
}

// `attograd bench train`: train::Step, the step `attograd train` runs (train/step.h), with the
// optimizer its --optimizer row builds at the default settings, on a fixed random batch. Under
// mpirun -np N and/or with --grad-accum K, each rank takes its batch/N rows in K micro-batches
// and the Reducer averages the gradients, started from hooks during the
// last backward; it then also reports the blocking allreduce time of one step's gradients
// (alone, afterwards), the time rank 0 waited for the reduction after its backward had ended,
// less the part spent waiting for a slower rank to finish its backward (imbalance, not
// communication), and so the fraction of the allreduce hidden behind backward. The ranks'
// clocks are compared after the timed steps, so that split holds on one machine.
// profile_dir: empty, or where --profile writes trace.json and profile_table.txt.
void bench_train(const BenchConfig& bc, const train::OptimizerChoice& optimizer, int64_t K, double seconds, int64_t max_steps,
                 const std::string& profile_dir, Precision precision, nlohmann::json& out) {
  distributed::Comm& comm = distributed::Comm::world();
  if (K < 1) throw UsageError("--grad-accum must be positive");
  if (bc.batch % (comm.size() * K) != 0)
    throw UsageError("the " + bc.name + " batch of " + std::to_string(bc.batch) + " does not split into ranks × --grad-accum = " +
                     std::to_string(comm.size() * K));
  Generator gen(1337);
  const auto model_ptr = models::make_model(bc.model, DType::Float32, gen);
  models::LanguageModel& model = *model_ptr;
  model.train();
  const Tensor x = Tensor::randint(0, bc.model.vocab_size, {bc.batch, bc.model.block_size}, gen);
  const Tensor y = Tensor::randint(0, bc.model.vocab_size, {bc.batch, bc.model.block_size}, gen);
  train::TrainConfig run;  // the run's defaults (--lr, betas, weight decay, the optimizer's settings)
  run.optimizer = optimizer;
  const std::unique_ptr<optim::Optimizer> opt = optimizer->build(model, run);
  train::Step step(model, *opt, comm, {K, /*grad_clip=*/1.0, /*detect_anomaly=*/false, precision});
  int64_t iter = 0;
  double waited = 0, early = 0;
  std::vector<double> backward_ends;  // this rank's, per timed step
  bool timing = false;
  auto one_step = [&] {
    const train::StepResult r = step.run(x, y, iter++);
    if (!r.nonfinite.empty()) throw std::runtime_error("bench train: " + r.nonfinite);
    if (!timing || !step.reducer()) return;
    waited += step.reducer()->last_wait_seconds();
    early += static_cast<double>(step.reducer()->last_launched_early());
    backward_ends.push_back(std::chrono::duration<double>(r.backward_end.time_since_epoch()).count());
  };
  // One process: the same step's GEMMs on their own are its floor, the fastest this step could
  // be on its provider at its precision. They are recorded first (one step on one thread), then
  // replayed after each of a few rounds of timed steps: this machine's speed drifts (a large
  // step's floor read 326-451 ms within one hour, bench/README), so each round's steps are set
  // against the floor of the same minute and step_over_floor is the median of those ratios.
  const bool with_floor = !step.reducer();
  std::vector<bench::GemmShape> calls;
  if (with_floor) calls = bench::record_gemms(one_step);
  for (int i = 0; i < 3; ++i) one_step();  // warmup (after recording: the pool's threads are new)
  timing = true;
  int64_t steps = 0;
  reset_peak_memory();
  double sec = 0, rss_mb = 0;  // rss: the steps' peak, read before any replay allocates its operands
  bench::GemmFloor gf;
  std::vector<double> round_ratios, round_trips_ns;  // per round: step/floor, and the threads' placement
  if (!with_floor) {
    sec = time_steps(one_step, 0, seconds, max_steps, steps, comm);
    rss_mb = peak_rss_mb();
  } else {
    const int64_t rounds = std::clamp<int64_t>(max_steps, 1, kFloorRounds);
    double step_seconds = 0, floor_ms = 0;
    int64_t floor_reps = 0;
    for (int64_t r = 0; r < rounds; ++r) {
      // The pool's worker spins for a while after a job before it sleeps; the probe's partner
      // thread would share its core with it until then.
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
      round_trips_ns.push_back(core_round_trip_ns());
      int64_t n = 0;
      const int64_t cap = max_steps / rounds + (r < max_steps % rounds ? 1 : 0);
      const double per_step = time_steps(one_step, 0, seconds / static_cast<double>(rounds), cap, n, comm);
      if (r == 0) rss_mb = peak_rss_mb();
      // replays for about half the round's time, at least one (after replay_gemms's warm-up)
      const int reps = static_cast<int>(std::clamp(seconds / 2 / static_cast<double>(rounds) / per_step, 1.0, 50.0));
      const bench::GemmFloor round_floor = bench::replay_gemms(calls, parallel::num_threads(), reps, precision);
      steps += n;
      step_seconds += per_step * static_cast<double>(n);
      floor_ms += round_floor.ms * reps;
      floor_reps += reps;
      round_ratios.push_back(per_step * 1e3 / round_floor.ms);
      gf.calls = round_floor.calls;
      gf.gflop = round_floor.gflop;
    }
    sec = step_seconds / static_cast<double>(steps);
    gf.ms = floor_ms / static_cast<double>(floor_reps);
  }
  const double tokens = static_cast<double>(bc.batch * bc.model.block_size);  // global
  const double flops = 3 * model.forward_flops(bc.batch);
  // What MFU is measured against: the job's peak, as the trainer's (ranks share a machine's cores).
  tuning::PeakFlops peak = tuning::kept_peak_flops(parallel::num_threads(), precision);
  if (comm.distributed()) comm.allreduce_sum(&peak.gflops, 1);
  out.update({{"config", bc.name}, {"optimizer", optimizer.name()}, {"ranks", comm.size()}, {"grad_accum", K}, {"steps", steps},
              {"ms_per_step", sec * 1e3}, {"tokens_per_s", tokens / sec}, {"gflops", flops / sec / 1e9},
              {"sgemm_peak_gflops", peak.gflops}, {"mfu", flops / sec / 1e9 / peak.gflops},
              {"tensor_peak_mb", static_cast<double>(memory_stats().peak_bytes) / 1048576.0},
              {"peak_rss_mb", rss_mb}});
  if (const distributed::Reducer* reducer = step.reducer()) {
    // When backward ended on each rank, step by step (one clock on one machine): the time a
    // rank then waits for slower ranks is imbalance, not communication.
    const size_t n = backward_ends.size(), R = static_cast<size_t>(comm.size());
    std::vector<double> ends(n * R, 0.0);
    for (size_t i = 0; i < n; ++i) ends[i * R + static_cast<size_t>(comm.rank())] = backward_ends[i];
    comm.allreduce_sum(ends.data(), static_cast<int>(ends.size()));
    double late = 0;
    for (size_t i = 0; i < n; ++i)
      late += *std::max_element(ends.begin() + i * R, ends.begin() + (i + 1) * R) - backward_ends[i];
    std::vector<int64_t> numels;
    for (const Tensor& p : model.parameters()) numels.push_back(p.numel());  // the reducer's parameters
    double blocking = 0;
    const int reps = 5;
    for (int i = 0; i < reps; ++i) blocking += time_blocking_allreduce(comm, *reducer, numels);
    blocking /= reps;
    const double steps_d = static_cast<double>(n);
    const double exposed = std::max(0.0, (waited - late) / steps_d);  // waiting after backward, less waiting for others
    out.update({{"grad_bytes_per_step", reducer->bytes_per_step()}, {"buckets", reducer->buckets().size()},
                {"buckets_started_in_backward", early / steps_d}, {"allreduce_ms", blocking * 1e3},
                {"wait_after_backward_ms", waited / steps_d * 1e3}, {"waiting_for_slower_ranks_ms", late / steps_d * 1e3},
                {"allreduce_exposed_ms", exposed * 1e3},
                {"allreduce_hidden_fraction", std::clamp(1.0 - exposed / blocking, 0.0, 1.0)}});
  } else {
    std::vector<double> sorted = round_ratios;
    std::sort(sorted.begin(), sorted.end());
    const size_t k = sorted.size();
    const double median = k % 2 ? sorted[k / 2] : (sorted[k / 2 - 1] + sorted[k / 2]) / 2;
    out.update({{"gemm_calls", gf.calls}, {"gemm_gflop", gf.gflop}, {"gemm_floor_ms", gf.ms},
                {"gemm_floor_tokens_per_s", tokens / (gf.ms / 1e3)}, {"step_over_floor", median},
                {"step_over_floor_rounds", round_ratios}, {"core_round_trip_ns_rounds", round_trips_ns}});
    // The floor against the cores' own limit: how far the provider's GEMMs are from it at these
    // shapes, and the tokens/s of a step that were nothing but its GEMMs at that limit.
    const tuning::FmaPeak fma = gemm_instruction_peak(precision);
    const double fma_gflops = fma.gflops * parallel::num_threads();  // NaN when not measured
    out.update({{"fma_peak", fma.what}, {"fma_peak_gflops", fma_gflops},
                {"floor_of_fma_peak", gf.gflop / (gf.ms / 1e3) / fma_gflops},
                {"fma_ceiling_tokens_per_s", tokens / (gf.gflop / fma_gflops)}});
  }
  if (!profile_dir.empty()) {  // after the timing, so the numbers above are the unprofiled step's
    // Every rank steps (the step's collectives need them all); rank 0 records.
    train::ProfileSession profile(comm.is_root() ? 5 : 0, profile_dir, "attograd bench train (" + bc.name + ")");
    for (int64_t i = 0; i < 6; ++i) {  // a warm-up step, then the 5 profiled
      profile.begin_step(i);
      one_step();
      profile.end_step(std::cerr);  // the table on stderr: --json keeps stdout to its lines
    }
  }
}

void emit(const nlohmann::json& j, bool as_json) {
  if (as_json) {
    std::cout << j.dump() << std::endl;
    return;
  }
  for (auto it = j.begin(); it != j.end(); ++it) std::cout << it.key() << "=" << it.value().dump() << "  ";
  std::cout << std::endl;
}
}  // namespace

namespace {
int bench_command(int argc, char** argv) {
  cxxopts::Options options("attograd bench", "Measure throughput: train | forward | sample | attention | sgemm | gemm.");
  // clang-format off
  options.add_options()
    ("what", "train, forward, sample, attention, sgemm, or gemm (each provider's GFLOP/s per thread at the configuration's GEMM shapes, fp32 and bf16)", cxxopts::value<std::string>()->default_value("train"))
    ("config", "model configuration: default (4x128, block 64, batch 12) or large (6x384, block 256, batch 16)",
     cxxopts::value<std::string>()->default_value("default"))
    ("seconds", "time spent measuring, per benchmark", cxxopts::value<double>()->default_value("10"))
    ("max-steps", "stop after this many measured steps", cxxopts::value<int64_t>()->default_value("1000000"))
    ("threads", "attograd threads (0: one per core); OpenBLAS runs inside them single-threaded", cxxopts::value<int>()->default_value("0"))
    ("len", "attention: sequence length T", cxxopts::value<int64_t>()->default_value("256"))
    ("tokens", "sample: tokens to generate", cxxopts::value<int64_t>()->default_value("500"))
    ("batch", "sample: batch sizes, comma-separated (one line each)", cxxopts::value<std::string>()->default_value("1,8"))
    ("optimizer", "train: the optimizer, as attograd train --optimizer: " + train::choice_help<train::OptimizerChoice>(),
     cxxopts::value<std::string>()->default_value(train::TrainConfig{}.optimizer.name()))
    ("grad-accum", "train: micro-batches per step (batch/(ranks*K) rows each); under mpirun -np N the batch is split over ranks and the allreduce is timed", cxxopts::value<int64_t>()->default_value("1"))
    ("profile", "train: then profile 5 more steps into DIR/trace.json and DIR/profile_table.txt (as train --profile-steps)",
     cxxopts::value<std::string>()->implicit_value("."), "DIR")
    ("json", "one JSON object per line")
    ("h,help", "show this help");
  // clang-format on
  add_precision_flags(options);
  options.parse_positional({"what"});
  options.positional_help("[train|forward|sample|attention|sgemm|gemm]");
  const auto r = parse_command_line(options, argc, argv);
  if (print_help_if_asked(options, r)) return 0;
  const std::string what = r["what"].as<std::string>();
  const PrecisionFlags pf = read_precision_flags(r);
  const int threads = r["threads"].as<int>();
  parallel::set_num_threads(threads > 0 || !distributed::Comm::world().distributed() ? threads
                                                                              : distributed::Comm::world().threads_per_rank());
  const double seconds = r["seconds"].as<double>();
  const int64_t max_steps = r["max-steps"].as<int64_t>();
  if (!(seconds > 0) || max_steps < 1) throw UsageError("--seconds and --max-steps must be positive");
  const bool json = r.count("json") > 0;
  nlohmann::json out = {{"side", "attograd"}, {"bench", what}, {"blas_core", kernels::openblas_core_name()}, {"blas_config", kernels::openblas_config()},
                        {"threads", parallel::num_threads()}};
  Generator gen(1337);
  // The provider (--gemm; auto measured at the configuration's shapes) and the precision, for
  // every benchmark of a model; the sgemm benchmark is OpenBLAS's own, multithreaded. Sampling
  // resolves auto as `attograd sample` does, at one row per GEMM (a decode step's): there the
  // providers' order can be the other way round (on a Zen 4, oneDNN at the training step's
  // shapes but OpenBLAS at a decode step's, twice as fast there).
  if (what != "sgemm") {
    const BenchConfig bc = config_named(r["config"].as<std::string>());
    const int64_t rows =
        what == "sample" ? 1 : bc.batch * bc.model.block_size / std::max(parallel::num_threads(), 1);
    // The products each runs: a decode step's or a forward pass's x·Wᵀ, else a training step's.
    const tuning::GemmWork work =
        what == "sample" || what == "forward" ? tuning::GemmWork::Forward : tuning::GemmWork::TrainingStep;
    const train::GemmDecision d = train::apply_gemm_choice(
        pf.gemm, pf.gemm_bf16, pf.precision, models::find_model(bc.model.name).parameters(bc.model), rows, work);
    out.update({{"gemm", kernels::gemm_provider_name(d.provider)},
                {"gemm_provider", kernels::gemm_provider_description(d.provider)},
                {"gemm_chosen", d.how}, {"gemm_chosen_at_rows", rows},
                {"precision", precision_name(pf.precision)},
                {"bf16_path", pf.precision == Precision::BF16 ? kernels::bf16_path_description(d.provider) : ""},
                {"gemm_bf16", kernels::bf16_api_name(d.bf16_api)}, {"gemm_bf16_chosen", d.bf16_how}});
  }
  const AutocastGuard autocast(what == "train" ? Precision::FP32 : pf.precision);  // train: inside its Step

  if (what == "gemm") {  // each provider's GFLOP/s per thread at the configuration's GEMM shapes
    const BenchConfig bc = config_named(r["config"].as<std::string>());
    const int64_t rows = std::min<int64_t>(512, bc.batch * bc.model.block_size / std::max(parallel::num_threads(), 1));
    const auto shapes = tuning::step_gemm_shapes(models::find_model(bc.model.name).parameters(bc.model), rows);
    const tuning::GemmTiming fp32 = tuning::time_gemm_providers(shapes, Precision::FP32);
    const tuning::GemmTiming bf16 = tuning::time_gemm_providers(shapes, Precision::BF16);
    // oneDNN's two bf16 interfaces on operands already rounded: the GEMM call alone.
    const tuning::Bf16ApiTiming apis = tuning::time_bf16_apis(shapes);
    out.update({{"config", bc.name}, {"rows", rows}, {"shapes", shapes.size()},
                {"openblas_fp32_gflops_per_thread", fp32.openblas_gflops}, {"onednn_fp32_gflops_per_thread", fp32.onednn_gflops},
                {"openblas_bf16_gflops_per_thread", bf16.openblas_gflops}, {"onednn_bf16_gflops_per_thread", bf16.onednn_gflops},
                {"onednn_bf16_gemm_api_rounded_gflops_per_thread", apis.gemm_gflops},
                {"onednn_bf16_matmul_rounded_gflops_per_thread", apis.matmul_gflops},
                {"onednn_matmul_kernel", kernels::onednn::matmul_bf16_kernel(rows, shapes[0].N, shapes[0].K)},
                {"onednn", kernels::gemm_provider_description(kernels::GemmProvider::OneDNN)},
                {"openblas", kernels::gemm_provider_description(kernels::GemmProvider::OpenBLAS)}});
  } else if (what == "sgemm") {
    const int n = parallel::num_threads();
    // OpenBLAS's own threads, in wall time: the mean of the timed calls.
    out["gflops_2048_1thread"] = tuning::sgemm_gflops(2048, 1, 10, 1, tuning::SgemmClock::Wall);
    out["gflops_2048"] = tuning::sgemm_gflops(2048, n, 10, 1, tuning::SgemmClock::Wall);
    out["gflops_512"] = tuning::sgemm_gflops(512, n, 200, 1, tuning::SgemmClock::Wall);
  } else if (what == "train") {
    const std::string name = r["optimizer"].as<std::string>();
    const auto optimizer = train::parse_choice<train::OptimizerChoice>(name);
    if (!optimizer) throw UsageError("--optimizer must be " + train::choice_list<train::OptimizerChoice>() + ", got '" + name + "'");
    bench_train(config_named(r["config"].as<std::string>()), *optimizer, r["grad-accum"].as<int64_t>(), seconds, max_steps,
                r.count("profile") ? r["profile"].as<std::string>() : std::string(), pf.precision, out);
    if (!distributed::Comm::world().is_root()) return 0;  // rank 0 reports
  } else if (what == "forward") {
    const BenchConfig bc = config_named(r["config"].as<std::string>());
    const auto model_ptr = models::make_model(bc.model, DType::Float32, gen);
    models::LanguageModel& model = *model_ptr;
    const Tensor x = Tensor::randint(0, bc.model.vocab_size, {bc.batch, bc.model.block_size}, gen);
    const double tokens = static_cast<double>(bc.batch * bc.model.block_size);
    int64_t steps = 0;
    reset_peak_memory();
    model.eval();
    NoGradGuard no_grad;
    const double sec = time_steps([&] { (void)model.forward(x); }, 3, seconds, max_steps, steps);
    const double flops = model.forward_flops(bc.batch);
    const double peak = tuning::kept_peak_flops(parallel::num_threads(), pf.precision).gflops;  // what MFU is measured against
    out.update({{"config", bc.name}, {"steps", steps}, {"ms_per_step", sec * 1e3}, {"tokens_per_s", tokens / sec},
                {"gflops", flops / sec / 1e9}, {"sgemm_peak_gflops", peak}, {"mfu", flops / sec / 1e9 / peak},
                {"tensor_peak_mb", static_cast<double>(memory_stats().peak_bytes) / 1048576.0},
                {"peak_rss_mb", peak_rss_mb()}});
  } else if (what == "sample") {
    std::vector<int64_t> batches;
    std::stringstream list(r["batch"].as<std::string>());
    for (std::string item; std::getline(list, item, ',');) {
      const int64_t b = std::atoll(item.c_str());
      if (b < 1 || std::to_string(b) != item) throw UsageError("--batch takes positive batch sizes like 1,8, got '" + item + "'");
      batches.push_back(b);
    }
    if (batches.empty() || r["tokens"].as<int64_t>() < 1) throw UsageError("--batch and --tokens must be given positive values");
    const BenchConfig bc = config_named(r["config"].as<std::string>());
    for (const auto& line : bench_sample(bc.model, batches, r["tokens"].as<int64_t>(), 3)) {
      nlohmann::json j = out;
      j["config"] = bc.name;
      j.update(line);
      emit(j, json);
    }
    return 0;
  } else if (what == "attention") {
    const int64_t T = r["len"].as<int64_t>(), E = 128, H = 4, B = 4;
    if (T < 1) throw UsageError("--len must be positive");
    nn::MultiheadAttention mha(E, H, 0.0, true, true, DType::Float32, gen);
    Tensor x = Tensor::randn({B, T, E}, DType::Float32, gen).requires_grad_();
    int64_t steps = 0;
    reset_peak_memory();
    const double sec = time_steps([&] {
      Tensor o = mha.forward(x, x, x, Tensor(), false, Tensor(), true, true).output;
      sum(o).backward();
    }, 2, seconds, max_steps, steps);
    out.update({{"len", T}, {"batch", B}, {"embed", E}, {"heads", H}, {"steps", steps}, {"ms_fwd_bwd", sec * 1e3},
                {"tensor_peak_mb", static_cast<double>(memory_stats().peak_bytes) / 1048576.0},
                {"peak_rss_mb", peak_rss_mb()}});
    // The attention op alone, as PyTorch's F.scaled_dot_product_attention(is_causal=True) in
    // bench/torch_baseline.py --attention: q, k, v (B, H, T, E/H), forward + backward.
    Tensor q = Tensor::randn({B, H, T, E / H}, DType::Float32, gen).requires_grad_();
    Tensor k = Tensor::randn({B, H, T, E / H}, DType::Float32, gen).requires_grad_();
    Tensor v = Tensor::randn({B, H, T, E / H}, DType::Float32, gen).requires_grad_();
    reset_peak_memory();
    const double sdpa = time_steps([&] { sum(scaled_dot_product_attention(q, k, v, true)).backward(); }, 2, seconds,
                                   max_steps, steps);
    out.update({{"sdpa_steps", steps}, {"ms_sdpa_fwd_bwd", sdpa * 1e3},
                {"sdpa_tensor_peak_mb", static_cast<double>(memory_stats().peak_bytes) / 1048576.0}});
    // ... and the materialised path it replaces, P = attention_probs (B·H, T, T), then P·v
    auto heads = [&](const Tensor& t) { return reshape(t.detach(), {B * H, T, E / H}).requires_grad_(); };
    Tensor q3 = heads(q), k3 = heads(k), v3 = heads(v);
    reset_peak_memory();
    const double mat = time_steps(
        [&] { sum(matmul(attention_probs(q3, k3, Tensor(), 1 / std::sqrt(E / H), true), v3)).backward(); }, 2,
        seconds, max_steps, steps);
    out.update({{"materialized_steps", steps}, {"ms_materialized_fwd_bwd", mat * 1e3},
                {"materialized_tensor_peak_mb", static_cast<double>(memory_stats().peak_bytes) / 1048576.0}});
  } else {
    throw UsageError("unknown benchmark '" + what + "' (train, forward, sample, attention, sgemm, gemm)");
  }
  emit(out, json);
  return 0;
}
}  // namespace

int cmd_bench(int argc, char** argv) {
  return distributed::run_or_abort_job("bench", [&] { return bench_command(argc, argv); });
}

}  // namespace ag::cli
