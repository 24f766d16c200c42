// The optimizers' common part, after torch.optim.Optimizer (libtorch's torch::optim):
// parameter groups each with its own options, per-parameter state created by the first step
// that updates the parameter, zero_grad(), and state_dict()/load_state_dict().
//
//   optim::AdamW opt(model.parameters(), {.lr = 1e-3});
//   optim::AdamW opt({{decay, {.lr = 1e-3, .weight_decay = 0.1}},      // parameter groups
//                     {no_decay, {.lr = 1e-3, .weight_decay = 0.0}}});
//
// A group given with complete options (ParamGroup, above) keeps them: a field it does not set
// is torch's default. To give each group only what differs and take the rest from defaults, as
// torch 2 does with its constructor's keyword arguments, give the groups as PartialParamGroup
// (each optimizer's <Name>ParamGroupOptions: its options as std::optional fields) and the
// defaults beside them:
//
//   optim::AdamW opt({{decay, {}}, {no_decay, {.weight_decay = 0.0}}},   // inherit, or override
//                    {.lr = 1e-3, .weight_decay = 0.1});                  // the defaults
//
// A group's unset options are filled from the defaults when the group is added (torch's
// add_param_group), so param_groups() and state_dict() hold every group's complete options and
// a state dict round trip keeps each group's inherited and overridden values alike.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "autograd/tensor.h"
#include "optim/state_dict.h"

namespace ag::optim {

template <class Options>
struct ParamGroup {
  std::vector<Tensor> params;
  Options options{};
};

// A parameter group given in part: the options it sets (GroupOptions: optional fields); the
// others are the optimizer's defaults.
template <class GroupOptions>
struct PartialParamGroup {
  std::vector<Tensor> params;
  GroupOptions options{};
};

// field = value when value is set (the <Name>ParamGroupOptions::resolve of each optimizer).
template <class T>
void override_if(const std::optional<T>& value, T& field) {
  if (value) field = *value;
}

// What every optimizer has, whatever its options: used by schedulers, by code that only steps
// and clears gradients, and by code that saves and restores it (a training run's train state).
class Optimizer {
 public:
  Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer() = default;

  // One update of every parameter that has a .grad (the others are skipped, as torch's).
  virtual void step() = 0;
  // libtorch's step(closure): calls closure in grad mode (it re-evaluates the model and calls
  // backward, as LBFGS-style code does), then updates as step() does, and returns the loss it
  // returned (undefined for an empty closure).
  using LossClosure = std::function<Tensor()>;
  Tensor step(const LossClosure& closure);
  // set_to_none (torch 2's default) drops each .grad; otherwise it is zeroed in place.
  void zero_grad(bool set_to_none = true);
  // Every group's parameters, in order.
  std::vector<Tensor> parameters() const;

  virtual size_t num_param_groups() const = 0;
  virtual const std::vector<Tensor>& group_params(size_t group) const = 0;
  virtual double get_lr(size_t group) const = 0;
  virtual void set_lr(size_t group, double lr) = 0;
  // The lr a scheduler starts from (torch's group["initial_lr"]), set by the first scheduler
  // made on this optimizer.
  virtual std::optional<double>& initial_lr(size_t group) = 0;

  // torch's state_dict() and load_state_dict() (optim/state_dict.h). Loading checks everything
  // (group count and sizes, options, every state tensor's shape) before it changes anything,
  // and throws std::invalid_argument naming what does not fit.
  virtual StateDict state_dict() const = 0;
  virtual void load_state_dict(const StateDict& sd) = 0;
};

// A group's own options for an optimizer that declares none: every option from defaults().
struct InheritAllOptions {
  template <class Options>
  Options resolve(Options defaults) const {
    return defaults;
  }
};

// The part of an optimizer that depends on its options and per-parameter state; GroupOptions
// (std::optional fields and a resolve(defaults)) is what a PartialParamGroup may set.
template <class Options, class State, class GroupOptions = InheritAllOptions>
class OptimizerBase : public Optimizer {
 public:
  using ParamGroup = optim::ParamGroup<Options>;
  using PartialParamGroup = optim::PartialParamGroup<GroupOptions>;
  using Optimizer::step;

