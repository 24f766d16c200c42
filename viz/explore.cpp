#include "viz/explore.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <unordered_map>

#include "autograd/engine.h"
#include "autograd/ops.h"

namespace ag::viz {

double ExploreNode::fd_relative_error() const {
  // A NaN or an infinity on either side is a failure, never a match (inf − inf is NaN).
  if (!std::isfinite(fd_lhs) || !std::isfinite(fd_rhs) || !std::isfinite(fd_noise))
    return std::numeric_limits<double>::quiet_NaN();
  // What rounding alone can make of the difference is forgiven: only the rest counts.
  const double den = std::fabs(fd_lhs) + std::fabs(fd_rhs);
  const double beyond_rounding = std::max(0.0, std::fabs(fd_lhs - fd_rhs) - fd_noise);
  return den == 0 ? 0.0 : beyond_rounding / den;
}

// A float32 pass checked on its float64 twin compares the float32 backward's own results with
// exact changes: what is left is that backward's rounding (2^-24 per operation, grown by the
// op's reductions), far below 1e-3 and far above float64's 1e-6.
double ExploreCapture::fd_tolerance() const {
  if (dtype == DType::Float64) return 1e-6;
  return fd_in_float64 ? 1e-3 : 2e-2;
}

int ExploreCapture::fd_failures() const {
  int n = 0;
  for (const auto& node : nodes) n += node.fd_checked && !(node.fd_relative_error() <= fd_tolerance());  // NaN fails
  return n;
}

namespace {

// What the record observer saw of one op.
struct Recorded {
  std::string op;
  Tensor output;
  std::vector<Tensor> inputs;
  std::string file;
  int line = 0;
};

// Records every op of the forward passes run while it lives, in order. With copy, it keeps
// copies of the values: a replay's views of a leaf (narrow, transpose) would otherwise show the
// leaf restored, not as the replay saw it.
class Recorder {
 public:
  std::vector<Recorded> ops;
  std::unordered_map<const Node*, size_t> index;
  explicit Recorder(bool copy = false)
      : guard_([this, copy](const Node& n, const Tensor& out, const std::vector<Tensor>& inputs, const SourceLocation& where) {
          index[&n] = ops.size();
          Recorded r{n.op, out, inputs, where.file, where.line};
          if (copy) {
            NoGradGuard no_grad;
            r.output = out.detach().clone();
            for (Tensor& t : r.inputs)
              if (t.defined()) t = t.detach().clone();
          }
          ops.push_back(std::move(r));
        }) {}

