#include "autograd/random_ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include "autograd/grad_mode.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/ops.h"
#include "autograd/torch_stream.h"

namespace ag {

namespace {

bool is_torch(const Generator& gen) { return gen.kind() == GeneratorKind::Torch; }

std::string num(double v) {  // as torch prints a double in its messages: 1, 0.5, 3e+38
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// torch's message for a dtype a kernel does not take (torch raises NotImplementedError, a
// RuntimeError).
[[noreturn]] void not_for_dtype(const char* kernel, DType d) {
  throw std::invalid_argument(std::string("\"") + kernel + "\" not implemented for '" + scalar_type_name(d) + "'");
}

// The dims of t from the outermost in memory to the innermost (strides descending, ties in
// order): the order in which torch's TensorIterator visits the elements of an output.
std::vector<int64_t> memory_order(const Tensor& t) {
  std::vector<int64_t> dims(static_cast<size_t>(t.dim()));
  std::iota(dims.begin(), dims.end(), 0);
  std::stable_sort(dims.begin(), dims.end(), [&](int64_t a, int64_t b) { return t.strides()[a] > t.strides()[b]; });
  return dims;
}

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inv;
}

// An in-place draw: draw(scalar_t* values, n, contiguous) writes t's n new values in torch's
// element order (`contiguous`: t itself is, which some of torch's kernels look at); they are
// then stored in t, as a recorded write in grad mode when t requires grad (torch's rules). A
// tensor read alongside (bernoulli_'s p) comes in the same order from in_draw_order.
template <class Draw>
const Tensor& draw_into(const Tensor& t, Draw draw) {
  if (!t.defined()) throw std::invalid_argument("in-place draw into an undefined Tensor");
  const bool recorded = GradMode::enabled() && t.requires_grad();
  if (recorded) check_writable_in_grad_mode(t);  // before anything is drawn, as torch
  const bool contiguous = t.is_contiguous();
  if (contiguous && !recorded) {
    AG_DISPATCH_ALL(t.dtype(), "draw", [&] { draw(t.data<scalar_t>(), t.numel(), true); });
    t.bump_version();
    return t;
  }
  const std::vector<int64_t> order = contiguous ? std::vector<int64_t>{} : memory_order(t);
  Shape shape = t.shape();
  if (!contiguous)
    for (size_t i = 0; i < order.size(); ++i) shape[i] = t.shape()[static_cast<size_t>(order[i])];
  Tensor values = Tensor::empty(shape, t.dtype());
  AG_DISPATCH_ALL(t.dtype(), "draw", [&] { draw(values.data<scalar_t>(), values.numel(), contiguous); });
  if (!contiguous) values = permute(values, inverse(order));
  t.copy_(values);
  return t;
}

// The values of `p` (broadcast to t's shape) in the order draw_into hands t's elements out.
Tensor in_draw_order(const Tensor& t, const Tensor& p) {
  Tensor b = p.shape() == t.shape() ? p : expand(p, t.shape());
  if (!t.is_contiguous()) b = permute(b, memory_order(t));
  return b.contiguous();
}

template <class T>
constexpr int64_t max_exact_int() {  // torch's bound for a dtype's random integers
  if constexpr (std::is_same_v<T, float>) return int64_t{1} << 24;
  else if constexpr (std::is_same_v<T, double>) return int64_t{1} << 53;
  else if constexpr (std::is_same_v<T, bool>) return 1;
  else return std::numeric_limits<int64_t>::max();
}

}  // namespace

// ---- uniform_, normal_, exponential_ -------------------------------------------------------------

const Tensor& uniform_(const Tensor& t, double from, double to, Generator& gen) {
  if (!is_floating(t.dtype())) not_for_dtype("check_uniform_bounds", t.dtype());
  if (!(from <= to))
    throw std::invalid_argument("uniform_ expects to return a [from, to) range, but found from=" + num(from) + " > to=" + num(to));
  const bool f32 = t.dtype() == DType::Float32;
  const double span_max = f32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  if (!(to - from <= span_max))
    throw std::invalid_argument(std::string("uniform_ expects to-from <= std::numeric_limits<") + (f32 ? "Float" : "Double") +
                                ">::max(), but found to=" + num(to) + " and from=" + num(from) +
                                " which result in to-from to exceed the limit");
  return draw_into(t, [&]<class T>(T* p, int64_t n, bool) {
    if constexpr (std::is_floating_point_v<T>) {
      if (is_torch(gen)) return torch_uniform_fill(p, n, from, to, gen.torch_stream());
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(gen.uniform(from, to));
    }
  });
}

const Tensor& normal_(const Tensor& t, double mean, double sd, Generator& gen) {
  if (!is_floating(t.dtype())) not_for_dtype("normal_kernel_cpu", t.dtype());
  if (!(sd >= 0.0)) throw std::invalid_argument("normal expects std >= 0.0, but found std " + num(sd));
  return draw_into(t, [&]<class T>(T* p, int64_t n, bool contiguous) {
    if constexpr (std::is_floating_point_v<T>) {
      if (!is_torch(gen)) {
        for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(mean + sd * gen.normal());
        return;
      }
      TorchStream& s = gen.torch_stream();
      if (contiguous && n >= 16) return torch_normal_fill(p, n, mean, sd, s);
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(torch_normal_value(mean, sd, s));
    }
  });
}

const Tensor& exponential_(const Tensor& t, double lambda, Generator& gen) {
  if (!is_floating(t.dtype()))
    throw std::invalid_argument(std::string("Exponential distribution is a continuous probability distribution. dtype must be a "
                                            "floating point but you specified ") + scalar_type_name(t.dtype()));
  if (!(lambda > 0.0)) throw std::invalid_argument("exponential_ expects lambda > 0.0, but found lambda=" + num(lambda));
  return draw_into(t, [&]<class T>(T* p, int64_t n, bool) {
    if constexpr (std::is_floating_point_v<T>)
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(-1.0 / lambda * std::log1p(-gen.uniform()));
  });
}

// ---- random_ ------------------------------------------------------------------------------------

const Tensor& random_(const Tensor& t, int64_t from, std::optional<int64_t> to, Generator& gen) {
  if (to && from >= *to)
    throw std::invalid_argument("random_ expects 'from' to be less than 'to', but got from=" + std::to_string(from) +
                                " >= to=" + std::to_string(*to));
  AG_DISPATCH_ALL(t.dtype(), "random_", [&] {
    const int64_t top = to ? *to - 1 : max_exact_int<scalar_t>();  // the largest value drawn
    if (!to && from > top)
      throw std::invalid_argument("random_ expects 'from' casted to dtype to be less than or equal to 'to_inc' casted to dtype, but got from=" +
                                  std::to_string(from) + " > to_inc=" + std::to_string(top));
    if constexpr (std::is_same_v<scalar_t, bool>) {
      if (from < 0 || from > 1) throw std::invalid_argument("from is out of bounds for bool");
      if (top < 0 || top > 1) throw std::invalid_argument("to - 1 is out of bounds for bool");
    }
    // range 0 stands for all 2^64 int64 values: torch's one 64-bit word per element for
    // random_(−2^63) of an int64 tensor.
    const uint64_t range = static_cast<uint64_t>(top) - static_cast<uint64_t>(from) + 1;
    draw_into(t, [&]<class T>(T* p, int64_t n, bool) {
      for (int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(gen.random_from_to(range, from));
    });
  });
  return t;
}

const Tensor& random_(const Tensor& t, Generator& gen) {
  // torch's uniform_int_distribution: 64-bit words for float64 and int64, 32-bit for the others.
  return draw_into(t, [&]<class T>(T* p, int64_t n, bool) {
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, bool>)
        p[i] = (gen.next_u32() & 1u) != 0;
      else if constexpr (std::is_same_v<T, int64_t>)
        p[i] = static_cast<int64_t>(gen.next_u64() % (uint64_t{1} << 63));
      else if constexpr (std::is_same_v<T, double>)
        p[i] = static_cast<double>(gen.next_u64() % ((uint64_t{1} << 53) + 1));
      else
        p[i] = static_cast<float>(gen.next_u32() % ((uint64_t{1} << 24) + 1));
    }
  });
}

