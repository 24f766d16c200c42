#include "cli/bench_sample.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "autograd/parallel.h"
#include "models/decode.h"
#include "models/registry.h"
#include "models/transformer_lm.h"

namespace ag::cli {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Runs part(i) for i in [0, n) on n threads (the caller is thread 0); best wall time of reps.
template <class F>
double best_seconds(int n, int reps, F part) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    std::vector<std::thread> threads;
    for (int i = 1; i < n; ++i) threads.emplace_back([=] { part(i); });
    part(0);
    for (auto& t : threads) t.join();
    best = std::min(best, since(t0));
  }
  return best;
}

// GB/s of copying `bytes` from src to dst on n threads, each its contiguous part, counted as
// bytes read + bytes written.
double copy_gbps(const char* src, char* dst, int64_t bytes, int n, int reps) {
  const double s = best_seconds(n, reps, [=](int i) {
    const int64_t b = bytes * i / n, e = bytes * (i + 1) / n;
    std::memcpy(dst + b, src + b, static_cast<size_t>(e - b));
  });
  return 2.0 * static_cast<double>(bytes) / s / 1e9;
}

// GB/s of reading `bytes` on n threads: an integer sum, which vectorises (what decoding does
// to its weights, without the arithmetic).
double read_gbps(const char* src, int64_t bytes, int n, int reps) {
  std::vector<uint64_t> sums(static_cast<size_t>(n));
  const double s = best_seconds(n, reps, [&, src, bytes, n](int i) {
    const auto* p = reinterpret_cast<const uint64_t*>(src);
    const int64_t words = bytes / 8, b = words * i / n, e = words * (i + 1) / n;
    uint64_t acc = 0;
    for (int64_t w = b; w < e; ++w) acc += p[w];
    sums[static_cast<size_t>(i)] = acc;
  });
  volatile uint64_t sink = 0;
  for (uint64_t v : sums) sink = sink + v;  // keeps the sums alive
  return static_cast<double>(bytes) / s / 1e9;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
}  // namespace

CopyBandwidth measure_copy_bandwidth(int64_t bytes, int reps) {
  const auto src = std::make_unique<char[]>(static_cast<size_t>(bytes));
  const auto dst = std::make_unique<char[]>(static_cast<size_t>(bytes));
  std::memset(src.get(), 1, static_cast<size_t>(bytes));  // fault every page in before timing
  std::memset(dst.get(), 2, static_cast<size_t>(bytes));
  CopyBandwidth bw;
  bw.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  bw.gbps_1thread = copy_gbps(src.get(), dst.get(), bytes, 1, reps);
  bw.gbps_all = bw.threads > 1 ? copy_gbps(src.get(), dst.get(), bytes, bw.threads, reps) : bw.gbps_1thread;
  bw.read_gbps_1thread = read_gbps(src.get(), bytes, 1, reps);
  bw.read_gbps_all = bw.threads > 1 ? read_gbps(src.get(), bytes, bw.threads, reps) : bw.read_gbps_1thread;
  return bw;
}

std::vector<nlohmann::json> bench_sample(const models::ModelConfig& cfg, const std::vector<int64_t>& batches,
                                         int64_t tokens, int reps) {
  const CopyBandwidth bw = measure_copy_bandwidth();
  Generator gen(1337);
  const auto model_ptr = models::make_model(cfg, DType::Float32, gen);
  const auto* gpt = dynamic_cast<const models::TransformerLM*>(model_ptr.get());
  if (!gpt) throw std::runtime_error("bench sample: the benchmark model is not a TransformerLM");
  model_ptr->eval();
  const double weight_bytes = models::Decoder(*gpt, 1).weight_bytes_per_step();
  std::vector<nlohmann::json> out;
  for (const int64_t B : batches) {
    const std::vector<std::vector<int64_t>> prompts(static_cast<size_t>(B), std::vector<int64_t>{0});
    (void)gpt->generate_batch(prompts, {8, 1.0, 0, true}, gen);  // warm-up
    std::vector<double> secs;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = Clock::now();
      (void)gpt->generate_batch(prompts, {tokens, 1.0, 0, true}, gen);
      secs.push_back(since(t0));
    }
    const double sec = median(secs), tps = static_cast<double>(B * tokens) / sec;
    // The decode step alone, what the bound is about: one token per row at every position of
    // an empty-to-full window (no prompt, no sampling), the median of reps sweeps.
    models::Decoder dec(*gpt, B);
    const std::vector<int64_t> ids(static_cast<size_t>(B), 0);
    const int64_t block = cfg.block_size;
    std::vector<double> sweeps;
    for (int r = 0; r < reps; ++r) {
      dec.reset();
      const auto t0 = Clock::now();
      for (int64_t t = 0; t < block; ++t) (void)dec.forward(ids.data(), 1);
      sweeps.push_back(since(t0) / static_cast<double>(block));
    }
    const double step = median(sweeps), step_tps = static_cast<double>(B) / step;
    const double bound = static_cast<double>(B) * bw.best() * 1e9 / weight_bytes;
    // Keys and values read per step, on average over the sweep (positions 1 .. block attended).
    const double kv_bytes = static_cast<double>(B * cfg.n_layer * 2 * cfg.n_embd) * sizeof(float) *
                            static_cast<double>(block + 1) / 2;
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    out.push_back({{"batch", B}, {"tokens", tokens}, {"reps", reps}, {"ms_per_step", sec / static_cast<double>(tokens) * 1e3},
                   {"tokens_per_s", tps}, {"decode_step_ms", step * 1e3}, {"decode_step_tokens_per_s", step_tps},
                   {"weight_mb_per_step", weight_bytes / 1e6}, {"kv_mb_per_step", kv_bytes / 1e6},
                   {"step_over_bound", step_tps / bound},
                   {"bound_with_kv_tokens_per_s", static_cast<double>(B) * bw.best() * 1e9 / (weight_bytes + kv_bytes)},
                   {"copy_gbps_1thread", bw.gbps_1thread}, {"copy_gbps_all_threads", bw.gbps_all},
                   {"copy_threads", bw.threads}, {"read_gbps_1thread", bw.read_gbps_1thread},
                   {"read_gbps_all_threads", bw.read_gbps_all},
                   {"read_bound_tokens_per_s", static_cast<double>(B) * bw.best_read() * 1e9 / weight_bytes},
                   {"bound_tokens_per_s", bound}, {"achieved_over_bound", tps / bound},
                   {"peak_rss_mb", static_cast<double>(u.ru_maxrss) / 1024.0}});
  }
  return out;
}

}  // namespace ag::cli
