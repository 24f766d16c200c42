// Sequential, on the cases of PyTorch's C++ frontend suite (test/cpp/api/sequential.cpp): the
// sizes, the names children get, the shapes and the error texts are upstream's facts; the checks
// are written here in attograd's terms (a plain Sequential, modules by value or by shared_ptr).
// tests/upstream/README.md names the source of each file of this folder.
//
// Not covered, because attograd's Sequential chains forward(const Tensor&) only: forwards of
// other types, a wrong return type, optional arguments. Nor module holders and AnyModule,
// cloning and devices, printing, or the layers attograd lacks (Conv2d, BatchNorm, LSTM,
// ConvTranspose). Upstream counts the copies a module made by value costs; attograd moves it.
#include <gtest/gtest.h>

#include <algorithm>

#include "autograd/engine.h"
#include "nn/activation.h"
#include "nn/embedding.h"
#include "nn/functional_module.h"
#include "nn/linear.h"
#include "nn/sequential.h"
#include "tests/upstream/libtorch_port.h"

using namespace ag;
using namespace ag::nn;

namespace {
struct SequentialCases : ag::testing_port::SeedingFixture {};

// A module with no Tensor forward, only a number to tell it apart.
struct Tagged : nn::Module {
  explicit Tagged(int t) : tag(t) {}
  int tag;
};

// Three tagged modules (1, 2, 3) and a Sequential holding exactly those objects.
std::vector<std::shared_ptr<Tagged>> three_tagged() {
  return {std::make_shared<Tagged>(1), std::make_shared<Tagged>(2), std::make_shared<Tagged>(3)};
}
Sequential holding(const std::vector<std::shared_ptr<Tagged>>& ms) {
  Sequential s;
  for (const auto& m : ms) s.push_back(m);
  return s;
}
}  // namespace

TEST_F(SequentialCases, TakesALayerAndAnActivation) { Sequential s(Linear(3, 4), ReLU()); }

TEST_F(SequentialCases, TakesSharedPointersUnnamedOrNamed) {
  Sequential unnamed(std::make_shared<Tagged>(1), std::make_shared<Tagged>(2), std::make_shared<Tagged>(3));
  EXPECT_EQ(unnamed.size(), 3);
  Sequential named({{"m1", std::make_shared<Tagged>(1)}, {std::string("m2"), std::make_shared<Tagged>(2)},
                    {"m3", std::make_shared<Tagged>(3)}});
  EXPECT_EQ(named.size(), 3);
}

TEST_F(SequentialCases, TakesModulesByValue) {
  Sequential s(Tagged(1), Tagged(2), Tagged(3));
  EXPECT_EQ(s.size(), 3);
}

TEST_F(SequentialCases, PushBackCountsAndNamesEachChild) {
  Sequential plain;
  EXPECT_EQ(plain.size(), 0);
  EXPECT_TRUE(plain.is_empty());
  plain.push_back(Linear(3, 4));
  plain.push_back(std::make_shared<Tagged>(1));
  plain.push_back(Tagged(2));
  EXPECT_EQ(plain.size(), 3);

  // A child pushed without a name is named by its position; a named one keeps its name.
  Sequential mixed;
  EXPECT_TRUE(mixed.is_empty());
  mixed.push_back(Linear(3, 4));
  mixed.push_back(std::string("linear2"), Linear(3, 4));
  mixed.push_back("shared_m1", std::make_shared<Tagged>(1));
  mixed.push_back(std::make_shared<Tagged>(1));
  mixed.push_back(Tagged(1));
  mixed.push_back(std::string("m2"), Tagged(1));
  const std::vector<std::string> names = {"0", "linear2", "shared_m1", "3", "4", "m2"};
  ASSERT_EQ(mixed.size(), names.size());
  const auto children = mixed.named_children();
  for (size_t i = 0; i < names.size(); ++i) EXPECT_EQ(children[i].key(), names[i]) << "child " << i;
}

