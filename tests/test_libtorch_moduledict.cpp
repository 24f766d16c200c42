// Ported from PyTorch's test/cpp/api/moduledict.cpp, with upstream's inputs, expected values
// and assertions, respelled per docs/cpp_api.md (tests/libtorch_port.h says how): a plain
// ModuleDict (dict.size(), not dict->size()), torch::OrderedDict as ag::OrderedDict.
//
// Left out, and why: clone() and devices (IsCloneable, CloneToDevice_CUDA), pretty printing,
// and the layers attograd does not have (Conv2d, BatchNorm, LSTM) in the sanity checks, whose
// keys are kept with modules attograd has.
#include <gtest/gtest.h>

#include <algorithm>

#include "nn/activation.h"
#include "nn/embedding.h"
#include "nn/functional_module.h"
#include "nn/linear.h"
#include "nn/module_dict.h"
#include "tests/libtorch_port.h"

using namespace ag;
using namespace ag::nn;

namespace {
struct ModuleDictTest : ag::testing_port::SeedingFixture {};

struct M : Module {
  explicit M(int value_) : value(value_) {}
  int value;
};

using Dict = OrderedDict<std::string, std::shared_ptr<Module>>;
using List = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;
}  // namespace

TEST_F(ModuleDictTest, ConstructsFromList) {
  List list = {{"module_1", std::make_shared<M>(1)}, {"module_2", std::make_shared<M>(2)}, {"module_3", std::make_shared<M>(3)}};
  ModuleDict dict(list);
  ASSERT_EQ(dict.size(), 3);
}

TEST_F(ModuleDictTest, ConstructsFromordereddict) {
  Dict ordereddict = {
      {"module_1", std::make_shared<M>(1)},
      {"module_2", std::make_shared<M>(2)},
      {"module_3", std::make_shared<M>(3)},
  };
  ModuleDict dict(ordereddict);
  ASSERT_EQ(dict.size(), 3);
}

TEST_F(ModuleDictTest, UpdatePopClearContains) {
  ModuleDict dict;
  ASSERT_TRUE(dict.empty());
  // Update by List
  List list1 = {{"module_1", std::make_shared<M>(1)}};
  dict.update(list1);
  ASSERT_EQ(dict.size(), 1);
  ASSERT_TRUE(dict.contains("module_1"));
  // Update by OrderedDict
  Dict ordereddict = {{"module_2", std::make_shared<M>(2)}};
  dict.update(ordereddict);
  ASSERT_EQ(dict.size(), 2);
  ASSERT_TRUE(dict.contains("module_2"));
  // Update by another ModuleDict
  List list2 = {{"module_3", std::make_shared<M>(3)}};
  ModuleDict updatedict(list2);
  dict.update(updatedict);
  ASSERT_EQ(dict.size(), 3);
  ASSERT_TRUE(dict.contains("module_3"));
  // Pop
  dict.pop("module_1");
  ASSERT_EQ(dict.size(), 2);
  // Pop unexist
  ASSERT_THROWS_WITH(dict.pop("module_4"), " 'module_4' is not defined");
  // Clear
  dict.clear();
  ASSERT_EQ(dict.size(), 0);
}

TEST_F(ModuleDictTest, UpdateExist) {
  List list1 = {{"module_1", std::make_shared<M>(1)}, {"module_2", std::make_shared<M>(2)}};
  ModuleDict dict(list1);
  ASSERT_EQ(dict.at<M>("module_2").value, 2);
  // Update by list
  List list2 = {{"module_2", std::make_shared<M>(0)}, {"module_3", std::make_shared<M>(3)}};
  dict.update(list2);
  ASSERT_EQ(dict.size(), 3);
  ASSERT_EQ(dict.at<M>("module_2").value, 0);
  // Update by ordereddict
  Dict ordereddict = {{"module_3", std::make_shared<M>(0)}, {"module_4", std::make_shared<M>(4)}};
  dict.update(ordereddict);
  ASSERT_EQ(dict.size(), 4);
  ASSERT_EQ(dict.at<M>("module_3").value, 0);
  // Update by ModuleDict
  List list3 = {{"module_4", std::make_shared<M>(0)}, {"module_1", std::make_shared<M>(0)}};
  ModuleDict dict2(list3);
  dict.update(dict2);
  ASSERT_EQ(dict.size(), 4);
  ASSERT_EQ(dict.at<M>("module_1").value, 0);
  ASSERT_EQ(dict.at<M>("module_4").value, 0);
}

