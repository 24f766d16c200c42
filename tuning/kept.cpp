#include "tuning/kept.h"

#include <ctime>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "autograd/kernels/gemm_provider.h"
#include "autograd/kernels/onednn.h"
#include "autograd/kernels/openblas_core.h"
#include "base/atomic_file.h"

namespace ag::tuning {

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

std::string kept_path() {
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
  const std::string path = kept_path();
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
  const std::string path = kept_path();
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

}  // namespace ag::tuning
