#include "optim/muon.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "autograd/kernels/dispatch.h"
#include "autograd/kernels/gemm.h"
#include "autograd/ops.h"
#include "optim/torch_math.h"

namespace ag::optim {

namespace {

// X ← NS(X) in place for X (m, n), m ≤ n, row-major: X /= max(‖X‖_F, eps), then `steps` times
// S = X·Xᵀ, P = b·S + c·S·S, X ← a·X + P·X (torch's addmm order). Each GEMM splits its rows
// across attograd's threads (single-threaded BLAS in each): the same bits for a thread count.
template <class T>
void newton_schulz(T* X, int64_t m, int64_t n, double a, double b, double c, int64_t steps, double eps) {
  double ss = 0;
  for (int64_t i = 0; i < m * n; ++i) ss += static_cast<double>(X[i]) * static_cast<double>(X[i]);
  const T norm = static_cast<T>(std::max(std::sqrt(ss), eps));  // torch: X.div_(X.norm().clamp(min=eps))
  for (int64_t i = 0; i < m * n; ++i) X[i] /= norm;
  std::vector<T> S(static_cast<size_t>(m * m)), P(static_cast<size_t>(m * m)), Y(static_cast<size_t>(m * n));
  for (int64_t k = 0; k < steps; ++k) {
    // S = X·Xᵀ  (m, n)·(n, m) -> (m, m)
    kernels::gemm_rows(false, true, m, m, n, T(1), X, n, X, n, T(0), S.data(), m);
    // P = b·S + c·S·S  (m, m)
    std::copy(S.begin(), S.end(), P.begin());
    kernels::gemm_rows(false, false, m, m, m, static_cast<T>(c), S.data(), m, S.data(), m, static_cast<T>(b), P.data(), m);
    // X ← a·X + P·X  (m, m)·(m, n) -> (m, n)
    std::copy(X, X + m * n, Y.begin());
    kernels::gemm_rows(false, false, m, n, m, T(1), P.data(), m, Y.data(), n, static_cast<T>(a), X, n);
  }
}

}  // namespace

double muon_adjusted_lr(double lr, const std::string& fn, int64_t A, int64_t B) {
  const double a = static_cast<double>(A), b = static_cast<double>(B);
  if (fn.empty() || fn == "original") return lr * std::sqrt(std::max(1.0, a / b));
  if (fn == "match_rms_adamw") return lr * 0.2 * std::sqrt(std::max(a, b));
  if (fn == "spectral_unclamped") return lr * std::sqrt(a / b);
  throw std::invalid_argument("Muon: Adjust learning rate function " + fn + " is not supported");
}

Tensor zeropower_via_newtonschulz(const Tensor& u, std::tuple<double, double, double> coef, int64_t ns_steps, double eps) {
  if (u.dim() != 2) throw std::invalid_argument("Muon: Input tensor gradient must be a 2D matrix, got " + describe(u));
  if (ns_steps >= 100) throw std::invalid_argument("Muon: Number of steps must be less than 100 for computational efficiency");
  const int64_t A = u.size(0), B = u.size(1);
  const bool tall = A > B;  // orthogonalise Uᵀ, whose Gram matrix XXᵀ is the smaller one
  const Tensor ud = u.detach();
  Tensor X = (tall ? transpose(ud, 0, 1) : ud).clone();  // (min, max), a fresh buffer the iteration overwrites
  // Plain variables, not a structured binding: the dispatch lambda captures them (clang 14 refuses).
  const double a = std::get<0>(coef), b = std::get<1>(coef), c = std::get<2>(coef);
  AG_DISPATCH_FLOAT(X.dtype(), "Muon", [&] {
    newton_schulz(X.data<scalar_t>(), X.size(0), X.size(1), a, b, c, ns_steps, eps);
  });
  return tall ? transpose(X, 0, 1).contiguous() : X;
}

Muon::Muon(std::vector<Tensor> params, MuonOptions options) : Muon(std::vector<ParamGroup>{{std::move(params), options}}) {
  defaults_ = options;
}

Muon::Muon(std::vector<ParamGroup> groups) : OptimizerBase("Muon") {
  init(std::move(groups));
  check_matrices();
}

Muon::Muon(std::vector<PartialParamGroup> groups, MuonOptions defaults) : OptimizerBase("Muon") {
  init(std::move(groups), defaults);
  check_matrices();
}

void Muon::check_matrices() const {
  for (const auto& g : param_groups())
    for (const Tensor& p : g.params)
      if (p.dim() != 2)
        throw std::invalid_argument("Muon: Muon only supports 2D parameters whereas we found a parameter with size: " +
                                    shape_str(p.shape()) + (p.name().empty() ? "" : " (" + p.name() + ")"));
}

void Muon::check_options(const MuonOptions& o) const {
  if (!(o.lr >= 0)) throw std::invalid_argument("Muon: Learning rate should be >= 0 but is: " + repr(o.lr));
  if (!(o.momentum >= 0)) throw std::invalid_argument("Muon: momentum should be >= 0 but is: " + repr(o.momentum));
  if (!(o.weight_decay >= 0)) throw std::invalid_argument("Muon: weight decay should be >= 0 but is: " + repr(o.weight_decay));
  if (!(o.eps >= 0)) throw std::invalid_argument("Muon: eps should be >= 0 but is: " + repr(o.eps));
  if (o.ns_steps < 0 || o.ns_steps >= 100)
    throw std::invalid_argument("Muon: Number of steps must be less than 100 for computational efficiency");
  muon_adjusted_lr(1.0, o.adjust_lr_fn, 1, 1);  // throws for an unknown function
}

std::map<std::string, Tensor> Muon::state_to_map(const MuonParamState& s) const {
  return {{"momentum_buffer", s.momentum_buffer}};
}

MuonParamState Muon::state_from_map(const std::map<std::string, Tensor>& m, const Tensor& p) const {
  MuonParamState s;
  for (const auto& [k, v] : m) {
    if (k != "momentum_buffer") throw std::invalid_argument("Muon.load_state_dict: unknown state '" + k + "'");
    s.momentum_buffer = state_tensor_for("Muon", k, v, p);
  }
  if (!s.momentum_buffer.defined()) throw std::invalid_argument("Muon.load_state_dict: a parameter's state lacks momentum_buffer");
  return s;
}

void Muon::step() {
  for (const ParamGroup& group : param_groups()) {
    const MuonOptions& o = group.options;
    for (const Tensor& p : group.params) {
      const Tensor g = p.grad();
      if (!g.defined()) continue;
      if (g.dim() != 2) throw std::invalid_argument("Muon: Param gradient must be a 2D matrix, got " + describe(g));
      MuonParamState* st = state(p);
      if (!st) {
        set_state(p, {Tensor::zeros(p.shape(), p.dtype())});
        st = state(p);
      }
      check_step_operands("Muon", p, g, {st->momentum_buffer});
      const Tensor gc = g.contiguous();
      Tensor u = Tensor::empty(p.shape(), p.dtype());  // the update before orthogonalisation
      AG_DISPATCH_FLOAT(p.dtype(), "Muon", [&] {
        scalar_t* buf = st->momentum_buffer.data<scalar_t>();
        scalar_t* pu = u.data<scalar_t>();
        const scalar_t* gr = gc.data<scalar_t>();
        const scalar_t mu = static_cast<scalar_t>(o.momentum), one_minus_mu = static_cast<scalar_t>(1 - o.momentum);
        for (int64_t k = 0, n = p.numel(); k < n; ++k) {
          buf[k] = torch_lerp(buf[k], gr[k], one_minus_mu);           // buf.lerp_(grad, 1 - momentum)
          pu[k] = o.nesterov ? torch_lerp(gr[k], buf[k], mu) : buf[k];  // grad.lerp(buf, momentum)
        }
      });
      st->momentum_buffer.bump_version();
      const Tensor O = zeropower_via_newtonschulz(u, o.ns_coefficients, o.ns_steps, o.eps);
      const double adjusted = muon_adjusted_lr(o.lr, o.adjust_lr_fn, p.size(0), p.size(1));
      p.bump_version();  // an in-place write: a graph that saved this weight must not reuse it silently
      AG_DISPATCH_FLOAT(p.dtype(), "Muon", [&] {
        scalar_t* w = p.data<scalar_t>();
        const scalar_t* po = O.data<scalar_t>();
        const scalar_t decay = static_cast<scalar_t>(1 - o.lr * o.weight_decay), neg = static_cast<scalar_t>(-adjusted);
        for (int64_t k = 0, n = p.numel(); k < n; ++k) {
          w[k] *= decay;                     // param.mul_(1 - lr * weight_decay)
          w[k] = std::fma(po[k], neg, w[k]);  // param.add_(update, alpha=-adjusted_lr)
        }
      });
    }
  }
}

}  // namespace ag::optim
