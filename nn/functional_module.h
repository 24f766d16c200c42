// Functional: a function as a module, as libtorch's torch::nn::Functional, for Sequential and
// ModuleDict:
//   nn::Sequential net{std::make_shared<nn::Linear>(2, 8), std::make_shared<nn::Functional>(ag::relu)};
//   nn::Functional clip(ag::clamp, -1.0, 1.0);   // arguments after the input are bound: clamp(x, -1, 1)
#pragma once
#include <functional>
#include <stdexcept>
#include <utility>

#include "nn/module.h"

namespace ag::nn {

class Functional : public Module {
 public:
  using Function = std::function<Tensor(const Tensor&)>;
  explicit Functional(Function fn) : fn_(std::move(fn)) {
    if (!fn_) throw std::invalid_argument("Functional: empty function");
  }
  // fn(x, args...) with args bound now (copied), as libtorch's.
  template <class F, class A, class... As>
  Functional(F fn, A arg, As... args)
      : Functional(Function([fn, arg, args...](const Tensor& x) -> Tensor { return fn(x, arg, args...); })) {}

  Tensor forward(const Tensor& x) const override { return fn_(x); }

 private:
  Function fn_;
};

}  // namespace ag::nn