TEST_F(ModuleDictTest, Keys) {
  Dict ordereddict = {
      {"linear", std::make_shared<Linear>(10, 3)},
      {"conv", std::make_shared<Tanh>()},  // upstream: Conv2d(1, 2, 3)
      {"dropout", std::make_shared<Dropout>(0.5)},
  };
  ModuleDict dict(ordereddict);
  const auto& keys = dict.keys();
  std::vector<std::string> expected{"linear", "conv", "dropout"};
  ASSERT_EQ(keys, expected);
  ASSERT_THROWS_WITH(dict["batch"], " 'batch' is not defined");

  ASSERT_TRUE(dict["linear"]->as<Linear>());
  ASSERT_TRUE(dict["conv"]->as<Tanh>());
  ASSERT_TRUE(dict["dropout"]->as<Dropout>());
}

TEST_F(ModuleDictTest, Values) {
  Dict ordereddict = {
      {"module_1", std::make_shared<M>(1)},
      {"module_2", std::make_shared<M>(2)},
  };
  ModuleDict dict(ordereddict);
  const auto& values = dict.values();
  const auto& expected = ordereddict.values();
  ASSERT_EQ(values, expected);
  ASSERT_TRUE(std::equal(dict.begin(), dict.end(), ordereddict.begin(),
                         [](const auto& lhs, const auto& rhs) { return lhs.value().get() == rhs.value().get(); }));
}

TEST_F(ModuleDictTest, SanityCheckForHoldingStandardModules) {
  Dict ordereddict = {{"linear", std::make_shared<Linear>(10, 3)},
                      {"dropout", std::make_shared<Dropout>(0.5)},
                      {"embedding", std::make_shared<Embedding>(4, 10)}};
  ModuleDict dict(ordereddict);
  ASSERT_EQ(dict.size(), 3);
}

TEST_F(ModuleDictTest, HasReferenceSemantics) {
  Dict ordereddict = {
      {"linear1", std::make_shared<Linear>(2, 3)},
      {"linear2", std::make_shared<Linear>(3, 4)},
      {"linear3", std::make_shared<Linear>(4, 5)},
  };
  ModuleDict first(ordereddict);
  ModuleDict second(ordereddict);

  ASSERT_EQ(first.size(), second.size());
  ASSERT_TRUE(std::equal(first.begin(), first.end(), second.begin(),
                         [](const auto& lhs, const auto& rhs) { return lhs.value().get() == rhs.value().get(); }));
}

TEST_F(ModuleDictTest, RegistersElementsAsSubmodules) {
  Dict ordereddict1 = {
      {"linear", std::make_shared<Linear>(10, 3)},
      {"conv", std::make_shared<Tanh>()},  // upstream: Conv2d(1, 2, 3)
      {"test", std::make_shared<Dropout>(0.5)},
  };
  ModuleDict dict(ordereddict1);

  auto modules = dict.children();
  ASSERT_TRUE(modules[0]->as<Linear>());
  ASSERT_TRUE(modules[1]->as<Tanh>());
  ASSERT_TRUE(modules[2]->as<Dropout>());

  // Update Existing
  Dict ordereddict2 = {{"lstm", std::make_shared<Sigmoid>()},  // upstream: LSTM(4, 5)
                       {"test", std::make_shared<ReLU>()}};    // upstream: BatchNorm2d(5)
  dict.update(ordereddict2);

  modules = dict.children();
  ASSERT_TRUE(modules[0]->as<Linear>());
  ASSERT_TRUE(modules[1]->as<Tanh>());
  // Keep Order
  ASSERT_TRUE(modules[2]->as<ReLU>());
  ASSERT_TRUE(modules[3]->as<Sigmoid>());
}