// ---- bernoulli ------------------------------------------------------------------------------------

const Tensor& bernoulli_(const Tensor& t, double p, Generator& gen) {
  if (!(p >= 0.0 && p <= 1.0)) throw std::invalid_argument("bernoulli_ expects p to be in [0, 1], but got p=" + num(p));
  return draw_into(t, [&]<class T>(T* out, int64_t n, bool) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<T>(gen.uniform() < p);
  });
}

const Tensor& bernoulli_(const Tensor& t, const Tensor& p, Generator& gen) {
  if (!p.defined()) throw std::invalid_argument("bernoulli_: p is an undefined Tensor");
  if (!is_floating(p.dtype())) not_for_dtype("bernoulli_tensor_cpu_p_", p.dtype());
  const Tensor probs = in_draw_order(t, p.detach());
  // torch compares a float32 p with a 24-bit float draw, a float64 p with a 53-bit double one.
  AG_DISPATCH_FLOAT(probs.dtype(), "bernoulli_", [&] {
    const scalar_t* q = probs.data<scalar_t>();
    const int64_t n = probs.numel();
    for (int64_t i = 0; i < n; ++i)  // checked before anything is drawn
      if (!(q[i] >= 0 && q[i] <= 1)) throw std::invalid_argument("Expected p_in >= 0 && p_in <= 1 to be true, but got false.");
    draw_into(t, [&]<class T>(T* out, int64_t, bool) {
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_same_v<scalar_t, float>)
          out[i] = static_cast<T>(gen.uniform_float() < q[i]);
        else
          out[i] = static_cast<T>(gen.uniform() < q[i]);
      }
    });
  });
  return t;
}

