// Ported from PyTorch's test/cpp/api/sequential.cpp, with upstream's inputs, expected values
// and assertions, respelled per docs/cpp_api.md (tests/libtorch_port.h says how): a plain
// Sequential (seq.size(), not seq->size()), modules by value or as shared_ptr.
//
// Left out, and why: a forward other than Tensor -> Tensor (forward<int>, the wrong return
// type, optional arguments: attograd's Sequential chains forward(const Tensor&)), module
// holders and AnyModule (attograd has plain modules), clone() and devices, pretty printing,
// and the layers attograd does not have (Conv2d, BatchNorm, LSTM, ConvTranspose) in the
// containers' sanity checks. ConstructsFromConcreteType's copy count is libtorch's module copy
// (attograd moves a module given by value, which copies nothing).
#include <gtest/gtest.h>

#include <algorithm>

#include "autograd/engine.h"
#include "nn/activation.h"
#include "nn/embedding.h"
#include "nn/functional_module.h"
#include "nn/linear.h"
#include "nn/sequential.h"
#include "tests/libtorch_port.h"

using namespace ag;
using namespace ag::nn;

namespace {
struct SequentialTest : ag::testing_port::SeedingFixture {};

// The modules of the upstream cases, which have an int and no Tensor forward.
struct M : nn::Module {
  explicit M(int value_) : value(value_) {}
  int value;
};
}  // namespace

TEST_F(SequentialTest, CanContainThings) { Sequential sequential(Linear(3, 4), ReLU()); }

TEST_F(SequentialTest, ConstructsFromSharedPointer) {
  Sequential sequential(std::make_shared<M>(1), std::make_shared<M>(2), std::make_shared<M>(3));
  ASSERT_EQ(sequential.size(), 3);

  Sequential sequential_named(
      {{"m1", std::make_shared<M>(1)}, {std::string("m2"), std::make_shared<M>(2)}, {"m3", std::make_shared<M>(3)}});
  ASSERT_EQ(sequential.size(), 3);
}

TEST_F(SequentialTest, ConstructsFromConcreteType) {
  Sequential sequential(M(1), M(2), M(3));
  ASSERT_EQ(sequential.size(), 3);
}

TEST_F(SequentialTest, PushBackAddsAnElement) {
  // Test unnamed submodules
  Sequential sequential;
  ASSERT_EQ(sequential.size(), 0);
  ASSERT_TRUE(sequential.is_empty());
  sequential.push_back(Linear(3, 4));
  ASSERT_EQ(sequential.size(), 1);
  sequential.push_back(std::make_shared<M>(1));
  ASSERT_EQ(sequential.size(), 2);
  sequential.push_back(M(2));
  ASSERT_EQ(sequential.size(), 3);

  // Mix named and unnamed submodules
  Sequential sequential_named;
  ASSERT_EQ(sequential_named.size(), 0);
  ASSERT_TRUE(sequential_named.is_empty());

  sequential_named.push_back(Linear(3, 4));
  ASSERT_EQ(sequential_named.size(), 1);
  ASSERT_EQ(sequential_named.named_children()[0].key(), "0");
  sequential_named.push_back(std::string("linear2"), Linear(3, 4));
  ASSERT_EQ(sequential_named.size(), 2);
  ASSERT_EQ(sequential_named.named_children()[1].key(), "linear2");

  sequential_named.push_back("shared_m1", std::make_shared<M>(1));
  ASSERT_EQ(sequential_named.size(), 3);
  ASSERT_EQ(sequential_named.named_children()[2].key(), "shared_m1");
  sequential_named.push_back(std::make_shared<M>(1));
  ASSERT_EQ(sequential_named.size(), 4);
  ASSERT_EQ(sequential_named.named_children()[3].key(), "3");

  sequential_named.push_back(M(1));
  ASSERT_EQ(sequential_named.size(), 5);
  ASSERT_EQ(sequential_named.named_children()[4].key(), "4");
  sequential_named.push_back(std::string("m2"), M(1));
  ASSERT_EQ(sequential_named.size(), 6);
  ASSERT_EQ(sequential_named.named_children()[5].key(), "m2");
}

TEST_F(SequentialTest, AccessWithAt) {
  std::vector<std::shared_ptr<M>> modules = {std::make_shared<M>(1), std::make_shared<M>(2), std::make_shared<M>(3)};

  Sequential sequential;
  for (auto& module : modules) sequential.push_back(module);
  ASSERT_EQ(sequential.size(), 3);

  // returns the correct module for a given index
  for (size_t i = 0; i < modules.size(); ++i) ASSERT_EQ(&sequential.at<M>(i), modules[i].get());

  // throws for a bad index
  ASSERT_THROWS_WITH(sequential.at<M>(modules.size() + 1), "Index out of range");
  ASSERT_THROWS_WITH(sequential.at<M>(modules.size() + 1000000), "Index out of range");
}

