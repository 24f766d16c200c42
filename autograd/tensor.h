// Tensor: a cheap handle (shared_ptr) to a TensorImpl, which is a strided view on a Storage.
// Copying a Tensor copies the handle, not the data; every handle of one tensor shares one
// graph node (grad_fn). Views (reshape of a contiguous tensor, narrow, transpose, permute)
// share storage. Layout is row-major; strides are in elements.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "autograd/dtype.h"
#include "autograd/errors.h"
#include "autograd/random.h"

namespace ag {

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  // "[2, 3]"
int64_t shape_numel(const Shape& s);
Shape contiguous_strides(const Shape& s);

// Bytes held by tensor storages in this process: now, and the most since the last reset.
struct MemoryStats {
  int64_t current_bytes = 0;
  int64_t peak_bytes = 0;
};
MemoryStats memory_stats();
void reset_peak_memory();  // peak := current

// Owns one 64-byte-aligned buffer, or borrows memory another owner keeps alive.
struct Storage {
  explicit Storage(size_t nbytes);
  // Memory owned elsewhere (a NumPy array, a DLPack producer), shared without a copy: `release`
  // runs once the last tensor on it is gone. Not counted in memory_stats().
  Storage(void* external, size_t nbytes, std::function<void()> release);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data = nullptr;
  size_t nbytes = 0;
  std::function<void()> release_external;  // set for borrowed memory only
  // Bumped by every in-place write through the public API (fill_, copy_, bump_version()); a
  // backward function's saved tensors compare it with the version they saw (engine.h).
  uint64_t version = 0;
};

struct Node;
struct NodeHooks;  // engine.h: a graph node's pre- and post-hooks (torch's grad_fn.register_prehook/register_hook)
class Tensor;
struct BackwardOptions;  // below the class

// Hooks (engine.h explains when they run). A GradHook returns a replacement gradient, or an
// undefined Tensor to keep the one it was given.
using GradHook = std::function<Tensor(const Tensor& grad)>;
using PostAccumulateGradHook = std::function<void(const Tensor& leaf)>;
template <class F> struct HookList {
  std::vector<std::pair<uint64_t, F>> entries;
  uint64_t next_id = 0;
};

// Returned by register_hook(): remove() unregisters the hook (idempotent; harmless once the
// tensor is gone).
class HookHandle {
 public:
  HookHandle() = default;
  explicit HookHandle(std::function<void()> remover) : remover_(std::move(remover)) {}
  void remove() {
    if (remover_) remover_();
    remover_ = nullptr;
  }

 private:
  std::function<void()> remover_;
};

// enable_shared_from_this: a front end that wraps TensorImpls (the Python package) gets back
// the owning shared_ptr of an impl it was handed, so that use counts and weak references
// (retain_grad) stay those of the one owner.
struct TensorImpl : std::enable_shared_from_this<TensorImpl> {
  std::shared_ptr<Storage> storage;
  int64_t offset = 0;  // in elements
  Shape shape;
  Shape strides;  // in elements
  DType dtype = DType::Float32;

  bool requires_grad = false;
  std::shared_ptr<TensorImpl> grad;  // accumulated gradient of a leaf
  std::shared_ptr<Node> grad_fn;     // the op that made this tensor (null for leaves)
  std::string name;                  // optional label, e.g. a parameter's dotted name
  // Leaves only (an intermediate's hooks live on its grad_fn node).
  std::shared_ptr<HookList<GradHook>> hooks;
  std::shared_ptr<HookList<PostAccumulateGradHook>> post_accumulate_hooks;
  // The hooks of torch's AccumulateGrad node for this leaf (attograd accumulates without a node).
  std::shared_ptr<NodeHooks> accumulate_grad_hooks;

