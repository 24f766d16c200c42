// Sequential: modules applied one after another, each one's output the next one's input. The
// children are named by their position "0", "1", ... unless given a name, so the parameters
// read "0.weight", "2.bias" as torch's:
//
//   nn::Sequential model{std::make_shared<nn::Linear>(2, 8), std::make_shared<nn::Tanh>(),
//                        std::make_shared<nn::Linear>(8, 1)};
//   nn::Sequential same(nn::Linear(2, 8), nn::Tanh(), nn::Linear(8, 1));   // modules by value
//   nn::Sequential named{{"fc", std::make_shared<nn::Linear>(2, 8)}, {"act", std::make_shared<nn::Tanh>()}};
//   model.push_back(nn::ReLU());  model.push_back("head", nn::Linear(1, 1));
//   Tensor y = model.forward(x);  // or model(x)
//
// Every element needs the single-input forward(const Tensor&) (nn/module.h).
#pragma once
#include <concepts>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "nn/module.h"

namespace ag::nn {

class Sequential : public Module {
 public:
  using NamedModule = std::pair<std::string, std::shared_ptr<Module>>;

  Sequential() = default;
  Sequential(std::initializer_list<std::shared_ptr<Module>> modules);
  Sequential(std::initializer_list<NamedModule> named_modules);
  // For std::make_shared<Sequential>(a, b, c), which cannot pass a braced list.
  template <class M, class... Ms>
  explicit Sequential(std::shared_ptr<M> first, std::shared_ptr<Ms>... rest)
      : Sequential({std::shared_ptr<Module>(std::move(first)), std::shared_ptr<Module>(std::move(rest))...}) {}
  // Modules by value, moved into the container.
  template <class... Ms>
    requires(sizeof...(Ms) > 0 && (std::derived_from<std::remove_cvref_t<Ms>, Module> && ...) &&
             !(sizeof...(Ms) == 1 && (std::is_same_v<std::remove_cvref_t<Ms>, Sequential> && ...)))
  explicit Sequential(Ms&&... modules) {
    (push_back(std::forward<Ms>(modules)), ...);
  }

  Tensor forward(const Tensor& x) const override;  // the input itself when empty, as torch's

  void push_back(std::shared_ptr<Module> m);                    // named by its position
  void push_back(const std::string& name, std::shared_ptr<Module> m);
  template <class M>
    requires std::derived_from<std::remove_cvref_t<M>, Module>
  void push_back(M&& module) {
    push_back(std::shared_ptr<Module>(std::make_shared<std::remove_cvref_t<M>>(std::forward<M>(module))));
  }
  template <class M>
    requires std::derived_from<std::remove_cvref_t<M>, Module>
  void push_back(const std::string& name, M&& module) {
    push_back(name, std::shared_ptr<Module>(std::make_shared<std::remove_cvref_t<M>>(std::forward<M>(module))));
  }
  // Appends the modules of another Sequential (shared, not copied), or of a list.
  void extend(const Sequential& other);
  template <class M>
  void extend(const std::vector<std::shared_ptr<M>>& modules) {
    for (const auto& m : modules) push_back(std::shared_ptr<Module>(m));
  }

  size_t size() const { return items_.size(); }
  bool is_empty() const { return items_.empty(); }
  // The i-th module; throws "Index out of range" (libtorch's words) past the end.
  const std::shared_ptr<Module>& operator[](size_t i) const { return ptr(i); }
  const std::shared_ptr<Module>& ptr(size_t i) const;
  template <class M> std::shared_ptr<M> ptr(size_t i) const { return std::dynamic_pointer_cast<M>(ptr(i)); }
  // The i-th module as an M; throws if it is not one.
  template <class M> M& at(size_t i) const {
    M* m = dynamic_cast<M*>(ptr(i).get());
    if (!m) throw std::invalid_argument("Sequential: module " + std::to_string(i) + " is a " + ptr(i)->name() + ", not the type asked for");
    return *m;
  }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> items_;
};

}  // namespace ag::nn