TEST_F(SequentialCases, AtGivesTheModuleAtAnIndexAndRefusesOneOutOfRange) {
  const auto ms = three_tagged();
  const Sequential s = holding(ms);
  ASSERT_EQ(s.size(), 3);
  for (size_t i = 0; i < ms.size(); ++i) EXPECT_EQ(&s.at<Tagged>(i), ms[i].get());
  for (size_t past : {ms.size() + 1, ms.size() + 1000000}) ASSERT_THROWS_WITH(s.at<Tagged>(past), "Index out of range");
}

TEST_F(SequentialCases, PtrAndIndexingGiveTheSameObjectAndRefuseOneOutOfRange) {
  const auto ms = three_tagged();
  const Sequential s = holding(ms);
  ASSERT_EQ(s.size(), 3);
  for (size_t i = 0; i < ms.size(); ++i) {
    EXPECT_EQ(s.ptr(i).get(), ms[i].get());
    EXPECT_EQ(s[i].get(), ms[i].get());
    EXPECT_EQ(s.ptr<Tagged>(i).get(), ms[i].get());
  }
  for (size_t past : {ms.size() + 1, ms.size() + 1000000}) ASSERT_THROWS_WITH(s.ptr(past), "Index out of range");
}

TEST_F(SequentialCases, ForwardOfAnIdentityGivesItsInputBack) {
  struct Identity : nn::Module {
    Tensor forward(const Tensor& x) const override { return x; }
  };
  Sequential s(Identity{});
  const Tensor x = Tensor::ones({3, 3}).requires_grad_();
  EXPECT_TRUE(s.forward(x).equal(x));
}

TEST_F(SequentialCases, ForwardEndsWithTheLastLayersShape) {
  ag::manual_seed(0);
  Sequential s(Linear(10, 3), Linear(3, 5), Linear(5, 100));
  const Tensor y = s.forward(Tensor::randn({1000, 10}).requires_grad_());
  EXPECT_EQ(y.dim(), 2);
  EXPECT_EQ(y.size(0), 1000);
  EXPECT_EQ(y.size(1), 100);
}

TEST_F(SequentialCases, HoldsTheLibraryLayers) { Sequential s(Linear(10, 3), Dropout(0.5), Embedding(4, 10)); }

TEST_F(SequentialCases, ExtendAppendsAnotherSequentialOrAVector) {
  struct A : nn::Module {};
  struct B : nn::Module {};
  struct C : nn::Module {};
  struct D : nn::Module {};
  Sequential ab(A{}, B{});
  Sequential cd(C{}, D{});

  ab.extend(cd);
  ASSERT_EQ(ab.size(), 4);
  EXPECT_TRUE(ab[0]->as<A>() && ab[1]->as<B>() && ab[2]->as<C>() && ab[3]->as<D>());
  ASSERT_EQ(cd.size(), 2);  // the source is left as it was
  EXPECT_TRUE(cd[0]->as<C>() && cd[1]->as<D>());

  cd.extend(std::vector<std::shared_ptr<A>>{std::make_shared<A>(), std::make_shared<A>()});
  ASSERT_EQ(cd.size(), 4);
  EXPECT_TRUE(cd[0]->as<C>() && cd[1]->as<D>() && cd[2]->as<A>() && cd[3]->as<A>());
}

TEST_F(SequentialCases, TwoHandlesOfOneSequentialSeeTheSameModules) {
  // Upstream copies a module holder; in attograd the shared handle is a shared_ptr.
  auto one = std::make_shared<Sequential>(std::make_shared<Linear>(2, 3), std::make_shared<Linear>(4, 4),
                                          std::make_shared<Linear>(4, 5));
  std::shared_ptr<Sequential> other = one;
  EXPECT_EQ(one.get(), other.get());
  EXPECT_EQ(one->size(), other->size());
  EXPECT_TRUE(std::equal(one->begin(), one->end(), other->begin(),
                         [](const std::shared_ptr<Module>& a, const std::shared_ptr<Module>& b) { return a.get() == b.get(); }));
}

TEST_F(SequentialCases, ItsModulesAreItsChildren) {
  Sequential s(Linear(10, 3), Functional(ag::relu), Dropout(0.5));
  const auto kids = s.children();
  EXPECT_TRUE(kids[0]->as<Linear>());
  EXPECT_TRUE(kids[1]->as<Functional>());
  EXPECT_TRUE(kids[2]->as<Dropout>());
}