Tensor bernoulli(const Tensor& p, Generator& gen) {
  if (!p.defined()) throw std::invalid_argument("bernoulli: p is an undefined Tensor");
  Tensor out = Tensor::empty(p.shape(), p.dtype());
  bernoulli_(out, p, gen);
  return out;
}

// ---- randperm ---------------------------------------------------------------------------------------

Tensor randperm(int64_t n, Generator& gen, DType dtype) {
  if (n < 0) throw std::invalid_argument("Trying to create tensor with negative dimension " + std::to_string(n) + ": [" + std::to_string(n) + "]");
  if (dtype == DType::Bool) not_for_dtype("randperm", dtype);
  if (dtype == DType::Float32 && n > (int64_t{1} << 24) + 1)
    throw std::invalid_argument("n cannot be greater than 2^24+1 for Float type.");
  if (dtype == DType::Float64 && n > (int64_t{1} << 53) + 1)
    throw std::invalid_argument("n cannot be greater than 2^53+1 for Double type.");
  std::vector<int64_t> r(static_cast<size_t>(n));
  if (n < static_cast<int64_t>(std::numeric_limits<uint32_t>::max() / 20)) {
    // Fisher-Yates from the front: position i takes one of the n − i not placed yet.
    std::iota(r.begin(), r.end(), int64_t{0});
    // (n < 2^28: torch's randint(0, n − i) of a torch generator is its random() % (n − i).)
    for (int64_t i = 0; i + 1 < n; ++i) std::swap(r[static_cast<size_t>(i)], r[static_cast<size_t>(i + gen.randint(0, n - i))]);
  } else {
    // torch's inside-out variant for n near 2^32 and beyond, where a 32-bit word's modulo skews.
    for (int64_t i = 0; i < n; ++i) {
      const auto z = static_cast<size_t>(gen.next_u64() % static_cast<uint64_t>(i + 1));
      r[static_cast<size_t>(i)] = r[z];
      r[z] = i;
    }
  }
  Tensor out = Tensor::from_vector(r, {n});
  return dtype == DType::Int64 ? out : out.to(dtype);
}

