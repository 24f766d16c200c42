// Rotary position embeddings (RoFormer, Su et al. 2021), in the half-split layout of GPT-NeoX
// and LLaMA: for x (..., T, D) the pair (x[i], x[i + D/2]) of row t turns by the angle
// (offset + t)·base^(−2i/D).
//
// rope is linear in x and orthogonal: its backward turns the gradient back by the same angles,
// which is rope again with inverse set. So the backward is this op itself, recorded under
// create_graph like any op, and every higher derivative follows with nothing more written.
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "autograd/engine.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/kernels/elementwise.h"
#include "autograd/kernels/rope.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"

namespace ag {

namespace {

// The cos and sin tables (kernels/rope.h; the PyTorch twin computes its own the same way), kept
// per (D, base, dtype) and grown when a later position is asked for, because the same tables
// serve every layer and step.
template <class T>
struct RopeTable {
  int64_t positions = 0;
  std::vector<T> cos, sin;  // (positions, D/2)
};

template <class T>
std::shared_ptr<const RopeTable<T>> rope_table(int64_t D, double base, int64_t positions) {
  static std::mutex mu;
  static std::map<std::pair<int64_t, double>, std::shared_ptr<const RopeTable<T>>> tables;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = tables[{D, base}];
  if (slot && slot->positions >= positions) return slot;
  auto t = std::make_shared<RopeTable<T>>();
  t->positions = std::max<int64_t>(positions, slot ? 2 * slot->positions : 0);  // grow geometrically
  kernels::rope_tables(D, base, t->positions, t->cos, t->sin);
  slot = t;
  return t;
}

}  // namespace

Tensor rope(const Tensor& x, int64_t offset, double base, bool inverse) {
  kernels::check_float(x, "rope");
  if (x.dim() < 2 || x.size(-1) % 2 != 0)
    throw std::invalid_argument("rope: needs x (..., T, D) with D even, got " + describe(x));
  if (offset < 0) throw std::invalid_argument("rope: offset must be >= 0, got " + std::to_string(offset));
  if (!(base > 0)) throw std::invalid_argument("rope: base must be positive, got " + std::to_string(base));
  const int64_t T = x.size(-2), D = x.size(-1), half = D / 2;
  const int64_t rows = T ? x.numel() / D : 0;  // (slices·T) rows of D
  const Tensor X = kernels::dense(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype());
  AG_DISPATCH_FLOAT(x.dtype(), "rope", [&] {
    const auto table = rope_table<scalar_t>(D, base, offset + T);
    const scalar_t* px = X.data<scalar_t>();
    scalar_t* py = y.data<scalar_t>();
    parallel::parallel_for(rows, std::max<int64_t>(1, kernels::kParallelGrain / std::max<int64_t>(D, 1)),
                           [&](int64_t r0, int64_t r1) {
                             for (int64_t r = r0; r < r1; ++r) {
                               const int64_t p = offset + r % T;  // this row's position
                               // y1 = x1·cos − x2·sin, y2 = x2·cos + x1·sin (sin negated to invert)
                               kernels::rope_row(px + r * D, py + r * D, D, table->cos.data() + p * half,
                                                 table->sin.data() + p * half, inverse);
                             }
                           });
  });
  if (should_record({&x}))
    record(y, "rope", {x}, [offset, base, inverse](const Tensor& g) {
      // y = R(θ)·x per pair, R a rotation  =>  dx = R(θ)ᵀ·g = R(−θ)·g: rope inverted
      return Grads{rope(g, offset, base, !inverse)};
    });
  return y;
}

}  // namespace ag
