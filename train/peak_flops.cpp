#include "train/peak_flops.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

#include "autograd/kernels/gemm.h"
#include "autograd/kernels/gemm_provider.h"
#include "autograd/kernels/onednn.h"
#include "autograd/kernels/openblas_core.h"
#include "base/atomic_file.h"

namespace ag::train {

namespace fs = std::filesystem;

namespace {
std::string machine_text(const MachineKey& k, const std::string& providers) {
  return k.cpu + " | " + std::to_string(k.cores) + " cores | " + providers +
         (k.precision == Precision::FP32 ? "" : std::string(" | ") + precision_name(k.precision));
}

// "Zen" (OpenBLAS's kernel set), "2.6.3 avx512_core_bf16" (oneDNN's version and JIT target).
std::string provider_kernel(kernels::GemmProvider p) {
  return p == kernels::GemmProvider::OneDNN ? kernels::onednn::version() + " " + kernels::onednn::isa()
                                            : std::string(kernels::openblas_core_name());
}
}  // namespace

std::string MachineKey::text() const { return machine_text(*this, provider + " " + kernel); }

MachineKey this_machine(Precision precision) {
  MachineKey k;
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon != std::string::npos) k.cpu = line.substr(line.find_first_not_of(" \t", colon + 1));
    break;
  }
  if (k.cpu.empty()) k.cpu = "unknown CPU";
  k.cores = static_cast<int>(std::thread::hardware_concurrency());
  const kernels::GemmProvider p = kernels::gemm_provider();
  k.provider = kernels::gemm_provider_name(p);
  k.kernel = provider_kernel(p);
  k.precision = precision;
  return k;
}

std::string this_machine_every_provider(Precision precision) {
  std::string providers;
  for (const auto p : kernels::kGemmProviders) {
    if (!kernels::gemm_provider_available(p)) continue;
    providers += (providers.empty() ? "" : ", ") + std::string(kernels::gemm_provider_name(p)) + " " + provider_kernel(p);
  }
  return machine_text(this_machine(precision), providers);
}

// The kept value's name. Entries of an older name (wall-clock timings, perhaps taken on a busy
// machine) are not read: this machine's peak is measured again.
constexpr const char* kPeakField = "gflops_per_thread_cpu_time";

std::string peak_cache_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg) return (fs::path(xdg) / "attograd" / "peak_flops.json").string();
  const char* home = std::getenv("HOME");
  if (home && *home) return (fs::path(home) / ".cache" / "attograd" / "peak_flops.json").string();
  return "";
}

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double sgemm_gflops(int64_t n, int threads, int reps, int trials, SgemmClock clock, Precision precision) {
  const int saved = openblas_get_num_threads();
  if (saved != threads) openblas_set_num_threads(threads);
  std::vector<float> a(static_cast<size_t>(n * n), 1.0f), b(static_cast<size_t>(n * n), 0.5f), c(static_cast<size_t>(n * n));
  const AutocastGuard at(precision);
  auto sgemm = [&] { kernels::gemm(false, false, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n); };
  // In CPU time a thread waiting for a core does not count: on a 2-core AMD EPYC at load 9 the
  // wall-clock peak was 13.9 GFLOP/s per thread, at load 3–4 35.6 and 35.8 in CPU time.
  auto now = [clock] {
    if (clock == SgemmClock::Wall)
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    return thread_cpu_seconds();
  };
  sgemm();  // untimed: page faults, the provider's buffers
  double best = 0;
  for (int trial = 0; trial < trials; ++trial) {
    const double t0 = now();
    for (int r = 0; r < reps; ++r) sgemm();
    const double sec = now() - t0;
    best = std::max(best, static_cast<double>(reps) * 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / sec / 1e9);
  }
  if (saved != threads) openblas_set_num_threads(saved);
  return best;
}

double measure_sgemm_gflops_per_thread(Precision precision) {
  // attograd runs its GEMMs single-threaded (parallel::init_threads): the peak is one thread's.
  return sgemm_gflops(1024, 1, 2, 5, SgemmClock::ThreadCpu, precision);
}

PeakFlops kept_peak_flops(int threads, Precision precision) {
  PeakFlops p;
  const std::string path = peak_cache_path();
  const std::string key = this_machine(precision).text();
  nlohmann::json cache = nlohmann::json::object();
  if (!path.empty()) {
    std::ifstream f(path);
    if (f) {
      std::stringstream text;
      text << f.rdbuf();
      cache = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
      if (!cache.is_object()) cache = nlohmann::json::object();  // unreadable: measured again, rewritten
    }
    const auto it = cache.find(key);
    if (it != cache.end() && it->is_object() && it->contains(kPeakField) && (*it)[kPeakField].is_number() &&
        (*it)[kPeakField].get<double>() > 0) {
      p.per_thread_gflops = (*it)[kPeakField].get<double>();
      p.source = "kept in " + path;
    }
  }
  if (p.per_thread_gflops <= 0) {
    p.per_thread_gflops = measure_sgemm_gflops_per_thread(precision);
    if (path.empty()) {
      p.source = "measured now, not kept (neither XDG_CACHE_HOME nor HOME is set)";
    } else {
      cache[key] = {{kPeakField, p.per_thread_gflops}};
      try {
        fs::create_directories(fs::path(path).parent_path());
        write_file_atomically(path, cache.dump(2) + "\n");
        p.source = "measured now, kept in " + path;
      } catch (const std::exception& e) {
        p.source = std::string("measured now, not kept: ") + e.what();
      }
    }
  }
  p.gflops = p.per_thread_gflops * std::max(threads, 1);
  return p;
}

namespace {
nlohmann::json read_cache(const std::string& path) {
  nlohmann::json cache = nlohmann::json::object();
  std::ifstream f(path);
  if (!f) return cache;
  std::stringstream text;
  text << f.rdbuf();
  cache = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  return cache.is_object() ? cache : nlohmann::json::object();
}
}  // namespace

bool read_kept(const std::string& key, const std::vector<std::string>& fields, std::vector<double>& values) {
  const std::string path = peak_cache_path();
  if (path.empty()) return false;
  const nlohmann::json cache = read_cache(path);
  const auto it = cache.find(key);
  if (it == cache.end() || !it->is_object()) return false;
  values.clear();
  for (const std::string& f : fields) {
    if (!it->contains(f) || !(*it)[f].is_number() || !((*it)[f].get<double>() > 0)) return false;
    values.push_back((*it)[f].get<double>());
  }
  return true;
}

std::string keep(const std::string& key, const std::vector<std::pair<std::string, double>>& values) {
  const std::string path = peak_cache_path();
  if (path.empty()) return "not kept (neither XDG_CACHE_HOME nor HOME is set)";
  nlohmann::json cache = read_cache(path);
  nlohmann::json entry = nlohmann::json::object();
  for (const auto& [name, v] : values) entry[name] = v;
  cache[key] = entry;
  try {
    fs::create_directories(fs::path(path).parent_path());
    write_file_atomically(path, cache.dump(2) + "\n");
    return "kept in " + path;
  } catch (const std::exception& e) {
    return std::string("not kept: ") + e.what();
  }
}

}  // namespace ag::train