  // Views, as torch's: the tensor a view was made from (its _base: never a view itself; detach()
  // makes none), and that base's history_epoch when this view's grad_fn was last derived. A
  // recorded in-place op on a base or on any view of it gives the base a new history and bumps
  // its epoch; a view whose epoch is behind then takes its grad_fn afresh from the base
  // (autograd/tensor_inplace.cpp), so that no view keeps a history its base no longer has.
  std::shared_ptr<TensorImpl> view_base;
  uint64_t view_epoch = 0;
  uint64_t history_epoch = 0;
};

struct TensorIndex;  // autograd/indexing.h

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}
  // Copying a Tensor copies the handle. Assigning to a named Tensor rebinds it; assigning to a
  // temporary view writes into it, as libtorch's: x[0] = 5, x.index({Slice(1, 3)}) = y.
  Tensor(const Tensor&) = default;
  Tensor(Tensor&&) noexcept = default;
  ~Tensor() = default;
  Tensor& operator=(const Tensor&) & = default;
  Tensor& operator=(Tensor&&) & noexcept = default;
  Tensor& operator=(const Tensor& src) &&;  // copy_(src), src broadcast to this shape
  Tensor& operator=(double value) &&;       // fill_(value)

  // ---- factories (contiguous, fresh storage) --------------------------------------------
  static Tensor empty(const Shape& shape, DType dtype = DType::Float32);
  static Tensor zeros(const Shape& shape, DType dtype = DType::Float32);
  static Tensor ones(const Shape& shape, DType dtype = DType::Float32);
  static Tensor full(const Shape& shape, double value, DType dtype = DType::Float32);
  static Tensor scalar(double value, DType dtype = DType::Float32);  // 0-d
  static Tensor arange(int64_t n, DType dtype = DType::Int64);
  // Values in row-major order; their count must equal the shape's.
  static Tensor from_vector(const std::vector<double>& values, const Shape& shape, DType dtype = DType::Float32);
  static Tensor from_vector(const std::vector<float>& values, const Shape& shape);
  static Tensor from_vector(const std::vector<int64_t>& values, const Shape& shape);
  static Tensor from_vector(const std::vector<bool>& values, const Shape& shape);
  // Nested literal for 2-d tensors in tests and examples: Tensor::matrix({{1, 0}, {0, 1}}).
  // (Any rank and dtype: ag::tensor({{1, 2}, {3, 4}}), autograd/tensor_data.h.)
  static Tensor matrix(std::initializer_list<std::initializer_list<double>> rows, DType dtype = DType::Float32);
  static Tensor randn(const Shape& shape, DType dtype = DType::Float32, Generator& gen = default_generator(),
                      double mean = 0.0, double std = 1.0);
  static Tensor rand(const Shape& shape, DType dtype = DType::Float32, Generator& gen = default_generator(),
                     double lo = 0.0, double hi = 1.0);
  static Tensor randint(int64_t lo, int64_t hi, const Shape& shape, Generator& gen = default_generator());

  // ---- metadata ---------------------------------------------------------------------------
  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const { return impl().shape; }
  const Shape& strides() const { return impl().strides; }
  int64_t dim() const { return static_cast<int64_t>(impl().shape.size()); }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t numel() const { return shape_numel(impl().shape); }
  DType dtype() const { return impl().dtype; }
  bool is_contiguous() const;
  const std::string& name() const { return impl().name; }
  const Tensor& set_name(std::string n) const {  // a label on the tensor, not on this handle
    impl().name = std::move(n);
    return *this;
  }

  // ---- data access --------------------------------------------------------------------------
  // Pointer to the first element of this view; T must match dtype (checked).
  template <class T> T* data() const;
  void* raw_data() const;
  double item() const;                          // one-element tensors
  template <class T> T item() const { return static_cast<T>(item()); }  // libtorch's item<float>()
  double at(const std::vector<int64_t>& index) const;  // any dtype, read as double
  std::vector<double> to_double_vector() const;  // row-major copy of the values
  template <class T> std::vector<T> to_vector() const;
  Tensor contiguous() const;  // this tensor if already contiguous, else a copy (differentiable)
  Tensor clone() const;       // always a fresh contiguous copy (differentiable)
  Tensor to(DType dtype) const;  // conversion (differentiable between float dtypes)
  // In-place writes, as torch's (autograd/tensor_inplace.cpp). Each bumps the version of the
  // storage once. A tensor is a handle, so they are const, as libtorch's. The other operand is
  // broadcast to this tensor's shape and the result cast to its dtype (a float result into an
  // integer tensor throws torch's message). Outside grad mode, or when neither operand
  // requires grad, they only write. Otherwise they are recorded and this tensor takes the new
  // history, as torch's: its grad_fn becomes the op's node (for a view, its base's history is
  // rewritten and the view derives its own from it); hooks registered before stay with the
  // old history, retain_grad() moves along. A leaf that requires grad, or a view of one, throws
  // torch's "a leaf Variable that requires grad is being used in an in-place operation."; use
  // NoGradGuard (optimizers and initialisers do).
  const Tensor& fill_(double value) const;
  const Tensor& zero_() const { return fill_(0.0); }
  const Tensor& copy_(const Tensor& src) const;  // src broadcast to this shape; converts dtype
  const Tensor& add_(const Tensor& other, double alpha = 1.0) const;  // this += alpha·other
  const Tensor& add_(double other, double alpha = 1.0) const;
  const Tensor& sub_(const Tensor& other, double alpha = 1.0) const;  // this -= alpha·other
  const Tensor& sub_(double other, double alpha = 1.0) const;
  const Tensor& mul_(const Tensor& other) const;
  const Tensor& mul_(double other) const;
  const Tensor& div_(const Tensor& other) const;  // true division, as torch's
  const Tensor& div_(double other) const;
  // The version of this tensor's storage (torch's _version()), and a bump for code that writes
  // through data<T>().
  uint64_t version() const { return impl().storage->version; }
  int64_t _version() const { return static_cast<int64_t>(version()); }
  void bump_version() const { ++impl().storage->version; }

  // ---- indexing, as libtorch's (autograd/indexing.h) ---------------------------------------
  // x[i] is the view x.select(0, i); x.index({Slice(0, 2), 1}) a view for integers, slices,
  // None and Ellipsis (a copy with an int64 index tensor); x.index_put_({...}, v) writes v
  // (a tensor broadcast to the indexed shape, or a number) there, in place, as above.
  Tensor operator[](int64_t index) const;
  Tensor select(int64_t dim, int64_t index) const;
  Tensor index(std::initializer_list<TensorIndex> indices) const;
  Tensor index(const std::vector<TensorIndex>& indices) const;
  const Tensor& index_put_(std::initializer_list<TensorIndex> indices, const Tensor& value) const;
  const Tensor& index_put_(std::initializer_list<TensorIndex> indices, double value) const;
  const Tensor& index_put_(const std::vector<TensorIndex>& indices, const Tensor& value) const;
  const Tensor& index_put_(const std::vector<TensorIndex>& indices, double value) const;

  // ---- autograd -----------------------------------------------------------------------------
  bool requires_grad() const {
    sync_view();
    return impl().requires_grad;
  }
  // Sets requires_grad of a leaf (of a floating dtype). A non-leaf already requires grad:
  // asking for true is a no-op, false throws torch's message. Const: a tensor is a handle.
  const Tensor& requires_grad_(bool on = true) const;
  bool is_leaf() const {
    sync_view();
    return impl().grad_fn == nullptr;
  }
  Tensor grad() const;  // undefined until a backward reached this leaf
  void zero_grad();     // drops the accumulated gradient
  void set_grad(const Tensor& g);
  Tensor detach() const;  // shares storage, no history
  const std::shared_ptr<Node>& grad_fn() const {
    sync_view();
    return impl().grad_fn;
  }
  bool is_view() const { return impl().view_base != nullptr; }
  Tensor _base() const { return Tensor(impl().view_base); }  // undefined unless a view
  // Backpropagates from this tensor into the leaves' .grad (torch's Tensor.backward). With no
  // gradient it must hold one element (gradient 1). Options by name, as torch's keywords:
  //   loss.backward({}, {.retain_graph = true});
  //   loss.backward({}, {.create_graph = true});     // .grad can be differentiated again
  //   loss.backward({}, {.inputs = {w}});            // accumulate into w.grad only
  // See autograd/engine.h.
  void backward(const Tensor& grad_output = Tensor()) const;
  void backward(const Tensor& grad_output, const BackwardOptions& options) const;
  // fn(grad) sees this tensor's gradient in each backward pass and may return a replacement
  // (or an undefined Tensor: keep it); a hook that returns nothing only observes, as libtorch's.
  HookHandle register_hook(GradHook fn) const;
  template <class F>
    requires std::is_void_v<std::invoke_result_t<F&, const Tensor&>>
  HookHandle register_hook(F fn) const {
    return register_hook(GradHook([fn = std::move(fn)](const Tensor& g) mutable {
      fn(g);
      return Tensor();
    }));
  }
  // Leaves only: fn(*this) runs once this backward pass has accumulated into .grad.
  HookHandle register_post_accumulate_grad_hook(PostAccumulateGradHook fn) const;
  // An intermediate tensor keeps its gradient in .grad() (no-op on a leaf).
  void retain_grad() const;
  bool retains_grad() const;

  // ---- ops as methods, spelled as PyTorch's ------------------------------------------------------
  // Each forwards to the op of autograd/ops.h of the same name (autograd/tensor_methods.cpp),
  // e.g. x.sum({0}, /*keepdim=*/true) is sum(x, {0}, true). Dims may be negative.
  Tensor sum() const;
  Tensor sum(const std::vector<int64_t>& dim, bool keepdim = false) const;
  Tensor mean() const;
  Tensor mean(const std::vector<int64_t>& dim, bool keepdim = false) const;
  Tensor var(const std::vector<int64_t>& dim = {}, double correction = 1.0, bool keepdim = false) const;
  Tensor amax(const std::vector<int64_t>& dim = {}, bool keepdim = false) const;
  Tensor amin(const std::vector<int64_t>& dim = {}, bool keepdim = false) const;
  Tensor max() const;  // 0-d, over all elements; tied elements share the gradient (as amax)
  Tensor min() const;
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;  // (values, int64 indices)
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  Tensor argmax(int64_t dim, bool keepdim = false) const;
  Tensor argmin(int64_t dim, bool keepdim = false) const;
  Tensor norm(double p = 2.0, const std::vector<int64_t>& dim = {}, bool keepdim = false) const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor abs() const;
  Tensor neg() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor pow(double exponent) const;
  Tensor add(const Tensor& other, double alpha = 1.0) const;  // this + alpha·other
  Tensor add(double other) const;
  Tensor sub(const Tensor& other, double alpha = 1.0) const;  // this − alpha·other
  Tensor sub(double other) const;
  Tensor mul(const Tensor& other) const;
  Tensor mul(double other) const;
  Tensor div(const Tensor& other) const;
  Tensor div(double other) const;
  bool equal(const Tensor& other) const;  // ag::equal
  bool allclose(const Tensor& other, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) const;
  Tensor clamp(std::optional<double> min, std::optional<double> max = std::nullopt) const;
  Tensor softmax(int64_t dim) const;
  Tensor log_softmax(int64_t dim) const;
  Tensor matmul(const Tensor& other) const;
  Tensor t() const;  // transpose of a 2-d tensor; a 0-d or 1-d tensor itself
  Tensor transpose(int64_t dim0, int64_t dim1) const;
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor view(const Shape& shape) const;
  Tensor reshape(const Shape& shape) const;
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze() const;  // every dim of size 1
  Tensor squeeze(int64_t dim) const;
  Tensor flip(const std::vector<int64_t>& dims) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;

  // ---- printing -------------------------------------------------------------------------------
  std::string to_string(int precision = 4) const;

  TensorImpl& impl() const {
    if (!impl_) throw std::logic_error("attograd: use of an undefined Tensor");
    return *impl_;
  }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  bool same(const Tensor& o) const { return impl_ == o.impl_; }

 private:
  // A view whose base took a new history since (an in-place op) derives its grad_fn again.
  void sync_view() const {
    const TensorImpl& i = impl();
    if (i.view_base && i.view_epoch != i.view_base->history_epoch) refresh_view_history();
  }
  void refresh_view_history() const;  // autograd/tensor_inplace.cpp

  std::shared_ptr<TensorImpl> impl_;
};

