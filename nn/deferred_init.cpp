#include "nn/deferred_init.h"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "autograd/engine.h"
#include "nn/module.h"

namespace ag::nn {

namespace {
thread_local DeferredInit* g_deferred = nullptr;  // the innermost alive
thread_local int g_meta = 0;                      // MetaInit guards alive

bool holds(const std::vector<Tensor>& v, const Tensor& t) {
  return std::any_of(v.begin(), v.end(), [&](const Tensor& p) { return p.same(t); });
}
}  // namespace

DeferredInit::DeferredInit(ModuleDraws module_draws) : module_draws_(module_draws) {
  if (g_meta > 0) return;
  outer_ = g_deferred;
  g_deferred = this;
  active_ = true;
}

DeferredInit::~DeferredInit() {
  if (!active_) return;
  g_deferred = outer_;
  NoGradGuard no_grad;
  for (Tensor& t : pending_) t.fill_(std::numeric_limits<double>::quiet_NaN());
}

void DeferredInit::init(const Module& root, Generator& gen) {
  if (pending_.empty()) return;
  std::map<std::string, Init> inits;
  for (const auto& [name, spec] : root.named_param_specs()) inits.emplace(name, spec.init);
  for (const auto& named : root.named_parameters()) {
    Tensor p = named.second;
    const auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Tensor& t) { return t.same(p); });
    if (it == pending_.end()) continue;
    inits.at(named.first).apply(p, gen);  // a parameter registered with a description has one
    pending_.erase(it);
  }
  if (!pending_.empty())
    throw std::logic_error("nn::DeferredInit::init: " + std::to_string(pending_.size()) +
                           " parameter(s) registered under the guard are not " + root.name() + "'s");
}

MetaInit::MetaInit() { ++g_meta; }
MetaInit::~MetaInit() { --g_meta; }

bool ParamMaterializer::meta() { return g_meta > 0; }

void ParamMaterializer::registered(Tensor& t, const Init& init, Generator& gen) {
  DeferredInit* d = g_deferred;
  if (!d) return init.apply(t, gen);
  if (d->module_draws_ == DeferredInit::ModuleDraws::Skipped) init.skip(gen, t.numel(), t.dtype());
  d->pending_.push_back(t);
}

bool ParamMaterializer::deferred(const Tensor& t) {
  for (const DeferredInit* d = g_deferred; d; d = d->outer_)
    if (holds(d->pending_, t)) return true;
  return false;
}

}  // namespace ag::nn
