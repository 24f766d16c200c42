// When a module's parameters get their storage and their values. By default, as in PyTorch, at
// registration: allocated, and initialised as the module describes them (nn/param_spec.h),
// drawing from the generator it was given. Under a guard (on this thread, while it lives):
//   DeferredInit  allocated, nothing drawn: the model changes the descriptions it wants
//                 (Module::set_init, set_role), then init() draws every parameter once, as its
//                 description then says, in named_parameters() order;
//   MetaInit      nothing allocated, nothing drawn (torch's meta device): the modules only
//                 describe their parameters, so that a model's parameter table exists before
//                 the model does, whatever sizes a configuration read from a file claims.
// Inside a MetaInit a DeferredInit changes nothing: the modules stay meta.
#pragma once
#include <vector>

#include "autograd/random.h"
#include "autograd/tensor.h"
#include "nn/param_spec.h"

namespace ag::nn {

class Module;

class DeferredInit {
 public:
  // What the generators given to the modules see of the init they describe but do not draw:
  //   Untouched  nothing
  //   Skipped    they are advanced past it (Init::skip), as if it had been drawn and thrown
  //              away: a model whose modules always drew their own init before the model drew
  //              its keeps the stream of every seed, hence its parameters
  enum class ModuleDraws { Untouched, Skipped };
  explicit DeferredInit(ModuleDraws module_draws = ModuleDraws::Untouched);
  // A parameter registered under the guard that init() did not reach is filled with NaN: a
  // forgotten init() shows at the first loss rather than training on uninitialised memory.
  ~DeferredInit();
  DeferredInit(const DeferredInit&) = delete;
  DeferredInit& operator=(const DeferredInit&) = delete;

  // Initialises the parameters of root registered under this guard, in root's
  // named_parameters() order, each as its description says, drawing from gen. Throws
  // std::logic_error when one registered here is not root's.
  void init(const Module& root, Generator& gen);

 private:
  friend struct ParamMaterializer;
  DeferredInit* outer_ = nullptr;
  bool active_ = false;  // false inside a MetaInit
  ModuleDraws module_draws_;
  std::vector<Tensor> pending_;  // registered, not yet drawn
};

class MetaInit {
 public:
  MetaInit();
  ~MetaInit();
  MetaInit(const MetaInit&) = delete;
  MetaInit& operator=(const MetaInit&) = delete;
};

// How Module registers a parameter and changes its init, as the guards of this thread say.
struct ParamMaterializer {
  static bool meta();  // parameters get no storage
  // A parameter t just allocated, described as initialised by `init`: drawn now from gen, or
  // left to the DeferredInit alive (gen advanced past it when the guard says so).
  static void registered(Tensor& t, const Init& init, Generator& gen);
  // Whether t waits for a DeferredInit's init().
  static bool deferred(const Tensor& t);
};

}  // namespace ag::nn