// Tensor::backward's keyword arguments, in torch's order and with torch's defaults.
// (Every field has an initializer, `{}` at least: for a field without one, GCC before 14 warns
// -Wmissing-field-initializers at each designated initializer that omits it, GCC bug 96868.)
// A list of tensors that knows whether it was given at all, for backward's `inputs` (torch's
// Optional[Sequence[Tensor]]): {.inputs = {w, b}} gives it; leaving it out, or {}, does not;
// std::vector<Tensor>{} gives an empty list, which torch refuses.
class OptionalTensorList {
 public:
  OptionalTensorList() = default;
  OptionalTensorList(std::initializer_list<Tensor> tensors) : given_(true), tensors_(tensors) {}
  OptionalTensorList(std::vector<Tensor> tensors) : given_(true), tensors_(std::move(tensors)) {}
  bool has_value() const { return given_; }
  const std::vector<Tensor>& value() const { return tensors_; }

 private:
  bool given_ = false;
  std::vector<Tensor> tensors_;
};

struct BackwardOptions {
  std::optional<bool> retain_graph{};  // keep the graph for another backward; default: create_graph
  bool create_graph = false;           // record the backward pass (higher-order gradients)
  OptionalTensorList inputs{};         // accumulate only into these tensors' .grad (not given: all leaves)
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Shapes and dtypes in error messages: "float32[2, 3]".
std::string describe(const Tensor& t);

// dim in [-ndim, ndim) -> [0, ndim). Throws IndexError (a std::invalid_argument) naming the op and `t`.
// Ops that accept a dim on a 0-d tensor (reductions, as PyTorch) pass ndim = max(dim(), 1);
// unsqueeze and stack, which make a new dim, pass dim() + 1.
inline int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op, const Tensor& t) {
  const int64_t w = dim < 0 ? dim + ndim : dim;
  if (w < 0 || w >= ndim)
    throw IndexError(std::string(op) + ": dim " + std::to_string(dim) + " out of range for " + describe(t) +
                                " (valid: " + std::to_string(-ndim) + " to " + std::to_string(ndim - 1) + ")");
  return w;
}

