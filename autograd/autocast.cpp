#include "autograd/autocast.h"

#include <memory>
#include <vector>

#include "autograd/kernels/bf16_matrix.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/gemm_provider.h"
#include "autograd/tensor.h"

namespace ag {

namespace {
thread_local Precision t_precision = Precision::FP32;

// The region's weights: a model has a few dozen, so a list searched in order will do.
struct CachedWeight {
  Tensor source;  // held, so that no other tensor gets its address while the copy is kept
  const float* data;
  int64_t rows, cols;
  uint64_t version;
  std::unique_ptr<kernels::Bf16Matrix> rounded;
};
thread_local std::vector<CachedWeight> t_weights;
}  // namespace

const kernels::Bf16Matrix* autocast_weight(const Tensor& w) {
  if (t_precision != Precision::BF16 || !w.defined() || w.dtype() != DType::Float32 || w.dim() != 2 || !w.is_contiguous())
    return nullptr;
  const float* data = w.data<float>();
  const int64_t rows = w.size(0), cols = w.size(1);
  const bool native = kernels::bf16_path(kernels::gemm_provider()) == kernels::Bf16Path::Native;
  // Found by its data: a backward's saved copy of the weight (detached, the same storage) finds
  // the forward's entry. The entry holds that storage, so the address is no other tensor's.
  for (auto it = t_weights.begin(); it != t_weights.end(); ++it) {
    if (it->data != data || it->rows != rows || it->cols != cols) continue;
    if (it->version == w.version() && it->rounded->native() == native) return it->rounded.get();
    t_weights.erase(it);  // written since, or another path: rounded again below
    break;
  }
  if (!w.is_leaf() || !w.requires_grad()) return nullptr;  // only weights are kept
  auto rounded = std::make_unique<kernels::Bf16Matrix>();
  kernels::round_rows_parallel(*rounded, data, rows, cols, cols);  // for the current provider's path (`native`)
  t_weights.push_back({w, data, rows, cols, w.version(), std::move(rounded)});
  return t_weights.back().rounded.get();
}

void clear_autocast_cache() { t_weights.clear(); }

const char* precision_name(Precision p) { return p == Precision::BF16 ? "bf16" : "fp32"; }

Precision autocast_precision() { return t_precision; }
bool is_autocast_enabled() { return t_precision == Precision::BF16; }

// A region begins and ends where the precision turns to or from BF16: the weights it rounded
// are dropped at both ends (between regions the optimizer writes them).
AutocastGuard::AutocastGuard(Precision p) : prev_(t_precision) {
  if (p == Precision::BF16 && prev_ != Precision::BF16) clear_autocast_cache();
  t_precision = p;
}
AutocastGuard::~AutocastGuard() {
  if (t_precision == Precision::BF16 && prev_ != Precision::BF16) clear_autocast_cache();
  t_precision = prev_;
}

void detail::set_autocast_precision(Precision p) { t_precision = p; }

}  // namespace ag
