// Sequential: modules applied one after another, each one's output the next one's input. The
// children are named "0", "1", ..., so the parameters read "0.weight", "2.bias" as torch's:
//
//   nn::Sequential model{std::make_shared<nn::Linear>(2, 8), std::make_shared<nn::Tanh>(),
//                        std::make_shared<nn::Linear>(8, 1)};
//   Tensor y = model.forward(x);  // or model(x)
//
// Every element needs the single-input forward(const Tensor&) (nn/module.h).
#pragma once
#include <initializer_list>
#include <memory>
#include <vector>

#include "nn/module.h"

namespace ag::nn {

class Sequential : public Module {
 public:
  Sequential() = default;
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  // For std::make_shared<Sequential>(a, b, c), which cannot pass a braced list.
  template <class M, class... Ms>
  explicit Sequential(std::shared_ptr<M> first, std::shared_ptr<Ms>... rest)
      : Sequential({std::shared_ptr<Module>(std::move(first)), std::shared_ptr<Module>(std::move(rest))...}) {}

  Tensor forward(const Tensor& x) const override;  // the input itself when empty, as torch's
  void push_back(std::shared_ptr<Module> m);
  size_t size() const { return items_.size(); }
  const std::shared_ptr<Module>& operator[](size_t i) const { return items_.at(i); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> items_;
};

}  // namespace ag::nn