// Builds a view on t's storage (no copy, no autograd). Used by the view ops.
Tensor make_view(const Tensor& t, const Shape& shape, const Shape& strides, int64_t offset);
// A fresh contiguous copy of src's values as `dtype`, without autograd (clone, to and copy_
// copy through it).
Tensor copy_to_contiguous(const Tensor& src, DType dtype);
// The values alone, written into dst's elements (any layout), without autograd and without a
// version bump: for code that makes a tensor, and for the in-place ops, which bump once.
void fill_values(const Tensor& dst, double value);
void write_values(const Tensor& dst, const Tensor& src);  // same shape; converts dtype
// torch's refusal of an in-place write in grad mode to a leaf that requires grad, or to a view
// of one (std::runtime_error with torch's message); nothing otherwise.
void check_writable_in_grad_mode(const Tensor& t);

// The name of the op behind a node ("matmul"); the engine, which defines Node, provides it, so
// that this layer can name a tensor's history without depending on the engine.
const std::string& op_name(const Node& node);

template <class T> T* Tensor::data() const {
  if (dtype_of<T> != dtype())
    throw std::invalid_argument(std::string("Tensor::data: asked for ") + dtype_name(dtype_of<T>) + " but tensor is " + describe(*this));
  return static_cast<T*>(impl().storage->data) + impl().offset;
}

}  // namespace ag
