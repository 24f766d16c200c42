// attograd.optim's engines: the C++ optimizers (optim/*.h) and schedulers
// (optim/lr_scheduler.h) as Python objects, which python/attograd/optim/ wraps with torch's
// classes. A group's options cross as a dict with torch's keys ("lr", "betas", ...): the
// Python optimizer keeps torch's param_groups (a list of dicts the user may change between
// steps) and hands each group's dict to C++ before a step; keys C++ does not know are left to
// Python. A step runs with the GIL released.
//
// Bad options, parameters and state dicts raise ValueError, as torch's optimizers do, with the
// C++ message.
#include <nanobind/stl/function.h>
#include <nanobind/stl/map.h>

#include <stdexcept>
#include <type_traits>
#include <utility>

#include "autograd/errors.h"
#include "common.h"
#include "gil.h"
#include "optim/adam.h"
#include "optim/lr_scheduler.h"
#include "optim/muon.h"
#include "optim/sgd.h"

namespace agpy {

namespace {

using ag::Tensor;
namespace optim = ag::optim;
namespace sched = ag::optim::lr_scheduler;

// Runs f, raising its std::invalid_argument as ValueError (torch's type for these).
template <class F>
auto value_errors(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const ag::IndexError&) {
    throw;
  } catch (const ag::TypeError&) {
    throw;
  } catch (const ag::ValueError&) {
    throw;
  } catch (const std::invalid_argument& e) {
    throw ag::ValueError(e.what());
  }
}

// dict[key] into field when the dict has it.
template <class T>
void read_key(nb::handle d, const char* key, T& field) {
  nb::dict dict = nb::borrow<nb::dict>(d);
  if (!dict.contains(key)) return;
  nb::handle v = dict[key];
  if (!nb::try_cast(v, field))
    throw nb::type_error(("optimizer option '" + std::string(key) + "' has the wrong type: " +
                          nb::cast<std::string>(nb::repr(v)))
                             .c_str());
}

// Each options struct as torch's keys, both ways.
nb::dict to_dict(const optim::SGDOptions& o) {
  nb::dict d;
  d["lr"] = o.lr, d["momentum"] = o.momentum, d["dampening"] = o.dampening, d["weight_decay"] = o.weight_decay,
  d["nesterov"] = o.nesterov;
  return d;
}
void from_dict(nb::handle d, optim::SGDOptions& o) {
  read_key(d, "lr", o.lr), read_key(d, "momentum", o.momentum), read_key(d, "dampening", o.dampening);
  read_key(d, "weight_decay", o.weight_decay), read_key(d, "nesterov", o.nesterov);
}

template <class O>
nb::dict adam_to_dict(const O& o) {
  nb::dict d;
  d["lr"] = o.lr, d["betas"] = o.betas, d["eps"] = o.eps, d["weight_decay"] = o.weight_decay, d["amsgrad"] = o.amsgrad;
  return d;
}
template <class O>
void adam_from_dict(nb::handle d, O& o) {
  read_key(d, "lr", o.lr), read_key(d, "betas", o.betas), read_key(d, "eps", o.eps);
  read_key(d, "weight_decay", o.weight_decay), read_key(d, "amsgrad", o.amsgrad);
}
nb::dict to_dict(const optim::AdamOptions& o) { return adam_to_dict(o); }
nb::dict to_dict(const optim::AdamWOptions& o) { return adam_to_dict(o); }
void from_dict(nb::handle d, optim::AdamOptions& o) { adam_from_dict(d, o); }
void from_dict(nb::handle d, optim::AdamWOptions& o) { adam_from_dict(d, o); }

nb::dict to_dict(const optim::MuonOptions& o) {
  nb::dict d;
  d["lr"] = o.lr, d["weight_decay"] = o.weight_decay, d["momentum"] = o.momentum, d["nesterov"] = o.nesterov;
  d["ns_coefficients"] = o.ns_coefficients, d["eps"] = o.eps, d["ns_steps"] = o.ns_steps;
  d["adjust_lr_fn"] = o.adjust_lr_fn.empty() ? nb::none() : nb::object(nb::str(o.adjust_lr_fn.c_str()));
  return d;
}
void from_dict(nb::handle d, optim::MuonOptions& o) {
  read_key(d, "lr", o.lr), read_key(d, "weight_decay", o.weight_decay), read_key(d, "momentum", o.momentum);
  read_key(d, "nesterov", o.nesterov), read_key(d, "ns_coefficients", o.ns_coefficients), read_key(d, "eps", o.eps);
  read_key(d, "ns_steps", o.ns_steps);
  nb::dict dict = nb::borrow<nb::dict>(d);
  if (dict.contains("adjust_lr_fn")) {
    nb::handle v = dict["adjust_lr_fn"];
    o.adjust_lr_fn = v.is_none() ? std::string() : nb::cast<std::string>(v);
  }
}

template <class Opt>
using OptionsOf = decltype(std::declval<typename Opt::ParamGroup>().options);

template <class Opt>
typename Opt::ParamGroup group_of(nb::handle params, nb::handle options) {
  typename Opt::ParamGroup g;
  g.params = nb::cast<std::vector<Tensor>>(params);
  from_dict(options, g.options);
  return g;
}

// A state dict group's options hold either the optimizer's options struct or (the C++ API after
// the optim::StateDict round) a map of torch's names to values; both cross as the struct, and so
// as the same Python dict. options_from_map/options_to_map are found by ADL on the struct, so
// this compiles against either API.
template <class Opt>
using CppStateDict = std::decay_t<decltype(std::declval<const Opt&>().state_dict())>;

template <class Opt, class Group>
OptionsOf<Opt> options_in(const Group& g) {
  if constexpr (std::is_same_v<std::decay_t<decltype(g.options)>, OptionsOf<Opt>>)
    return g.options;
  else
    return options_from_map(g.options, OptionsOf<Opt>{}, "load_state_dict: group");
}

template <class Opt, class Group>
void set_options_in(Group& g, const OptionsOf<Opt>& o) {
  if constexpr (std::is_same_v<std::decay_t<decltype(g.options)>, OptionsOf<Opt>>)
    g.options = o;
  else
    g.options = options_to_map(o);
}

// The state dict as torch's: {"state": {index: {name: tensor}}, "param_groups": [{options..., "params": [...]}]}.
template <class Opt>
nb::dict state_dict_of(const Opt& opt) {
  const CppStateDict<Opt> sd = opt.state_dict();
  nb::dict state;
  for (const auto& [index, tensors] : sd.state) {
    nb::dict per;
    for (const auto& [name, t] : tensors) per[name.c_str()] = t;
    state[nb::int_(index)] = per;
  }
  nb::list groups;
  for (const auto& g : sd.param_groups) {
    nb::dict d = to_dict(options_in<Opt>(g));
    if (g.initial_lr) d["initial_lr"] = *g.initial_lr;
    d["params"] = nb::cast(g.params);
    groups.append(d);
  }
  nb::dict out;
  out["state"] = state;
  out["param_groups"] = groups;
  return out;
}

template <class Opt>
void load_state_dict_into(Opt& opt, nb::dict sd) {
  if (!sd.contains("state") || !sd.contains("param_groups"))
    throw ag::ValueError("load_state_dict: a state dict has the keys 'state' and 'param_groups'");
  CppStateDict<Opt> loaded;
  for (auto [index, tensors] : nb::borrow<nb::dict>(sd["state"])) {
    auto& per = loaded.state[nb::cast<int64_t>(nb::int_(index))];
    for (auto [name, t] : nb::borrow<nb::dict>(tensors)) per[nb::cast<std::string>(name)] = nb::cast<Tensor>(t);
  }
  for (nb::handle g : sd["param_groups"]) {
    typename decltype(loaded.param_groups)::value_type group;
    OptionsOf<Opt> options;
    from_dict(g, options);
    set_options_in<Opt>(group, options);
    nb::dict d = nb::borrow<nb::dict>(g);
    if (!d.contains("params")) throw ag::ValueError("load_state_dict: a parameter group without 'params'");
    group.params = nb::cast<std::vector<int64_t>>(d["params"]);
    if (d.contains("initial_lr") && !d["initial_lr"].is_none()) group.initial_lr = nb::cast<double>(d["initial_lr"]);
    loaded.param_groups.push_back(std::move(group));
  }
  value_errors([&] { opt.load_state_dict(loaded); });
}

template <class Opt>
void bind_optimizer(nb::module_& m, const char* name) {
  nb::class_<Opt, optim::Optimizer>(m, name)
      .def("__init__", [](Opt* self, nb::list groups) {
        std::vector<typename Opt::ParamGroup> cpp;
        for (nb::handle g : groups) cpp.push_back(group_of<Opt>(nb::borrow<nb::tuple>(g)[0], nb::borrow<nb::tuple>(g)[1]));
        value_errors([&] { new (self) Opt(std::move(cpp)); });
      }, nb::arg("groups"), "groups: a list of (parameters, options dict)")
      .def("add_param_group", [](Opt& opt, nb::handle params, nb::dict options) {
        value_errors([&] { opt.add_param_group(group_of<Opt>(params, options)); });
      }, nb::arg("params"), nb::arg("options"))
      .def("group_options", [](const Opt& opt, size_t g) { return to_dict(opt.param_groups().at(g).options); },
           nb::arg("group"))
      .def("set_group_options", [](Opt& opt, size_t g, nb::dict options) {
        auto& group = opt.param_groups().at(g);
        OptionsOf<Opt> o = group.options;
        from_dict(options, o);
        group.options = o;
      }, nb::arg("group"), nb::arg("options"))
      .def("state_dict", &state_dict_of<Opt>)
      .def("load_state_dict", &load_state_dict_into<Opt>, nb::arg("state_dict"));
}

}  // namespace

