#include "models/param_table.h"

#include <set>
#include <stdexcept>

#include "base/checked.h"

namespace ag::models {

using checked::add;
using checked::mul;

namespace {
int64_t numel_of(const nn::ParamSpec& s) {
  int64_t n = 1;
  for (int64_t d : s.shape) n = mul(n, d, "parameters");
  return n;
}

// f(row) over the rows, a layer row counted `layers` times: sum of per(row) × copies.
template <class Per>
int64_t weighted_sum(const ParamTable& t, Per per) {
  const char* what = "parameters";
  int64_t n = 0;
  for (const auto& r : t.first) n = add(n, per(r.spec), what);
  for (const auto& r : t.per_layer) n = add(n, mul(per(r.spec), t.layers, what), what);
  for (const auto& r : t.last) n = add(n, per(r.spec), what);
  return n;
}
}  // namespace

ParamTable ParamTable::of(const nn::Module& model, const std::string& layer_prefix, int64_t layers) {
  ParamTable t;
  t.layer_prefix = layer_prefix;
  t.layers = layers;
  const auto specs = model.named_param_specs();
  std::set<std::string> described;
  const std::string layer0 = layer_prefix + "0.";
  for (const auto& [name, spec] : specs) {
    described.insert(name);
    const bool in_layer = !layer_prefix.empty() && name.starts_with(layer_prefix);
    if (in_layer && !name.starts_with(layer0))
      throw std::logic_error("ParamTable::of: '" + name + "' is in a second layer; describe a model of one layer");
    if (in_layer && !t.last.empty())
      throw std::logic_error("ParamTable::of: '" + name + "' of the layers comes after '" + t.last.back().name + "'");
    if (in_layer) t.per_layer.push_back({name.substr(layer0.size()), spec});
    else (t.per_layer.empty() ? t.first : t.last).push_back({name, spec});
  }
  for (const auto& [name, p] : model.named_parameters())
    if (!described.count(name))
      throw std::logic_error("ParamTable::of: " + model.name() + "'s parameter '" + name +
                             "' was registered without a description (nn/param_spec.h)");
  return t;
}

void ParamTable::for_each(const std::function<void(const std::string&, const nn::ParamSpec&)>& f) const {
  for (const auto& r : first) f(r.name, r.spec);
  for (int64_t i = 0; i < layers; ++i) {
    const std::string prefix = layer_prefix + std::to_string(i) + ".";
    for (const auto& r : per_layer) f(prefix + r.name, r.spec);
  }
  for (const auto& r : last) f(r.name, r.spec);
}

int64_t ParamTable::num_tensors() const {
  return weighted_sum(*this, [](const nn::ParamSpec&) { return int64_t{1}; });
}

int64_t ParamTable::num_parameters() const { return weighted_sum(*this, numel_of); }

std::vector<std::pair<std::string, Shape>> ParamTable::shapes() const {
  std::vector<std::pair<std::string, Shape>> out;
  out.reserve(static_cast<size_t>(num_tensors()));
  for_each([&](const std::string& name, const nn::ParamSpec& s) { out.emplace_back(name, s.shape); });
  return out;
}

std::vector<std::string> ParamTable::names(OptimGroup g) const {
  std::vector<std::string> out;
  for_each([&](const std::string& name, const nn::ParamSpec& s) {
    if (s.group == g) out.push_back(name);
  });
  return out;
}

std::vector<std::string> ParamTable::lookup_tables() const {
  std::vector<std::string> out;
  for_each([&](const std::string& name, const nn::ParamSpec& s) {
    if (s.group == OptimGroup::Decay && s.matmul_uses == 0) out.push_back(name);
  });
  return out;
}

double ParamTable::forward_flops(int64_t positions) const {
  // 2 FLOPs (a multiply and an add) per use of each element, at every position.
  const double uses = static_cast<double>(weighted_sum(*this, [](const nn::ParamSpec& s) { return mul(s.matmul_uses, numel_of(s), "FLOPs"); }));
  return static_cast<double>(positions) * (2 * uses + activation_matmul_flops_per_position);
}

}  // namespace ag::models
