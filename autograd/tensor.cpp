#include "autograd/tensor.h"

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <new>
#include <ostream>
#include <sstream>

#include "autograd/buffer_cache.h"
#include "autograd/errors.h"
#include "autograd/for_each_row.h"
#include "autograd/grad_mode.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/random_ops.h"
#include "base/memory_limit.h"

namespace ag {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::Int64: return "int64";
    case DType::Bool: return "bool";
  }
  return "?";
}

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Checked: a shape whose element count does not fit int64 is refused wherever a tensor or a view
// gets it (Tensor::empty, make_view), with torch's messages, instead of wrapping into a small count.
int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n))
      throw std::overflow_error("numel: integer multiplication overflow (sizes=" + shape_str(s) + ")");
  return n;
}

Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    // (0, 2^62, 2^62) has no elements, but its first stride would be 2^124: torch refuses it too.
    if (__builtin_mul_overflow(acc, s[i], &acc))
      throw std::overflow_error("Stride calculation overflowed (sizes=" + shape_str(s) + ")");
  }
  return st;
}

std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined";
  return std::string(dtype_name(t.dtype())) + shape_str(t.shape());
}

namespace {
std::atomic<int64_t> g_current_bytes{0}, g_peak_bytes{0};
}

MemoryStats memory_stats() { return {g_current_bytes.load(), g_peak_bytes.load()}; }
void reset_peak_memory() { g_peak_bytes = g_current_bytes.load(); }

namespace {
// The bytes of a new tensor of `shape`: the one size computation every tensor's own memory goes
// through (Tensor::empty, which every factory and op output calls), with torch's checks and
// messages. A count that does not fit int64 bytes is refused here, before any allocation.
size_t storage_bytes(const Shape& shape, DType dtype) {
  for (int64_t d : shape)
    if (d < 0)
      throw std::invalid_argument("Trying to create tensor with negative dimension " + std::to_string(d) + ": " +
                                  shape_str(shape));
  int64_t n = 1;
  bool overflow = false;
  for (int64_t d : shape) overflow |= __builtin_mul_overflow(n, d, &n);
  int64_t bytes = 0;
  if (overflow || __builtin_mul_overflow(n, static_cast<int64_t>(dtype_size(dtype)), &bytes) ||
      bytes > INT64_MAX - 63)  // Storage rounds up to 64 bytes
    throw std::overflow_error("Storage size calculation overflowed with sizes=" + shape_str(shape));
  return static_cast<size_t>(bytes);
}

// More memory than the process may ever have (physical memory, cgroup, ulimit -v) is refused up
// front: with a cgroup limit the allocation itself would succeed and the first touch of its pages
// kill the process. Smaller requests go to the allocator, whose failure is reported alike.
void* allocate_or_refuse(size_t bytes) {
  const auto refuse = [&](const std::string& more) {
    return OutOfMemoryError("can't allocate memory: you tried to allocate " + std::to_string(bytes) + " bytes (" +
                            human_bytes(static_cast<int64_t>(bytes)) + ")" + more);
  };
  if (bytes >= (size_t(1) << 30)) {
    static const MemoryLimit limit = memory_limit();  // read once: it does not change while a process runs
    if (static_cast<int64_t>(bytes) > limit.bytes)
      throw refuse(", more than the " + human_bytes(limit.bytes) + " of " + limit.where);
  }
  try {
    return buffer_cache::allocate(bytes);
  } catch (const std::bad_alloc&) {
    throw refuse("");
  }
}
}  // namespace

Storage::Storage(size_t n) : nbytes(n) {
  // 64-byte alignment suits AVX-512 loads and BLAS; round the size up as aligned_alloc needs.
  const size_t bytes = ((n + 63) / 64) * 64;
  data = bytes ? allocate_or_refuse(bytes) : nullptr;
  const int64_t now = g_current_bytes += static_cast<int64_t>(nbytes);
  for (int64_t peak = g_peak_bytes.load(); now > peak && !g_peak_bytes.compare_exchange_weak(peak, now);) {
  }
}
Storage::Storage(void* external, size_t n, std::function<void()> release)
    : data(external), nbytes(n), release_external(std::move(release)) {}
Storage::~Storage() {
  if (release_external) {
    release_external();
    return;
  }
  buffer_cache::release(data, ((nbytes + 63) / 64) * 64);
  g_current_bytes -= static_cast<int64_t>(nbytes);
}

