#include "models/param_table.h"

#include <stdexcept>

#include "base/checked.h"
#include "nn/init.h"
#include "nn/module.h"

namespace ag::models {

using checked::add;
using checked::mul;

const char* group_name(OptimGroup g) {
  switch (g) {
    case OptimGroup::Decay: return "decay";
    case OptimGroup::NoDecay: return "no_decay";
    case OptimGroup::Matrix: return "matrix";
  }
  return "?";
}

namespace {
int64_t numel_of(const ParamSpec& s) {
  int64_t n = 1;
  for (int64_t d : s.shape) n = mul(n, d, "parameters");
  return n;
}

// f(row) over the rows, a layer row counted `layers` times: sum of per(row) × copies.
template <class Per>
int64_t weighted_sum(const ParamTable& t, Per per) {
  const char* what = "parameters";
  int64_t n = 0;
  for (const auto& s : t.first) n = add(n, per(s), what);
  for (const auto& s : t.per_layer) n = add(n, mul(per(s), t.layers, what), what);
  for (const auto& s : t.last) n = add(n, per(s), what);
  return n;
}
}  // namespace

void ParamTable::for_each(const std::function<void(const std::string&, const ParamSpec&)>& f) const {
  for (const auto& s : first) f(s.name, s);
  for (int64_t i = 0; i < layers; ++i) {
    const std::string prefix = layer_prefix + std::to_string(i) + ".";
    for (const auto& s : per_layer) f(prefix + s.name, s);
  }
  for (const auto& s : last) f(s.name, s);
}

int64_t ParamTable::num_tensors() const {
  return weighted_sum(*this, [](const ParamSpec&) { return int64_t{1}; });
}

int64_t ParamTable::num_parameters() const { return weighted_sum(*this, numel_of); }

std::vector<std::pair<std::string, Shape>> ParamTable::shapes() const {
  std::vector<std::pair<std::string, Shape>> out;
  out.reserve(static_cast<size_t>(num_tensors()));
  for_each([&](const std::string& name, const ParamSpec& s) { out.emplace_back(name, s.shape); });
  return out;
}

std::vector<std::string> ParamTable::names(OptimGroup g) const {
  std::vector<std::string> out;
  for_each([&](const std::string& name, const ParamSpec& s) {
    if (s.group == g) out.push_back(name);
  });
  return out;
}

std::vector<std::string> ParamTable::lookup_tables() const {
  std::vector<std::string> out;
  for_each([&](const std::string& name, const ParamSpec& s) {
    if (s.group == OptimGroup::Decay && s.matmul_uses == 0) out.push_back(name);
  });
  return out;
}

double ParamTable::forward_flops(int64_t positions) const {
  // 2 FLOPs (a multiply and an add) per use of each element, at every position.
  const double uses = static_cast<double>(weighted_sum(*this, [](const ParamSpec& s) { return mul(s.matmul_uses, numel_of(s), "FLOPs"); }));
  return static_cast<double>(positions) * (2 * uses + activation_matmul_flops_per_position);
}

void init_parameters(nn::Module& m, const ParamTable& table, Generator& gen) {
  auto params = m.named_parameters();
  size_t i = 0;
  table.for_each([&](const std::string& name, const ParamSpec& s) {
    if (i >= params.size())
      throw std::logic_error("init_parameters: the table's '" + name + "' is not a parameter of the model");
    auto& [have, p] = params[i++];
    if (have != name || p.shape() != s.shape)
      throw std::logic_error("init_parameters: the model's parameter " + std::to_string(i - 1) + " is '" + have + "' " +
                             shape_str(p.shape()) + ", the table's '" + name + "' " + shape_str(s.shape));
    switch (s.init.kind) {
      case Init::Kind::Zeros: nn::init::zeros_(p); break;
      case Init::Kind::Ones: nn::init::ones_(p); break;
      case Init::Kind::Normal: nn::init::normal_(p, 0.0, s.init.scale, gen); break;
      case Init::Kind::Uniform: nn::init::uniform_(p, -s.init.scale, s.init.scale, gen); break;
    }
  });
  if (i != params.size())
    throw std::logic_error("init_parameters: the model's parameter '" + params[i].first + "' is not in the table");
}

}  // namespace ag::models
