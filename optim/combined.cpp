#include "optim/combined.h"

#include <set>
#include <stdexcept>
#include <string>

namespace ag::optim {

CombinedOptimizer::CombinedOptimizer(std::vector<std::unique_ptr<Optimizer>> parts) : parts_(std::move(parts)) {
  if (parts_.empty()) throw std::invalid_argument("CombinedOptimizer: no optimizers to combine");
  std::set<const TensorImpl*> seen;
  for (size_t i = 0; i < parts_.size(); ++i) {
    if (!parts_[i]) throw std::invalid_argument("CombinedOptimizer: optimizer " + std::to_string(i) + " is null");
    for (const Tensor& p : parts_[i]->parameters())
      if (!seen.insert(&p.impl()).second)
        throw std::invalid_argument("CombinedOptimizer: some parameters appear in more than one optimizer (optimizer " +
                                    std::to_string(i) + ")");
  }
}

void CombinedOptimizer::step() {
  for (auto& p : parts_) p->step();
}

size_t CombinedOptimizer::num_param_groups() const {
  size_t n = 0;
  for (const auto& p : parts_) n += p->num_param_groups();
  return n;
}

std::pair<Optimizer*, size_t> CombinedOptimizer::locate(size_t group) const {
  size_t g = group;
  for (const auto& p : parts_) {
    if (g < p->num_param_groups()) return {p.get(), g};
    g -= p->num_param_groups();
  }
  throw std::out_of_range("CombinedOptimizer: parameter group " + std::to_string(group) + " of " +
                          std::to_string(num_param_groups()));
}

const std::vector<Tensor>& CombinedOptimizer::group_params(size_t group) const {
  const auto [p, g] = locate(group);
  return p->group_params(g);
}

double CombinedOptimizer::get_lr(size_t group) const {
  const auto [p, g] = locate(group);
  return p->get_lr(g);
}

void CombinedOptimizer::set_lr(size_t group, double lr) {
  const auto [p, g] = locate(group);
  p->set_lr(g, lr);
}

std::optional<double>& CombinedOptimizer::initial_lr(size_t group) {
  const auto [p, g] = locate(group);
  return p->initial_lr(g);
}

StateDict CombinedOptimizer::state_dict() const {
  StateDict out;
  int64_t offset = 0;  // the parameters of the parts before
  for (const auto& part : parts_) {
    StateDict sd = part->state_dict();
    int64_t count = 0;
    for (auto& g : sd.param_groups) {
      for (int64_t& i : g.params) i += offset;
      count += static_cast<int64_t>(g.params.size());
      out.param_groups.push_back(std::move(g));
    }
    for (auto& [i, s] : sd.state) out.state[i + offset] = std::move(s);
    offset += count;
  }
  return out;
}

void CombinedOptimizer::load_state_dict(const StateDict& sd) {
  const std::string who = "CombinedOptimizer.load_state_dict: ";
  if (sd.param_groups.size() != num_param_groups())
    throw std::invalid_argument(who + "loaded state dict has a different number of parameter groups (" +
                                std::to_string(sd.param_groups.size()) + ", the optimizer has " +
                                std::to_string(num_param_groups()) + ")");
  // Each part's share, its parameters numbered from 0 again; every part checks its own before
  // any part changes, so a state dict that does not fit changes nothing.
  std::vector<StateDict> shares;
  std::set<int64_t> claimed;
  size_t group = 0;
  for (const auto& part : parts_) {
    StateDict share;
    std::map<int64_t, int64_t> local;  // the whole's position -> the part's
    for (size_t k = 0; k < part->num_param_groups(); ++k, ++group) {
      StateDict::Group g = sd.param_groups[group];
      for (int64_t& i : g.params) {
        const int64_t mine = static_cast<int64_t>(local.size());
        if (!local.emplace(i, mine).second || !claimed.insert(i).second)
          throw std::invalid_argument(who + "a parameter index appears twice in param_groups");
        i = mine;
      }
      share.param_groups.push_back(std::move(g));
    }
    for (const auto& [i, s] : sd.state)
      if (const auto it = local.find(i); it != local.end()) share.state[it->second] = s;
    shares.push_back(std::move(share));
  }
  for (const auto& [i, _] : sd.state)
    if (!claimed.count(i)) throw std::invalid_argument(who + "state for parameter " + std::to_string(i) + ", which no group holds");
  std::vector<StateDict> before;
  for (const auto& part : parts_) before.push_back(part->state_dict());
  size_t i = 0;
  try {
    for (; i < parts_.size(); ++i) parts_[i]->load_state_dict(shares[i]);
  } catch (...) {
    for (size_t k = 0; k < i; ++k) parts_[k]->load_state_dict(before[k]);  // the parts loaded already go back
    throw;
  }
}

}  // namespace ag::optim
