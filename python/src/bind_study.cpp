// The study tools as data (python/attograd/study/ gives them notebook pictures): the seed walk
// of `attograd explain attention` step by step, a model's attention maps and dLoss/dScores, the
// autograd graph as DOT and as SVG, the explore page of one forward and backward pass, and the
// gradient report. Matrices cross as float64 Tensors, reports as dicts.
#include <nanobind/stl/function.h>

#include <cfloat>

#include "autograd/errors.h"
#include "common.h"
#include "gil.h"
#include "models/language_model.h"
#include "train/logging/grad_report.h"
#include "viz/attention_maps.h"
#include "viz/attention_walk.h"
#include "viz/explore.h"
#include "viz/explore_html.h"
#include "viz/graph_export.h"
#include "viz/graph_svg.h"
#include "viz/graphviz.h"
#include "viz/image.h"

namespace agpy {

namespace {

using ag::Tensor;
namespace viz = ag::viz;

Tensor tensor_of(const viz::Matrix& m) {
  return Tensor::from_vector(m.v, {m.rows, m.cols}, ag::DType::Float64);
}

viz::Matrix matrix_of(const Tensor& t, const char* name) {
  if (t.dim() != 2) throw ag::ValueError(std::string(name) + " must be a matrix (2-d), got " + ag::describe(t));
  viz::Matrix m(static_cast<int>(t.size(0)), static_cast<int>(t.size(1)));
  m.v = t.to_double_vector();
  return m;
}

nb::dict norms_dict(const ag::train::GradNorms& n) {
  nb::dict d;
  d["name"] = n.name;
  d["shape"] = nb::tuple(nb::cast(n.shape));
  d["numel"] = n.numel;
  d["tensors"] = n.tensors;
  d["value_norm"] = n.value_norm;
  d["grad_norm"] = n.grad_norm;
  d["ratio"] = n.ratio();
  return d;
}

}  // namespace

void bind_study(nb::module_& m) {
  // ---- the attention walk ----------------------------------------------------------------------
  nb::class_<viz::AttentionWalkStep>(m, "_AttentionWalkStep")
      .def_ro("quantity", &viz::AttentionWalkStep::quantity)
      .def_ro("formula", &viz::AttentionWalkStep::formula)
      .def_ro("formula_mathml", &viz::AttentionWalkStep::formula_mathml)
      .def_prop_ro("by_hand", [](const viz::AttentionWalkStep& s) { return tensor_of(s.by_hand); })
      .def_prop_ro("engine", [](const viz::AttentionWalkStep& s) { return tensor_of(s.engine); })
      .def_prop_ro("finite_diff", [](const viz::AttentionWalkStep& s) { return tensor_of(s.finite_diff); })
      .def_ro("engine_diff", &viz::AttentionWalkStep::engine_diff)
      .def_ro("fd_diff", &viz::AttentionWalkStep::fd_diff)
      .def_ro("fd_floor", &viz::AttentionWalkStep::fd_floor)
      .def("agrees", &viz::AttentionWalkStep::agrees);
  nb::class_<viz::AttentionWalk>(m, "_AttentionWalk")
      .def_prop_ro("q", [](const viz::AttentionWalk& w) { return tensor_of(w.in.q); })
      .def_prop_ro("k", [](const viz::AttentionWalk& w) { return tensor_of(w.in.k); })
      .def_prop_ro("v", [](const viz::AttentionWalk& w) { return tensor_of(w.in.v); })
      .def_prop_ro("g", [](const viz::AttentionWalk& w) { return tensor_of(w.in.g); })
      .def_prop_ro("scores", [](const viz::AttentionWalk& w) { return tensor_of(w.scores); })
      .def_prop_ro("weights", [](const viz::AttentionWalk& w) { return tensor_of(w.weights); })
      .def_prop_ro("context", [](const viz::AttentionWalk& w) { return tensor_of(w.context); })
      .def_ro("loss", &viz::AttentionWalk::loss)
      .def_ro("fd_step", &viz::AttentionWalk::fd_step)
      .def_ro("fd_floor", &viz::AttentionWalk::fd_floor)
      .def_ro("steps", &viz::AttentionWalk::steps)
      .def("agrees", &viz::AttentionWalk::agrees)
      .def("text", [](const viz::AttentionWalk& w) { return viz::attention_walk_text(w); })
      .def("html", [](const viz::AttentionWalk& w) { return viz::attention_walk_html(w); });
  m.def("_attention_walk", [](std::optional<Tensor> q, std::optional<Tensor> k, std::optional<Tensor> v,
                              std::optional<Tensor> g, std::optional<Tensor> mask, bool causal) {
    viz::AttentionWalkInput in = viz::AttentionWalkInput::seed();
    if (q) in.q = matrix_of(*q, "Q");
    if (k) in.k = matrix_of(*k, "K");
    if (v) in.v = matrix_of(*v, "V");
    if (g) in.g = matrix_of(*g, "G");
    in.causal = causal;
    if (mask) {
      if (mask->dtype() != ag::DType::Bool) throw ag::TypeError("mask must be a bool tensor (true: may NOT attend)");
      for (double x : mask->to_double_vector()) in.mask.push_back(x != 0);
    }
    try {
      viz::check_attention_walk_input(in);
    } catch (const std::invalid_argument& e) {
      throw ag::ValueError(e.what());
    }
    if (auto p = viz::attention_walk_range_problem(in, DBL_MAX))
      throw ag::ValueError(p->quantity + " holds " + p->value + ", beyond the range of float64: the walk would compare infinities");
    nb::gil_scoped_release release;
    return viz::walk_attention_backward(in);
  }, nb::arg("q").none(), nb::arg("k").none(), nb::arg("v").none(), nb::arg("g").none(), nb::arg("mask").none(),
     nb::arg("causal"));

  // ---- a model's attention ------------------------------------------------------------------------
  m.def("_capture_attention", [](const ag::models::LanguageModel& lm, const ag::data::CharTokenizer& tok,
                                 const std::string& text) {
    viz::AttentionMaps maps;
    {
      nb::gil_scoped_release release;
      maps = viz::capture_attention(lm, tok, text);
    }
    return nb::make_tuple(maps.chars, maps.layers);
  }, nb::arg("model"), nb::arg("tokenizer"), nb::arg("text"));
  m.def("_capture_attention_grads", [](const ag::models::LanguageModel& lm, const ag::data::CharTokenizer& tok,
                                       const std::string& text) {
    viz::AttentionGrads g;
    {
      nb::gil_scoped_release release;
      g = viz::capture_attention_grads(lm, tok, text);
    }
    return nb::make_tuple(g.maps.chars, g.maps.layers, g.grads, g.score_grads, g.loss);
  }, nb::arg("model"), nb::arg("tokenizer"), nb::arg("text"));

  // The same as PNG pictures (attograd's own renderer: no plotting library needed).
  m.def("_attention_png", [](const ag::models::LanguageModel& lm, const ag::data::CharTokenizer& tok,
                             const std::string& text, bool grads) {
    std::string png;
    {
      nb::gil_scoped_release release;
      png = grads ? viz::render_attention_grad_grid(viz::capture_attention_grads(lm, tok, text)).encode_png()
                  : viz::render_attention_grid(viz::capture_attention(lm, tok, text)).encode_png();
    }
    return nb::bytes(png.data(), png.size());
  }, nb::arg("model"), nb::arg("tokenizer"), nb::arg("text"), nb::arg("grads"));

  // ---- the autograd graph ----------------------------------------------------------------------------
  m.def("_graph_dot", [](const Tensor& root, const std::string& title, bool left_to_right) {
    return ag::to_dot(root, ag::DotOptions{title, true, left_to_right, nullptr});
  }, nb::arg("root"), nb::arg("title"), nb::arg("left_to_right"));
  m.def("_graph_svg", [](const Tensor& root, const std::string& title) {
    return viz::graph_svg(root, ag::DotOptions{title, true, false, nullptr});
  }, nb::arg("root"), nb::arg("title"));
  m.def("_graph_stats", [](const Tensor& root) {
    const ag::GraphStats s = ag::graph_stats(root);
    return nb::make_tuple(s.op_nodes, s.leaf_nodes, s.edges);
  }, nb::arg("root"));
  m.def("_find_dot", &viz::find_dot);

  // ---- the explore page ------------------------------------------------------------------------------
  nb::class_<viz::ExploreCapture>(m, "_ExploreCapture")
      .def_ro("title", &viz::ExploreCapture::title)
      .def_ro("loss", &viz::ExploreCapture::loss)
      .def_ro("order", &viz::ExploreCapture::order)
      .def_ro("fd_step", &viz::ExploreCapture::fd_step)
      .def_ro("fd_note", &viz::ExploreCapture::fd_note)
      .def("fd_tolerance", &viz::ExploreCapture::fd_tolerance)
      .def("fd_failures", &viz::ExploreCapture::fd_failures)
      .def("nodes", [](const viz::ExploreCapture& c) {
        nb::list out;
        for (const viz::ExploreNode& n : c.nodes) {
          nb::dict d;
          d["leaf"] = n.leaf, d["op"] = n.op, d["shape"] = nb::tuple(nb::cast(n.shape)), d["dtype"] = n.dtype;
          d["value"] = n.value, d["grad"] = n.grad;
          if (!n.leaf) {
            d["where"] = n.where, d["inputs"] = n.inputs, d["sent"] = n.sent, d["step"] = n.step;
            d["formula"] = n.formula ? nb::object(nb::str(n.formula->text)) : nb::none();
            d["fd_checked"] = n.fd_checked;
            if (n.fd_checked) d["fd_lhs"] = n.fd_lhs, d["fd_rhs"] = n.fd_rhs, d["fd_relative_error"] = n.fd_relative_error();
          } else {
            d["leaf_sum_diff"] = n.leaf_sum_diff;
          }
          out.append(d);
        }
        return out;
      })
      .def("json", [](const viz::ExploreCapture& c) { return viz::explore_json(c); })
      .def("html", [](const viz::ExploreCapture& c, const std::string& command) {
        return viz::explore_html(c, viz::ExplorePageOptions{command});
      }, nb::arg("command"));
  // forward() is Python code: it runs with the GIL held (the C++ capture calls it three times).
  m.def("_explore", [](std::function<Tensor()> forward, const std::vector<Tensor>& leaves, const std::string& title,
                       uint64_t fd_seed, double fd_step) {
    viz::ExploreOptions o;
    o.title = title, o.fd_seed = fd_seed, o.fd_step = fd_step;
    return viz::capture_explore(forward, leaves, o);
  }, nb::arg("forward"), nb::arg("leaves"), nb::arg("title"), nb::arg("fd_seed"), nb::arg("fd_step"));

  // ---- the gradient report ------------------------------------------------------------------------------
  m.def("_grad_report", [](const std::vector<std::pair<std::string, Tensor>>& named) {
    const ag::train::GradReport r = ag::train::grad_report(named);
    nb::dict d;
    nb::list params, layers;
    for (const auto& p : r.params) params.append(norms_dict(p));
    for (const auto& l : r.layers) layers.append(norms_dict(l));
    d["params"] = params, d["layers"] = layers, d["total"] = norms_dict(r.total);
    d["without_grad"] = r.without_grad;
    d["max_ratio"] = r.max_ratio >= 0 ? nb::object(nb::str(r.params[static_cast<size_t>(r.max_ratio)].name.c_str())) : nb::none();
    d["text"] = ag::train::format_grad_report(r);
    d["summary"] = ag::train::grad_report_summary(r);
    return d;
  }, nb::arg("named_parameters"));
}

}  // namespace agpy