  // Options may be changed between steps (torch's opt.param_groups[0]["lr"] = ...).
  std::vector<ParamGroup>& param_groups() { return groups_; }
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  // What a group added without complete options inherits (torch's optimizer.defaults): the
  // constructor's options or defaults; torch's defaults for an optimizer made of complete groups.
  const Options& defaults() const { return defaults_; }
  Options& defaults() { return defaults_; }
  // Checks the options and that no parameter is in a group already.
  void add_param_group(ParamGroup group);
  // A group with the options it sets, the others from defaults() (torch's add_param_group).
  void add_param_group(std::vector<Tensor> params, const GroupOptions& options = {});

  // A parameter's state: nullptr until a step updated it.
  const State* state(const Tensor& p) const;
  State* state(const Tensor& p);
  void set_state(const Tensor& p, State s);

  StateDict state_dict() const override;
  // As torch: the same number of groups with the same sizes; the groups' options and the
  // state are replaced by the loaded ones, state tensors converted to their parameter's dtype.
  void load_state_dict(const StateDict& sd) override;

  size_t num_param_groups() const override { return groups_.size(); }
  const std::vector<Tensor>& group_params(size_t g) const override { return groups_.at(g).params; }
  double get_lr(size_t g) const override { return groups_.at(g).options.lr; }
  void set_lr(size_t g, double lr) override { groups_.at(g).options.lr = lr; }
  std::optional<double>& initial_lr(size_t g) override {
    initial_lrs_.resize(groups_.size());
    return initial_lrs_.at(g);
  }

 protected:
  explicit OptimizerBase(const char* name) : name_(name) {}
  // Adds the groups (the constructors' common part): at least one parameter in all.
  void init(std::vector<ParamGroup> groups);
  // The same for groups given in part, completed from defaults (which become defaults()).
  void init(std::vector<PartialParamGroup> groups, const Options& defaults);
  virtual void check_options(const Options& o) const = 0;  // throws torch's message
  virtual std::map<std::string, Tensor> state_to_map(const State& s) const = 0;
  virtual State state_from_map(const std::map<std::string, Tensor>& m, const Tensor& p) const = 0;

  const char* name_;  // "SGD", "Adam", "AdamW": the start of every message
  Options defaults_{};

 private:
  std::vector<ParamGroup> groups_;
  std::vector<std::optional<double>> initial_lrs_;
  std::unordered_map<const TensorImpl*, State> state_;  // by parameter identity, as torch's dict
};

// ---- implementation ----------------------------------------------------------------------

// Parameters an optimizer can take: float leaves, contiguous (the updates write through
// data<T>()). Throws std::invalid_argument naming the optimizer and the parameter.
void check_param(const char* optimizer, const Tensor& p, size_t group, size_t index);
// Converts one state tensor on loading: same shape as the parameter, the parameter's dtype.
Tensor state_tensor_for(const char* optimizer, const std::string& key, const Tensor& value, const Tensor& p);
// Before a step writes a parameter, its gradient and its state element by element: one shape for
// all, and the parameter dense. After `p.data = x` of another shape (or a view such as an expand)
// the loops would read and write past them: torch's size mismatch instead, naming the optimizer.
void check_step_operands(const char* optimizer, const Tensor& p, const Tensor& g, std::initializer_list<Tensor> state = {});
// The shortest text that reads back as v, as Python prints a float ("0.1", "-1e-08").
std::string repr(double v);

template <class O, class S, class G>
void OptimizerBase<O, S, G>::init(std::vector<ParamGroup> groups) {
  for (auto& g : groups) add_param_group(std::move(g));
  if (parameters().empty()) throw std::invalid_argument(std::string(name_) + ": optimizer got an empty parameter list");
}

template <class O, class S, class G>
void OptimizerBase<O, S, G>::init(std::vector<PartialParamGroup> groups, const O& defaults) {
  defaults_ = defaults;
  std::vector<ParamGroup> complete;
  for (auto& g : groups) complete.push_back({std::move(g.params), g.options.resolve(defaults)});
  init(std::move(complete));
}

template <class O, class S, class G>
void OptimizerBase<O, S, G>::add_param_group(std::vector<Tensor> params, const G& options) {
  add_param_group(ParamGroup{std::move(params), options.resolve(defaults_)});
}

template <class O, class S, class G>
void OptimizerBase<O, S, G>::add_param_group(ParamGroup group) {
  check_options(group.options);
  for (size_t i = 0; i < group.params.size(); ++i) {
    const Tensor& p = group.params[i];
    check_param(name_, p, groups_.size(), i);
    for (size_t j = 0; j < i; ++j)
      if (group.params[j].same(p))
        throw std::invalid_argument(std::string(name_) + ": parameter group " + std::to_string(groups_.size()) +
                                    " holds parameter " + std::to_string(j) + " twice (at " + std::to_string(i) + ")");
    for (const auto& other : groups_)
      for (const Tensor& q : other.params)
        if (q.same(p)) throw std::invalid_argument(std::string(name_) + ": some parameters appear in more than one parameter group");
  }
  groups_.push_back(std::move(group));
  initial_lrs_.resize(groups_.size());
}

template <class O, class S, class G>
const S* OptimizerBase<O, S, G>::state(const Tensor& p) const {
  auto it = state_.find(&p.impl());
  return it == state_.end() ? nullptr : &it->second;
}

template <class O, class S, class G>
S* OptimizerBase<O, S, G>::state(const Tensor& p) {
  auto it = state_.find(&p.impl());
  return it == state_.end() ? nullptr : &it->second;
}

template <class O, class S, class G>
void OptimizerBase<O, S, G>::set_state(const Tensor& p, S s) {
  for (const auto& g : groups_)
    for (const Tensor& q : g.params)
      if (q.same(p)) {
        state_[&p.impl()] = std::move(s);
        return;
      }
  throw std::invalid_argument(std::string(name_) + ": set_state for a tensor that is not one of its parameters");
}

template <class O, class S, class G>
StateDict OptimizerBase<O, S, G>::state_dict() const {
  StateDict sd;
  int64_t index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    StateDict::Group group{options_to_map(groups_[g].options), {}, g < initial_lrs_.size() ? initial_lrs_[g] : std::nullopt};
    for (const Tensor& p : groups_[g].params) {
      if (const S* s = state(p)) sd.state[index] = state_to_map(*s);
      group.params.push_back(index++);
    }
    sd.param_groups.push_back(std::move(group));
  }
  return sd;
}