 private:
  ObserveRecordGuard guard_;
};

// ⟨g, plus − minus⟩, and in *noise the most that rounding the two replays' values to their
// type (unit roundoff u) can have moved it: Σ |g|·κ·u·(|plus| + |minus|), κ = 4 for the few
// roundings an op's own arithmetic adds to its result's. NaN when a value that counts is not
// finite: the comparison then fails.
double dot_of_difference(const Tensor& g, const Tensor& plus, const Tensor& minus, double* noise) {
  const auto gv = g.to_double_vector(), p = plus.to_double_vector(), m = minus.to_double_vector();
  if (gv.size() != p.size() || p.size() != m.size()) throw std::logic_error("explore: replayed shapes differ");
  const double u = plus.dtype() == DType::Float32 ? 0x1p-24 : 0x1p-53;
  double s = 0, r = 0;
  for (size_t i = 0; i < gv.size(); ++i) {
    if (!std::isfinite(gv[i])) return std::numeric_limits<double>::quiet_NaN();
    if (p[i] == m[i] && (std::isfinite(p[i]) || gv[i] == 0)) continue;  // unchanged: adds nothing (a mask's −inf too)
    if (!std::isfinite(p[i]) || !std::isfinite(m[i])) return std::numeric_limits<double>::quiet_NaN();
    s += gv[i] * (p[i] - m[i]);
    r += std::fabs(gv[i]) * 4 * u * (std::fabs(p[i]) + std::fabs(m[i]));
  }
  *noise += r;
  return s;
}

// "autograd/ops/matmul.cpp:115" from whatever path __builtin_FILE gave (absolute, or relative
// to the build folder): the part from the source tree's top folder on.
std::string short_place(const std::string& file, int line) {
  std::string f = file;
  for (const char* top : {"autograd/", "nn/", "models/", "train/", "viz/"}) {
    const auto at = f.rfind(std::string("/") + top);
    if (at != std::string::npos) {
      f = f.substr(at + 1);
      break;
    }
  }
  return f + ":" + std::to_string(line);
}

}  // namespace

ExploreCapture capture_explore(const std::function<Tensor()>& forward, const std::vector<Tensor>& leaves,
                               const ExploreOptions& opt) {
  ExploreCapture cap;
  cap.title = opt.title;
  std::vector<Tensor> moving = leaves;  // handles on the same tensors, to write through
  for (Tensor& l : moving) {
    if (!l.defined() || !l.is_leaf() || !l.requires_grad())
      throw std::invalid_argument("explore: every given leaf must be a leaf tensor that requires grad");
    l.zero_grad();
  }
  EnableGradGuard grad_on;

  // ---- the forward pass, watched --------------------------------------------------------------
  Recorder rec;
  const Tensor root = forward();
  if (!root.defined() || root.numel() != 1 || !root.requires_grad() || root.is_leaf())
    throw std::invalid_argument("explore: the forward must return a one-element tensor computed from leaves that require grad");
  cap.dtype = root.dtype();
  cap.loss = root.item();

  // ---- the backward pass, watched ---------------------------------------------------------------
  struct Ran {
    Tensor grad;
    Grads sent;
    int step;
  };
  std::unordered_map<const Node*, Ran> ran;
  std::vector<const Node*> run_order;
  {
    ObserveNodeBackwardGuard watch([&](const Node& n, const Tensor& g, const Grads& sent) {
      ran[&n] = {g, sent, static_cast<int>(run_order.size())};
      run_order.push_back(&n);
    });
    root.backward();
  }

  // ---- the graph: ops in topological order, then leaves --------------------------------------------
  const std::vector<Node*> ops = topological_order(root.grad_fn().get());
  std::unordered_map<const Node*, int> op_id;
  for (size_t i = 0; i < ops.size(); ++i) op_id[ops[i]] = static_cast<int>(i);
  std::unordered_map<const TensorImpl*, int> leaf_id;
  std::vector<std::shared_ptr<TensorImpl>> leaf_impls;
  for (const Node* n : ops)
    for (const Edge& e : n->next)
      if (e.leaf && !leaf_id.count(e.leaf.get())) {
        leaf_id[e.leaf.get()] = static_cast<int>(ops.size() + leaf_impls.size());
        leaf_impls.push_back(e.leaf);
      }
  std::vector<int> seq_of_op(ops.size(), -1);
  for (size_t i = 0; i < ops.size(); ++i) {
    const Node* n = ops[i];
    ExploreNode en;
    en.op = n->op, en.shape = n->out_shape, en.dtype = n->out_dtype;
    en.reference = reference_section_for_op(n->op);
    auto r = rec.index.find(n);
    if (r != rec.index.end()) {
      const Recorded& rc = rec.ops[r->second];
      seq_of_op[i] = static_cast<int>(r->second);
      en.value = rc.output.detach();
      en.where = short_place(rc.file, rc.line);
      en.formula = backward_formula(rc.file, rc.line);
    }
    for (const Edge& e : n->next) en.inputs.push_back(e.node ? op_id.at(e.node.get()) : e.leaf ? leaf_id.at(e.leaf.get()) : -1);
    auto it = ran.find(n);
    if (it != ran.end()) {
      en.grad = it->second.grad;
      en.sent = it->second.sent;
      en.step = it->second.step;
    }
    en.sent.resize(en.inputs.size());
    cap.nodes.push_back(std::move(en));
  }
  for (const Node* n : run_order) cap.order.push_back(op_id.at(n));
  for (const auto& impl : leaf_impls) {
    ExploreNode en;
    const Tensor t(impl);
    en.leaf = true;
    en.op = impl->name.empty() ? "(leaf)" : impl->name;
    en.shape = impl->shape, en.dtype = impl->dtype;
    en.value = t.detach().clone();  // the replays move the leaf itself
    en.grad = t.grad();
    cap.nodes.push_back(std::move(en));
  }
  // Each leaf's .grad is the sum of what the ops sent it.
  std::vector<Tensor> sums(cap.nodes.size());
  for (const auto& n : cap.nodes)
    for (size_t i = 0; i < n.inputs.size(); ++i)
      if (n.inputs[i] >= 0 && cap.nodes[n.inputs[i]].leaf && n.sent[i].defined()) {
        Tensor& s = sums[static_cast<size_t>(n.inputs[i])];
        s = s.defined() ? add(s, n.sent[i].detach()) : n.sent[i].detach();
      }
  for (size_t i = 0; i < cap.nodes.size(); ++i) {
    ExploreNode& n = cap.nodes[i];
    if (!n.leaf || !sums[i].defined() || !n.grad.defined()) continue;
    const auto a = sums[i].to_double_vector(), b = n.grad.to_double_vector();
    for (size_t k = 0; k < a.size(); ++k) n.leaf_sum_diff = std::max(n.leaf_sum_diff, std::fabs(a[k] - b[k]));
  }

  // ---- the finite-difference replays ------------------------------------------------------------------
  cap.fd_step = opt.fd_step > 0 ? opt.fd_step : (cap.dtype == DType::Float64 ? 1e-6 : 1e-3);
  for (const auto& impl : leaf_impls) {
    bool given = false;
    for (const Tensor& l : leaves) given = given || l.impl_ptr() == impl;
    if (!given) {
      cap.fd_note = "the leaf '" + (impl->name.empty() ? std::string("(unnamed)") : impl->name) +
                    "' was not given to move, so the finite-difference check did not run";
      return cap;
    }
  }
  // The replays run on the float64 twin when there is one: the leaves moved are its own.
  const bool twin = static_cast<bool>(opt.float64_twin);
  std::vector<Tensor> replayed = twin ? opt.float64_twin_leaves : leaves;
  if (twin) {
    if (replayed.size() != leaves.size())
      throw std::invalid_argument("explore: the float64 twin must have one leaf for each leaf given");
    for (size_t i = 0; i < leaves.size(); ++i)
      if (replayed[i].shape() != leaves[i].shape() || replayed[i].dtype() != DType::Float64)
        throw std::invalid_argument("explore: the float64 twin's leaf " + std::to_string(i) + " is not a float64 copy of the leaf");
    cap.fd_in_float64 = true;
    if (!(opt.fd_step > 0)) cap.fd_step = 1e-6;
  }
  Generator gen(opt.fd_seed);
  std::vector<Tensor> originals, steps;
  for (const Tensor& l : replayed) {
    originals.push_back(l.detach().clone());
    // u with each entry moved by ε times its own size (at least 0.01, for entries at zero). A
    // step of the leaf's RMS moved a small entry of a leaf that also holds 1e20 by 1e14: far
    // beyond where the function is linear, and the check failed on correct code.
    const std::vector<double> x = l.to_double_vector(), r = Tensor::randn(l.shape(), DType::Float64, gen).to_double_vector();
    std::vector<double> u(x.size());
    for (size_t i = 0; i < x.size(); ++i) u[i] = r[i] * cap.fd_step * std::max(std::fabs(x[i]), 0.01);
    steps.push_back(Tensor::from_vector(u, l.shape(), l.dtype()));
  }
  const std::function<Tensor()>& replay_forward = twin ? opt.float64_twin : forward;
  auto replay = [&](double sign) {
    {
      NoGradGuard no_grad;
      for (size_t i = 0; i < replayed.size(); ++i) replayed[i].copy_(add(originals[i], mul(steps[i], sign)));
    }
    auto r = std::make_unique<Recorder>(/*copy=*/true);
    replay_forward();
    NoGradGuard no_grad;
    for (size_t i = 0; i < replayed.size(); ++i) replayed[i].copy_(originals[i]);
    return r;
  };
  const auto plus = replay(+1), minus = replay(-1);
  if (plus->ops.size() != rec.ops.size() || minus->ops.size() != rec.ops.size()) {
    cap.fd_note = "the forward recorded a different number of ops when replayed; the finite-difference check did not run";
    return cap;
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    ExploreNode& n = cap.nodes[i];
    const int s = seq_of_op[i];
    if (n.step < 0 || s < 0 || !n.grad.defined()) continue;
    const Recorded &p = plus->ops[static_cast<size_t>(s)], &m = minus->ops[static_cast<size_t>(s)];
    if (p.op != n.op || m.op != n.op) {
      cap.fd_note = "the replayed forward ran other ops; the finite-difference check did not run";
      for (auto& x : cap.nodes) x.fd_checked = false;
      return cap;
    }
    const double h2 = 2 * cap.fd_step;
    double noise = 0;
    n.fd_lhs = dot_of_difference(n.grad, p.output, m.output, &noise) / h2;
    double rhs = 0;
    for (size_t k = 0; k < n.sent.size() && k < p.inputs.size(); ++k) {
      const Tensor &xp = p.inputs[k], &xm = m.inputs[k];
      if (!n.sent[k].defined() || !xp.defined() || !is_floating(xp.dtype())) continue;
      rhs += dot_of_difference(n.sent[k], xp, xm, &noise);
    }
    // An input that moved but got no gradient counts against the check (a dropped gradient):
    // its change is then unexplained on the right-hand side.
    n.fd_rhs = rhs / h2;
    n.fd_noise = noise / h2;
    n.fd_checked = true;
  }
  return cap;
}

}  // namespace ag::viz