// ---- multinomial -------------------------------------------------------------------------------------

Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, Generator& gen) {
  if (!probs.defined()) throw std::invalid_argument("multinomial: probs is an undefined Tensor");
  if (probs.dim() < 1 || probs.dim() > 2) throw std::invalid_argument("prob_dist must be 1 or 2 dim");
  if (!is_floating(probs.dtype()))
    throw std::invalid_argument(std::string("multinomial only supports floating-point dtypes for input, got: ") +
                                scalar_type_name(probs.dtype()));
  if (num_samples <= 0) throw std::invalid_argument("cannot sample n_sample <= 0 samples");
  const int64_t categories = probs.size(-1);
  if (!replacement && num_samples > categories)
    throw std::invalid_argument("cannot sample n_sample > prob_dist.size(-1) samples without replacement");
  if (categories > (int64_t{1} << 24)) throw std::invalid_argument("number of categories cannot exceed 2^24");
  const int64_t rows = probs.dim() == 2 ? probs.size(0) : 1;
  Tensor out = Tensor::empty(probs.dim() == 2 ? Shape{rows, num_samples} : Shape{num_samples}, DType::Int64);
  if (out.numel() == 0) return out;
  const Tensor w = probs.detach().contiguous();
  int64_t* result = out.data<int64_t>();
  AG_DISPATCH_FLOAT(w.dtype(), "multinomial", [&] {
    const scalar_t* pw = w.data<scalar_t>();
    if (!replacement || num_samples == 1) {
      // The exponential trick: the k largest of p_i / q_i, q_i ~ Exp(1), are k draws without
      // replacement (a Gumbel top-k). torch checks every row first, then draws q for them all.
      const int64_t n = w.numel();
      for (int64_t i = 0; i < n; ++i)
        if (!(pw[i] >= 0) || std::isinf(pw[i]))
          throw std::invalid_argument("probability tensor contains either `inf`, `nan` or element < 0");
      for (int64_t r = 0; r < rows; ++r) {
        scalar_t sum = 0;
        for (int64_t j = 0; j < categories; ++j) sum += pw[r * categories + j];
        if (sum == 0) throw std::invalid_argument("invalid multinomial distribution (sum of probabilities <= 0)");
      }
      Tensor q = Tensor::empty({n}, w.dtype());
      exponential_(q, 1.0, gen);
      scalar_t* pq = q.data<scalar_t>();
      for (int64_t i = 0; i < n; ++i) pq[i] = pw[i] / pq[i];
      std::vector<int64_t> idx(static_cast<size_t>(categories));
      for (int64_t r = 0; r < rows; ++r) {
        const scalar_t* key = pq + r * categories;
        std::iota(idx.begin(), idx.end(), int64_t{0});
        // largest first; equal keys (zero weights) by index
        std::partial_sort(idx.begin(), idx.begin() + num_samples, idx.end(),
                          [key](int64_t a, int64_t b) { return key[a] > key[b] || (key[a] == key[b] && a < b); });
        std::copy(idx.begin(), idx.begin() + num_samples, result + r * num_samples);
      }
      return;
    }
    // With replacement: each row's cumulative sum (in the row's dtype) scaled to end at 1,
    // inverted at a uniform draw per sample by bisection.
    std::vector<scalar_t> cum(static_cast<size_t>(categories));
    for (int64_t r = 0; r < rows; ++r) {
      scalar_t sum = 0;
      for (int64_t j = 0; j < categories; ++j) {
        const scalar_t v = pw[r * categories + j];
        if (!(v >= 0)) throw std::invalid_argument("invalid multinomial distribution (encountering probability entry < 0)");
        if (!std::isfinite(v))
          throw std::invalid_argument("invalid multinomial distribution (encountering probability entry = infinity or NaN)");
        sum += v;
        cum[static_cast<size_t>(j)] = sum;
      }
      if (!(sum > 0)) throw std::invalid_argument("invalid multinomial distribution (sum of probabilities <= 0)");
      for (scalar_t& c : cum) c /= sum;
      cum.back() = 1;
      for (int64_t k = 0; k < num_samples; ++k) {
        const double u = gen.uniform();
        int64_t lo = 0, hi = categories;  // the first category whose cumulative sum reaches u
        while (hi > lo) {
          const int64_t mid = lo + (hi - lo) / 2;
          if (static_cast<double>(cum[static_cast<size_t>(mid)]) < u)
            lo = mid + 1;
          else
            hi = mid;
        }
        result[r * num_samples + k] = lo;
      }
    }
  });
  return out;
}

}  // namespace ag