// ---- factories -------------------------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = std::make_shared<Storage>(storage_bytes(shape, dtype));
  impl->shape = shape;
  impl->strides = contiguous_strides(shape);
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  if (t.impl().storage->nbytes) std::memset(t.raw_data(), 0, t.impl().storage->nbytes);
  return t;
}

Tensor Tensor::ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  Tensor t = empty(shape, dtype);
  fill_values(t, value);  // a new tensor starts at version 0, as torch's
  return t;
}

Tensor Tensor::scalar(double value, DType dtype) { return full({}, value, dtype); }

Tensor Tensor::arange(int64_t n, DType dtype) {
  Tensor t = empty({n}, dtype);
  AG_DISPATCH_ALL(dtype, "arange", [&] {
    scalar_t* p = t.data<scalar_t>();
    for (int64_t i = 0; i < n; ++i) p[i] = static_cast<scalar_t>(i);
  });
  return t;
}

Tensor Tensor::from_vector(const std::vector<double>& values, const Shape& shape, DType dtype) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    throw std::invalid_argument("Tensor::from_vector: " + std::to_string(values.size()) + " values for shape " + shape_str(shape));
  Tensor t = empty(shape, dtype);
  AG_DISPATCH_ALL(dtype, "from_vector", [&] {
    scalar_t* p = t.data<scalar_t>();
    for (size_t i = 0; i < values.size(); ++i) p[i] = static_cast<scalar_t>(values[i]);
  });
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& values, const Shape& shape) {
  return from_vector(std::vector<double>(values.begin(), values.end()), shape, DType::Float32);
}

Tensor Tensor::from_vector(const std::vector<int64_t>& values, const Shape& shape) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    throw std::invalid_argument("Tensor::from_vector: " + std::to_string(values.size()) + " values for shape " + shape_str(shape));
  Tensor t = empty(shape, DType::Int64);
  if (!values.empty()) std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

Tensor Tensor::from_vector(const std::vector<bool>& values, const Shape& shape) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    throw std::invalid_argument("Tensor::from_vector: " + std::to_string(values.size()) + " values for shape " + shape_str(shape));
  Tensor t = empty(shape, DType::Bool);
  bool* p = t.data<bool>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}

Tensor Tensor::matrix(std::initializer_list<std::initializer_list<double>> rows, DType dtype) {
  std::vector<double> v;
  const int64_t r = static_cast<int64_t>(rows.size());
  const int64_t c = r ? static_cast<int64_t>(rows.begin()->size()) : 0;
  for (const auto& row : rows) {
    if (static_cast<int64_t>(row.size()) != c) throw std::invalid_argument("Tensor::matrix: ragged rows");
    v.insert(v.end(), row.begin(), row.end());
  }
  return from_vector(v, {r, c}, dtype);
}

// The factories draw as the in-place draws of random_ops.h do (torch.randn is empty().normal_()).
Tensor Tensor::randn(const Shape& shape, DType dtype, Generator& gen, double mean, double std) {
  if (!is_floating(dtype)) throw std::invalid_argument("Tensor::randn: dtype must be floating, got " + std::string(dtype_name(dtype)));
  Tensor t = empty(shape, dtype);
  normal_(t, mean, std, gen);
  return t;
}

Tensor Tensor::rand(const Shape& shape, DType dtype, Generator& gen, double lo, double hi) {
  if (!is_floating(dtype)) throw std::invalid_argument("Tensor::rand: dtype must be floating, got " + std::string(dtype_name(dtype)));
  Tensor t = empty(shape, dtype);
  uniform_(t, lo, hi, gen);
  return t;
}

Tensor Tensor::randint(int64_t lo, int64_t hi, const Shape& shape, Generator& gen) {
  Tensor t = empty(shape, DType::Int64);
  random_(t, lo, hi, gen);
  return t;
}

// ---- metadata and data access --------------------------------------------------------------------

int64_t Tensor::size(int64_t d) const {
  return impl().shape[wrap_dim(d, dim(), "Tensor::size", *this)];
}

bool Tensor::is_contiguous() const {
  const auto& s = impl().shape;
  const auto& st = impl().strides;
  int64_t expect = 1;
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != 1 && st[i] != expect) return false;
    expect *= s[i];
  }
  return true;
}

void* Tensor::raw_data() const {
  return static_cast<char*>(impl().storage->data) + impl().offset * static_cast<int64_t>(dtype_size(dtype()));
}