void bind_optim(nb::module_& m) {
  nb::class_<optim::Optimizer>(m, "_Optimizer")
      .def("step", [](optim::Optimizer& opt) {
        nb::gil_scoped_release release;
        opt.step();
      })
      .def("zero_grad", &optim::Optimizer::zero_grad, nb::arg("set_to_none") = true)
      .def("num_param_groups", &optim::Optimizer::num_param_groups)
      .def("group_params", &optim::Optimizer::group_params, nb::arg("group"))
      .def("get_lr", &optim::Optimizer::get_lr, nb::arg("group"))
      .def("set_lr", &optim::Optimizer::set_lr, nb::arg("group"), nb::arg("lr"))
      .def("get_initial_lr", [](optim::Optimizer& opt, size_t g) { return opt.initial_lr(g); }, nb::arg("group"));
  bind_optimizer<optim::SGD>(m, "_SGD");
  bind_optimizer<optim::Adam>(m, "_Adam");
  bind_optimizer<optim::AdamW>(m, "_AdamW");
  bind_optimizer<optim::Muon>(m, "_Muon");

  // The schedulers keep a reference to their optimizer: keep_alive holds its Python object.
  nb::class_<sched::LRScheduler>(m, "_LRScheduler")
      .def("step", &sched::LRScheduler::step)
      .def("get_last_lr", &sched::LRScheduler::get_last_lr)
      .def_prop_ro("last_epoch", &sched::LRScheduler::last_epoch)
      .def_prop_ro("base_lrs", &sched::LRScheduler::base_lrs);
  nb::class_<sched::StepLR, sched::LRScheduler>(m, "_StepLR")
      .def("__init__", [](sched::StepLR* self, optim::Optimizer& opt, int64_t step_size, double gamma) {
        value_errors([&] { new (self) sched::StepLR(opt, step_size, gamma); });
      }, nb::arg("optimizer"), nb::arg("step_size"), nb::arg("gamma"), nb::keep_alive<1, 2>());
  nb::class_<sched::CosineAnnealingLR, sched::LRScheduler>(m, "_CosineAnnealingLR")
      .def("__init__", [](sched::CosineAnnealingLR* self, optim::Optimizer& opt, int64_t T_max, double eta_min) {
        value_errors([&] { new (self) sched::CosineAnnealingLR(opt, T_max, eta_min); });
      }, nb::arg("optimizer"), nb::arg("T_max"), nb::arg("eta_min"), nb::keep_alive<1, 2>());
  nb::class_<sched::LinearLR, sched::LRScheduler>(m, "_LinearLR")
      .def("__init__", [](sched::LinearLR* self, optim::Optimizer& opt, double start, double end, int64_t total_iters) {
        value_errors([&] { new (self) sched::LinearLR(opt, start, end, total_iters); });
      }, nb::arg("optimizer"), nb::arg("start_factor"), nb::arg("end_factor"), nb::arg("total_iters"), nb::keep_alive<1, 2>());
  nb::class_<sched::LambdaLR, sched::LRScheduler>(m, "_LambdaLR")
      .def("__init__", [](sched::LambdaLR* self, optim::Optimizer& opt, std::vector<sched::LambdaLR::Fn> fns) {
        value_errors([&] { new (self) sched::LambdaLR(opt, std::move(fns)); });
      }, nb::arg("optimizer"), nb::arg("lr_lambdas"), nb::keep_alive<1, 2>());
  nb::class_<sched::ConstantLR, sched::LRScheduler>(m, "_ConstantLR")
      .def("__init__", [](sched::ConstantLR* self, optim::Optimizer& opt, double factor, int64_t total_iters) {
        value_errors([&] { new (self) sched::ConstantLR(opt, factor, total_iters); });
      }, nb::arg("optimizer"), nb::arg("factor"), nb::arg("total_iters"), nb::keep_alive<1, 2>());
  nb::class_<sched::ExponentialLR, sched::LRScheduler>(m, "_ExponentialLR")
      .def("__init__", [](sched::ExponentialLR* self, optim::Optimizer& opt, double gamma) {
        value_errors([&] { new (self) sched::ExponentialLR(opt, gamma); });
      }, nb::arg("optimizer"), nb::arg("gamma"), nb::keep_alive<1, 2>());
  nb::class_<sched::MultiStepLR, sched::LRScheduler>(m, "_MultiStepLR")
      .def("__init__", [](sched::MultiStepLR* self, optim::Optimizer& opt, std::vector<int64_t> milestones, double gamma) {
        value_errors([&] { new (self) sched::MultiStepLR(opt, std::move(milestones), gamma); });
      }, nb::arg("optimizer"), nb::arg("milestones"), nb::arg("gamma"), nb::keep_alive<1, 2>());
  nb::class_<sched::PolynomialLR, sched::LRScheduler>(m, "_PolynomialLR")
      .def("__init__", [](sched::PolynomialLR* self, optim::Optimizer& opt, int64_t total_iters, double power) {
        value_errors([&] { new (self) sched::PolynomialLR(opt, total_iters, power); });
      }, nb::arg("optimizer"), nb::arg("total_iters"), nb::arg("power"), nb::keep_alive<1, 2>());
  nb::class_<sched::MultiplicativeLR, sched::LRScheduler>(m, "_MultiplicativeLR")
      .def("__init__", [](sched::MultiplicativeLR* self, optim::Optimizer& opt, std::vector<sched::MultiplicativeLR::Fn> fns) {
        value_errors([&] { new (self) sched::MultiplicativeLR(opt, std::move(fns)); });
      }, nb::arg("optimizer"), nb::arg("lr_lambdas"), nb::keep_alive<1, 2>());
  nb::class_<sched::SequentialLR, sched::LRScheduler>(m, "_SequentialLR")
      .def("__init__", [](sched::SequentialLR* self, optim::Optimizer& opt,
                          std::vector<std::shared_ptr<sched::LRScheduler>> schedulers, std::vector<int64_t> milestones) {
        value_errors([&] { new (self) sched::SequentialLR(opt, std::move(schedulers), std::move(milestones)); });
      }, nb::arg("optimizer"), nb::arg("schedulers"), nb::arg("milestones"), nb::keep_alive<1, 2>());
}

}  // namespace agpy
