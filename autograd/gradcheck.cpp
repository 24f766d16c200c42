#include "autograd/gradcheck.h"

#include <cmath>
#include <cstdio>
#include <sstream>

#include "autograd/engine.h"
#include "autograd/ops.h"

namespace ag {

bool GradcheckReport::passed() const {
  if (!reentrant) return false;
  for (const auto& r : inputs)
    if (!r.passed) return false;
  return true;
}

std::string GradcheckReport::table() const {
  std::ostringstream os;
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %-16s %14s %14s  %s\n", "tensor", "shape", "max abs err", "max rel err", "result");
  os << line;
  for (const auto& r : inputs) {
    std::snprintf(line, sizeof line, "%-28s %-16s %14.3e %14.3e  %s\n", r.name.c_str(), shape_str(r.shape).c_str(),
                  r.max_abs_err, r.max_rel_err, r.passed ? "PASS" : "FAIL");
    os << line;
  }
  if (!reentrant) os << "backward is not reentrant: two runs with the same upstream gradient differ  FAIL\n";
  return os.str();
}

GradcheckReport gradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& opt,
                          const std::vector<std::string>& names) {
  std::vector<size_t> checked;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad()) continue;
    if (t.dtype() != DType::Float64 || !t.is_leaf() || !t.is_contiguous())
      throw std::invalid_argument("gradcheck: input " + std::to_string(i) + " must be a contiguous float64 leaf, got " +
                                  describe(t));
    checked.push_back(i);
  }
  if (checked.empty()) throw std::invalid_argument("gradcheck: no input requires grad");
  auto zero_grads = [&] {
    for (size_t i : checked) inputs[i].impl().grad.reset();
  };

  // Analytic Jacobian, one row (output element) at a time over one retained graph.
  zero_grads();
  const Tensor out = f(inputs);
  if (!out.defined() || out.dtype() != DType::Float64)
    throw std::invalid_argument("gradcheck: f must return a float64 tensor, got " + describe(out));
  if (!out.requires_grad()) throw std::invalid_argument("gradcheck: f's output does not depend on any checked input");
  const int64_t n_out = out.numel();
  // analytic[c][k * n_out + j] = d out_j / d input_c[k]
  std::vector<std::vector<double>> analytic(checked.size());
  for (size_t c = 0; c < checked.size(); ++c) analytic[c].assign(inputs[checked[c]].numel() * n_out, 0.0);
  for (int64_t j = 0; j < n_out; ++j) {
    Tensor onehot = Tensor::zeros(out.shape(), DType::Float64);
    onehot.data<double>()[j] = 1.0;
    zero_grads();
    out.backward(onehot, {.retain_graph = true});
    for (size_t c = 0; c < checked.size(); ++c) {
      const Tensor g = inputs[checked[c]].grad();
      if (!g.defined()) continue;  // no path from this input to out_j: zero row
      const auto gv = g.to_double_vector();
      for (size_t k = 0; k < gv.size(); ++k) analytic[c][k * n_out + j] = gv[k];
    }
  }

  // Reentrancy: the same random upstream gradient twice must give identical results.
  GradcheckReport report;
  {
    Generator gen(12345);
    const Tensor up = Tensor::randn(out.shape(), DType::Float64, gen);
    std::vector<std::vector<double>> first;
    for (int run = 0; run < 2; ++run) {
      zero_grads();
      out.backward(up, {.retain_graph = true});
      for (size_t c = 0; c < checked.size(); ++c) {
        const Tensor g = inputs[checked[c]].grad();
        const auto gv = g.defined() ? g.to_double_vector() : std::vector<double>();
        if (run == 0) first.push_back(gv);
        else if (gv != first[c]) report.reentrant = false;
      }
    }
    zero_grads();
  }

  // Numeric Jacobian by central differences, perturbing each input element in place.
  NoGradGuard no_grad;
  for (size_t c = 0; c < checked.size(); ++c) {
    const Tensor& x = inputs[checked[c]];
    double* px = x.data<double>();
    GradcheckInputReport r;
    r.name = checked[c] < names.size() ? names[checked[c]] : "input " + std::to_string(checked[c]);
    r.shape = x.shape();
    for (int64_t k = 0; k < x.numel(); ++k) {
      const double orig = px[k];
      px[k] = orig + opt.eps;
      const auto plus = f(inputs).to_double_vector();
      px[k] = orig - opt.eps;
      const auto minus = f(inputs).to_double_vector();
      px[k] = orig;
      for (int64_t j = 0; j < n_out; ++j) {
        const double numeric = (plus[j] - minus[j]) / (2 * opt.eps);
        const double a = analytic[c][k * n_out + j];
        const double err = std::fabs(a - numeric);
        if (!(err <= opt.atol + opt.rtol * std::fabs(numeric))) {  // NaN fails too
          ++r.failures;
          r.passed = false;
        }
        r.max_abs_err = std::max(r.max_abs_err, std::isnan(err) ? INFINITY : err);
        if (std::fabs(numeric) > opt.atol) r.max_rel_err = std::max(r.max_rel_err, err / std::fabs(numeric));
      }
    }
    report.inputs.push_back(r);
  }
  return report;
}

GradcheckReport gradgradcheck(const GradcheckFn& f, const std::vector<Tensor>& inputs, const GradcheckOptions& opt,
                              const std::vector<std::string>& names, uint64_t seed) {
  std::vector<size_t> checked;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined() && inputs[i].requires_grad()) checked.push_back(i);
  if (checked.empty()) throw std::invalid_argument("gradgradcheck: no input requires grad");
  Shape out_shape;
  {
    EnableGradGuard grad_on;
    const Tensor y = f(inputs);
    if (!y.defined() || !y.requires_grad())
      throw std::invalid_argument("gradgradcheck: f's output does not depend on any checked input");
    out_shape = y.shape();
  }
  Generator gen(seed);
  const Tensor v = Tensor::randn(out_shape, DType::Float64, gen).requires_grad_();
  // g(x, v): the first-order gradients, flattened and concatenated, recorded (create_graph)
  // so that gradcheck can differentiate them. The numeric side calls this under NoGradGuard;
  // the first-order pass needs its forward graph all the same.
  auto first_order = [&](const std::vector<Tensor>& all) {
    EnableGradGuard grad_on;
    const std::vector<Tensor> xs(all.begin(), all.end() - 1);
    std::vector<Tensor> wrt;
    for (size_t i : checked) wrt.push_back(xs[i]);
    const Tensor y = f(xs);
    const std::vector<Tensor> gs = grad({y}, wrt, {all.back()}, {.create_graph = true, .allow_unused = true});
    std::vector<Tensor> flat;
    for (size_t c = 0; c < gs.size(); ++c)
      flat.push_back(gs[c].defined() ? reshape(gs[c], {-1}) : Tensor::zeros({wrt[c].numel()}, DType::Float64));
    return concat(flat, 0);
  };
  std::vector<Tensor> all = inputs;
  all.push_back(v);
  std::vector<std::string> all_names;
  for (size_t i = 0; i < inputs.size(); ++i) all_names.push_back(i < names.size() ? names[i] : "input " + std::to_string(i));
  all_names.push_back("grad_output");
  return gradcheck(first_order, all, opt, all_names);
}

}  // namespace ag
