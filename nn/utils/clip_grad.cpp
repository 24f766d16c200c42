#include "nn/utils/clip_grad.h"

#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/kernels/dispatch.h"
#include "autograd/kernels/vec.h"
#include "autograd/parallel.h"

namespace ag::nn::utils {

namespace {

// Elements per chunk of the flat parallel scaling pass over all gradients.
constexpr int64_t kFlatGrain = 32768;

// The parameters' gradients, as contiguous tensors (the .grad itself when it is contiguous).
struct Grads {
  std::vector<Tensor> params, grads;
};

Grads contiguous_grads(const std::vector<Tensor>& parameters) {
  Grads out;
  for (const Tensor& p : parameters) {
    const Tensor g = p.grad();
    if (!g.defined()) continue;
    if (!is_floating(g.dtype())) throw std::invalid_argument("clip_grad: gradient " + describe(g) + " is not floating point");
    out.params.push_back(p);
    out.grads.push_back(g.contiguous());
  }
  return out;
}

// A gradient that was not contiguous was worked on as a copy: the result goes back into the
// .grad tensor itself, so that every handle to it sees the change.
void write_back(const Grads& gs) {
  NoGradGuard no_grad;
  for (size_t i = 0; i < gs.params.size(); ++i) {
    Tensor g = gs.params[i].grad();
    if (!g.same(gs.grads[i])) g.copy_(gs.grads[i]);
    else g.bump_version();  // written through data<T>()
  }
}

double two_norm(const std::vector<Tensor>& grads) {
  // Σ g² per gradient, the float32 ones in parallel (one gradient per chunk), then added in
  // parameter order: the same bits on any thread count.
  std::vector<double> squares(grads.size(), 0.0);
  parallel::parallel_for(static_cast<int64_t>(grads.size()), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const Tensor& g = grads[static_cast<size_t>(i)];
      if (g.dtype() == DType::Float32) squares[static_cast<size_t>(i)] = kernels::vec::sum_squares(g.data<float>(), g.numel());
    }
  });
  double total = 0;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (grads[i].dtype() == DType::Float32)
      total += squares[i];
    else
      for (double v : grads[i].to_double_vector()) total += v * v;
  }
  return std::sqrt(total);
}

// torch.linalg.vector_norm of v with order p, in float64: max |v| or min |v| for ±infinity
// (NaN wins), the count of non-zero entries for 0, (Σ|v|^p)^(1/p) otherwise.
double vector_norm(const std::vector<double>& v, double p) {
  if (std::isinf(p)) {
    if (v.empty()) return 0.0;
    double m = std::abs(v[0]);
    for (double x : v) {
      if (std::isnan(x) || std::isnan(m)) return std::numeric_limits<double>::quiet_NaN();
      m = p > 0 ? std::max(m, std::abs(x)) : std::min(m, std::abs(x));
    }
    return m;
  }
  if (p == 0) {
    double n = 0;
    for (double x : v) n += x != 0;  // NaN counts, as torch's
    return n;
  }
  double total = 0;
  for (double x : v) total += std::pow(std::abs(x), p);
  return std::pow(total, 1.0 / p);
}

// The norm of each gradient, then the norm of those: torch's total norm.
double p_norm(const std::vector<Tensor>& grads, double p) {
  std::vector<double> norms;
  for (const Tensor& g : grads) norms.push_back(vector_norm(g.to_double_vector(), p));
  return vector_norm(norms, p);
}

// Python's str() of the norm type, as torch's message prints it: 2.0, 0.5, inf, -inf.
std::string python_float(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  if (v == std::floor(v) && std::abs(v) < 1e16) {
    os << std::fixed << std::setprecision(1) << v;
    return os.str();
  }
  for (int digits = 1; digits <= 17; ++digits) {  // the shortest that reads back, as Python's repr
    os.str("");
    os << std::setprecision(digits) << v;
    if (std::stod(os.str()) == v) break;
  }
  return os.str();
}

}  // namespace

double clip_grad_norm_(const std::vector<Tensor>& parameters, double max_norm, double norm_type, bool error_if_nonfinite) {
  if (std::isnan(norm_type)) throw std::invalid_argument("clip_grad_norm_: norm_type is NaN");
  Grads gs = contiguous_grads(parameters);
  if (gs.grads.empty()) return 0.0;
  const double norm = norm_type == 2.0 ? two_norm(gs.grads) : p_norm(gs.grads, norm_type);
  if (error_if_nonfinite && !std::isfinite(norm))  // torch's message
    throw std::runtime_error("The total norm of order " + python_float(norm_type) +
                             " for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error "
                             "and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`");
  const double coef = max_norm / (norm + 1e-6);
  if (coef >= 1) return norm;  // torch multiplies by the coefficient clamped to 1, which changes nothing
  // Everything is scaled (a NaN coefficient too, as torch's clamp keeps NaN).
  struct Span {
    float* d;
    int64_t n;
  };
  std::vector<Span> spans;
  for (Tensor& g : gs.grads) {
    if (g.dtype() == DType::Float32) {
      spans.push_back({g.data<float>(), g.numel()});
      continue;
    }
    AG_DISPATCH_FLOAT(g.dtype(), "clip_grad_norm_", [&] {
      scalar_t* d = g.data<scalar_t>();
      for (int64_t j = 0, n = g.numel(); j < n; ++j) d[j] *= static_cast<scalar_t>(coef);
    });
  }
  const float c = static_cast<float>(coef);
  parallel::parallel_for_spans(spans, kFlatGrain, [c](const Span& s, int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) s.d[j] *= c;
  });
  write_back(gs);
  return norm;
}

double clip_grad_norm_(const Tensor& parameter, double max_norm, double norm_type, bool error_if_nonfinite) {
  return clip_grad_norm_(std::vector<Tensor>{parameter}, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value_(const Tensor& parameter, double clip_value) { clip_grad_value_(std::vector<Tensor>{parameter}, clip_value); }

void clip_grad_value_(const std::vector<Tensor>& parameters, double clip_value) {
  if (!(clip_value >= 0)) throw std::invalid_argument("clip_grad_value_: clip_value must be ≥ 0, got " + std::to_string(clip_value));
  Grads gs = contiguous_grads(parameters);
  for (Tensor& g : gs.grads)
    AG_DISPATCH_FLOAT(g.dtype(), "clip_grad_value_", [&] {
      scalar_t* d = g.data<scalar_t>();
      const scalar_t hi = static_cast<scalar_t>(clip_value), lo = -hi;
      for (int64_t j = 0, n = g.numel(); j < n; ++j) d[j] = d[j] < lo ? lo : (d[j] > hi ? hi : d[j]);  // NaN passes
    });
  write_back(gs);
}

}  // namespace ag::nn::utils