std::vector<double> Tensor::to_double_vector() const {
  Tensor c = detach().contiguous();
  std::vector<double> out(static_cast<size_t>(c.numel()));
  AG_DISPATCH_ALL(c.dtype(), "to_double_vector", [&] {
    const scalar_t* p = c.data<scalar_t>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(p[i]);
  });
  return out;
}

template <class T> std::vector<T> Tensor::to_vector() const {
  Tensor c = detach().contiguous();
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;

double Tensor::item() const {
  if (numel() != 1) throw std::invalid_argument("Tensor::item: needs exactly one element, got " + describe(*this));
  return to_double_vector()[0];
}

double Tensor::at(const std::vector<int64_t>& index) const {
  if (static_cast<int64_t>(index.size()) != dim()) throw std::invalid_argument("Tensor::at: index rank mismatch for " + describe(*this));
  int64_t off = impl().offset;
  for (size_t i = 0; i < index.size(); ++i) {
    if (index[i] < 0 || index[i] >= impl().shape[i]) throw std::out_of_range("Tensor::at: index out of range for " + describe(*this));
    off += index[i] * impl().strides[i];
  }
  double v = 0;
  AG_DISPATCH_ALL(dtype(), "at", [&] { v = static_cast<double>(static_cast<const scalar_t*>(impl().storage->data)[off]); });
  return v;
}

Tensor make_view(const Tensor& t, const Shape& shape, const Shape& strides, int64_t offset) {
  (void)shape_numel(shape);  // a view's element count fits int64 too (expand(2^32, 2^32) is refused)
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = t.impl().storage;
  impl->offset = offset;
  impl->shape = shape;
  impl->strides = strides;
  impl->dtype = t.dtype();
  // Its base is t's base when t is a view itself: views of views share one base, as torch's.
  impl->view_base = t.impl().view_base ? t.impl().view_base : t.impl_ptr();
  impl->view_epoch = impl->view_base->history_epoch;
  return Tensor(std::move(impl));
}

// Strided copy of src into contiguous dst (same numel), converting types, one innermost row
// of the source at a time (for_each_row: no division per element).
template <class S, class D>
static void strided_copy(const Tensor& src, D* dst) {
  if (src.numel() == 0) return;
  const S* base = static_cast<const S*>(src.impl().storage->data);
  if (src.dim() == 0) {
    dst[0] = static_cast<D>(base[src.impl().offset]);
    return;
  }
  const int64_t inner = src.shape().back(), inner_st = src.strides().back();
  for_each_row<1>(src.shape(), {src.strides().data()}, {src.impl().offset},
                  [&](int64_t r, const std::array<int64_t, 1>& off) {
                    D* out = dst + r * inner;
                    for (int64_t j = 0; j < inner; ++j) out[j] = static_cast<D>(base[off[0] + j * inner_st]);
                  });
}

Tensor copy_to_contiguous(const Tensor& src, DType to) {
  Tensor out = Tensor::empty(src.shape(), to);
  if (src.is_contiguous() && src.dtype() == to) {
    if (out.numel()) std::memcpy(out.raw_data(), src.raw_data(), static_cast<size_t>(out.numel()) * dtype_size(to));
    return out;
  }
  AG_DISPATCH_ALL(src.dtype(), "copy", [&] {
    using S = scalar_t;
    AG_DISPATCH_ALL(to, "copy", [&] { strided_copy<S, scalar_t>(src, out.data<scalar_t>()); });
  });
  return out;
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return clone();
}

void fill_values(const Tensor& dst, double value) {
  if (dst.numel() == 0) return;
  AG_DISPATCH_ALL(dst.dtype(), "fill_", [&] {
    const scalar_t v = static_cast<scalar_t>(value);
    scalar_t* base = static_cast<scalar_t*>(dst.impl().storage->data);
    if (dst.is_contiguous()) {
      scalar_t* p = base + dst.impl().offset;
      for (int64_t i = 0, n = dst.numel(); i < n; ++i) p[i] = v;
      return;
    }
    if (dst.dim() == 0) {
      base[dst.impl().offset] = v;
      return;
    }
    const int64_t inner = dst.shape().back(), inner_st = dst.strides().back();
    for_each_row<1>(dst.shape(), {dst.strides().data()}, {dst.impl().offset}, [&](int64_t, const std::array<int64_t, 1>& off) {
      for (int64_t j = 0; j < inner; ++j) base[off[0] + j * inner_st] = v;
    });
  });
}

void write_values(const Tensor& dst, const Tensor& src) {
  if (src.shape() != dst.shape())
    throw std::invalid_argument("Tensor::copy_: shape mismatch, destination " + describe(dst) + ", source " + describe(src));
  Tensor c = copy_to_contiguous(src, dst.dtype());
  if (dst.numel() == 0) return;
  if (dst.is_contiguous()) {
    std::memcpy(dst.raw_data(), c.raw_data(), static_cast<size_t>(dst.numel()) * dtype_size(dst.dtype()));
    return;
  }
  if (dst.dim() == 0) {
    std::memcpy(dst.raw_data(), c.raw_data(), dtype_size(dst.dtype()));
    return;
  }
  // Strided destination (a view such as a narrow): walk it row by row.
  const int64_t inner = dst.shape().back(), inner_st = dst.strides().back(), esz = static_cast<int64_t>(dtype_size(dst.dtype()));
  char* base = static_cast<char*>(dst.impl().storage->data);
  const char* from = static_cast<const char*>(c.raw_data());
  for_each_row<1>(dst.shape(), {dst.strides().data()}, {dst.impl().offset}, [&](int64_t r, const std::array<int64_t, 1>& off) {
    const int64_t i = r * inner;
    if (inner_st == 1) {
      std::memcpy(base + off[0] * esz, from + i * esz, static_cast<size_t>(inner * esz));
    } else {
      for (int64_t j = 0; j < inner; ++j) std::memcpy(base + (off[0] + j * inner_st) * esz, from + (i + j) * esz, esz);
    }
  });
}

// ---- autograd ------------------------------------------------------------------------------------

// torch's messages (VariableHooks::requires_grad_, TensorImpl::set_requires_grad).
const Tensor& Tensor::requires_grad_(bool on) const {
  if (!is_leaf()) {
    if (on) return *this;  // a non-leaf requires grad already
    throw std::invalid_argument(
        "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a "
        "subgraph that doesn't require differentiation use var_no_grad = var.detach().");
  }
  if (on && !is_floating(dtype()))
    throw std::invalid_argument("Only Tensors of floating point and complex dtype can require gradients (got " +
                                describe(*this) + ")");
  impl().requires_grad = on;
  return *this;
}

Tensor Tensor::grad() const { return impl().grad ? Tensor(impl().grad) : Tensor(); }

void Tensor::zero_grad() { impl().grad.reset(); }

void Tensor::set_grad(const Tensor& g) {
  if (g.defined() && g.shape() != shape())
    throw std::invalid_argument("set_grad: gradient " + describe(g) + " does not match " + describe(*this));
  impl().grad = g.defined() ? g.impl_ptr() : nullptr;
}

Tensor Tensor::detach() const {
  Tensor out = make_view(*this, shape(), strides(), impl().offset);
  out.impl().view_base = nullptr;  // shares the storage (and its version), not the history, as torch's
  return out;
}

// ---- printing ------------------------------------------------------------------------------------

static void print_rec(std::ostream& os, const std::vector<double>& v, const Shape& s, size_t d, int64_t& pos,
                      int precision, bool is_int, int indent) {
  if (d == s.size()) {
    if (is_int) os << static_cast<long long>(v[pos]);
    else os << std::setprecision(precision) << std::fixed << v[pos];
    ++pos;
    return;
  }
  os << "[";
  const int64_t n = s[d];
  const bool elide = n > 8;
  for (int64_t i = 0; i < n; ++i) {
    if (elide && i == 3) {
      // Skip the middle elements, keeping the last three.
      int64_t stride = 1;
      for (size_t k = d + 1; k < s.size(); ++k) stride *= s[k];
      pos += (n - 6) * stride;
      i = n - 3;
      os << (d + 1 == s.size() ? "..., " : "...,\n" + std::string(indent + 1, ' '));
    }
    print_rec(os, v, s, d + 1, pos, precision, is_int, indent + 1);
    if (i + 1 < n) os << (d + 1 == s.size() ? ", " : ",\n" + std::string(indent + 1, ' '));
  }
  os << "]";
}

std::string Tensor::to_string(int precision) const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream os;
  os << "Tensor(" << dtype_name(dtype()) << ", shape=" << shape_str(shape());
  if (requires_grad()) os << ", requires_grad";
  if (grad_fn()) os << ", grad_fn=" << op_name(*grad_fn());
  os << ")\n";
  const auto v = to_double_vector();
  int64_t pos = 0;
  const bool is_int = !is_floating(dtype());
  print_rec(os, v, shape(), 0, pos, precision, is_int, 0);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace ag