TEST_F(SequentialTest, AccessWithPtr) {
  std::vector<std::shared_ptr<M>> modules = {std::make_shared<M>(1), std::make_shared<M>(2), std::make_shared<M>(3)};

  Sequential sequential;
  for (auto& module : modules) sequential.push_back(module);
  ASSERT_EQ(sequential.size(), 3);

  // returns the correct module for a given index
  for (size_t i = 0; i < modules.size(); ++i) {
    ASSERT_EQ(sequential.ptr(i).get(), modules[i].get());
    ASSERT_EQ(sequential[i].get(), modules[i].get());
    ASSERT_EQ(sequential.ptr<M>(i).get(), modules[i].get());
  }

  // throws for a bad index
  ASSERT_THROWS_WITH(sequential.ptr(modules.size() + 1), "Index out of range");
  ASSERT_THROWS_WITH(sequential.ptr(modules.size() + 1000000), "Index out of range");
}

TEST_F(SequentialTest, TheReturnTypeOfForwardDefaultsToTensor) {
  struct Same : nn::Module {
    Tensor forward(const Tensor& v) const override { return v; }
  };

  Sequential sequential(Same{});
  auto variable = Tensor::ones({3, 3}).requires_grad_();
  ASSERT_TRUE(sequential.forward(variable).equal(variable));
}

TEST_F(SequentialTest, ForwardReturnsTheLastValue) {
  ag::manual_seed(0);
  Sequential sequential(Linear(10, 3), Linear(3, 5), Linear(5, 100));

  auto x = Tensor::randn({1000, 10}).requires_grad_();
  auto y = sequential.forward(x);
  ASSERT_EQ(y.dim(), 2);
  ASSERT_EQ(y.size(0), 1000);
  ASSERT_EQ(y.size(1), 100);
}

TEST_F(SequentialTest, SanityCheckForHoldingStandardModules) { Sequential sequential(Linear(10, 3), Dropout(0.5), Embedding(4, 10)); }

TEST_F(SequentialTest, ExtendPushesModulesFromOtherSequential) {
  struct A : nn::Module {};
  struct B : nn::Module {};
  struct C : nn::Module {};
  struct D : nn::Module {};
  Sequential a(A{}, B{});
  Sequential b(C{}, D{});
  a.extend(b);

  ASSERT_EQ(a.size(), 4);
  ASSERT_TRUE(a[0]->as<A>());
  ASSERT_TRUE(a[1]->as<B>());
  ASSERT_TRUE(a[2]->as<C>());
  ASSERT_TRUE(a[3]->as<D>());

  ASSERT_EQ(b.size(), 2);
  ASSERT_TRUE(b[0]->as<C>());
  ASSERT_TRUE(b[1]->as<D>());

  std::vector<std::shared_ptr<A>> c = {std::make_shared<A>(), std::make_shared<A>()};
  b.extend(c);

  ASSERT_EQ(b.size(), 4);
  ASSERT_TRUE(b[0]->as<C>());
  ASSERT_TRUE(b[1]->as<D>());
  ASSERT_TRUE(b[2]->as<A>());
  ASSERT_TRUE(b[3]->as<A>());
}

TEST_F(SequentialTest, HasReferenceSemantics) {
  // Upstream copies the holder; a shared_ptr to the module is attograd's reference.
  auto first = std::make_shared<Sequential>(std::make_shared<Linear>(2, 3), std::make_shared<Linear>(4, 4),
                                            std::make_shared<Linear>(4, 5));
  std::shared_ptr<Sequential> second(first);

  ASSERT_EQ(first.get(), second.get());
  ASSERT_EQ(first->size(), second->size());
  ASSERT_TRUE(std::equal(first->begin(), first->end(), second->begin(),
                         [](const std::shared_ptr<Module>& first, const std::shared_ptr<Module>& second) {
                           return first.get() == second.get();
                         }));
}

TEST_F(SequentialTest, RegistersElementsAsSubmodules) {
  Sequential sequential(Linear(10, 3), Functional(ag::relu), Dropout(0.5));

  auto modules = sequential.children();
  ASSERT_TRUE(modules[0]->as<Linear>());
  ASSERT_TRUE(modules[1]->as<Functional>());
  ASSERT_TRUE(modules[2]->as<Dropout>());
}