template <class O, class S, class G>
void OptimizerBase<O, S, G>::load_state_dict(const StateDict& sd) {
  const std::string who = std::string(name_) + ".load_state_dict: ";
  if (sd.param_groups.size() != groups_.size())
    throw std::invalid_argument(who + "loaded state dict has a different number of parameter groups (" +
                                std::to_string(sd.param_groups.size()) + ", the optimizer has " + std::to_string(groups_.size()) + ")");
  std::map<int64_t, const Tensor*> by_index;
  std::vector<O> options;
  int64_t index = 0;
  for (size_t g = 0; g < groups_.size(); ++g) {
    const auto& saved = sd.param_groups[g];
    if (saved.params.size() != groups_[g].params.size())
      throw std::invalid_argument(who + "loaded state dict contains a parameter group that doesn't match the size of optimizer's group (group " +
                                  std::to_string(g) + ": " + std::to_string(saved.params.size()) + " parameters, the optimizer's " +
                                  std::to_string(groups_[g].params.size()) + ")");
    // An option the saved group lacks keeps this group's value (a file from before it existed).
    options.push_back(options_from_map(saved.options, groups_[g].options, who + "group " + std::to_string(g)));
    check_options(options.back());
    for (size_t i = 0; i < saved.params.size(); ++i) by_index[saved.params[i]] = &groups_[g].params[i];
    index += static_cast<int64_t>(saved.params.size());
  }
  if (static_cast<int64_t>(by_index.size()) != index) throw std::invalid_argument(who + "a parameter index appears twice in param_groups");
  std::unordered_map<const TensorImpl*, S> loaded;  // everything is checked before anything changes
  for (const auto& [i, m] : sd.state) {
    auto it = by_index.find(i);
    if (it == by_index.end()) throw std::invalid_argument(who + "state for parameter " + std::to_string(i) + ", which no group holds");
    loaded[&it->second->impl()] = state_from_map(m, *it->second);
  }
  for (size_t g = 0; g < groups_.size(); ++g) {
    groups_[g].options = options[g];
    initial_lr(g) = sd.param_groups[g].initial_lr;
  }
  state_ = std::move(loaded);
}

}  // namespace ag::optim
