// ModuleDict, on the cases of PyTorch's C++ frontend suite (test/cpp/api/moduledict.cpp): the
// keys, sizes, values and error texts are upstream's facts; the checks are written here in
// attograd's terms (a plain ModuleDict, ag::OrderedDict). tests/upstream/README.md names the
// source of each file of this folder.
//
// Not covered, because attograd has no such thing: cloning and devices, printing a module, and
// the layers it lacks (Conv2d, BatchNorm, LSTM); where a case only needs some module under a
// key, an activation stands in for them.
#include <gtest/gtest.h>

#include <algorithm>

#include "nn/activation.h"
#include "nn/embedding.h"
#include "nn/functional_module.h"
#include "nn/linear.h"
#include "nn/module_dict.h"
#include "tests/upstream/libtorch_port.h"

using namespace ag;
using namespace ag::nn;

namespace {
struct ModuleDictCases : ag::testing_port::SeedingFixture {};

// A module that only carries a number, so that a test can tell which one a key holds.
struct Tagged : Module {
  explicit Tagged(int t) : tag(t) {}
  int tag;
};
std::shared_ptr<Module> tagged(int t) { return std::make_shared<Tagged>(t); }

using Entries = OrderedDict<std::string, std::shared_ptr<Module>>;
using Pairs = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;

// True when both ranges hold the very same module objects, in the same order.
template <class A, class B> bool same_objects(const A& a, const B& b) {
  return std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) { return x.value().get() == y.value().get(); });
}

int tag_at(const ModuleDict& d, const std::string& key) { return d.at<Tagged>(key).tag; }
}  // namespace

TEST_F(ModuleDictCases, BuiltFromAVectorOfPairsHoldsThreeEntries) {
  ModuleDict d(Pairs{{"module_1", tagged(1)}, {"module_2", tagged(2)}, {"module_3", tagged(3)}});
  EXPECT_EQ(d.size(), 3);
}

TEST_F(ModuleDictCases, BuiltFromAnOrderedDictHoldsThreeEntries) {
  const Entries entries = {{"module_1", tagged(1)}, {"module_2", tagged(2)}, {"module_3", tagged(3)}};
  ModuleDict d(entries);
  EXPECT_EQ(d.size(), 3);
}

TEST_F(ModuleDictCases, GrowsFromEachSourceThenShrinksByPopAndClear) {
  ModuleDict d;
  EXPECT_TRUE(d.empty());

  d.update(Pairs{{"module_1", tagged(1)}});
  EXPECT_EQ(d.size(), 1);
  EXPECT_TRUE(d.contains("module_1"));

  d.update(Entries{{"module_2", tagged(2)}});
  EXPECT_EQ(d.size(), 2);
  EXPECT_TRUE(d.contains("module_2"));

  const ModuleDict other(Pairs{{"module_3", tagged(3)}});
  d.update(other);
  EXPECT_EQ(d.size(), 3);
  EXPECT_TRUE(d.contains("module_3"));

  d.pop("module_1");
  EXPECT_EQ(d.size(), 2);
  ASSERT_THROWS_WITH(d.pop("module_4"), " 'module_4' is not defined");  // never inserted

  d.clear();
  EXPECT_EQ(d.size(), 0);
}

TEST_F(ModuleDictCases, AnUpdateReplacesTheModuleOfAKeyItAlreadyHas) {
  ModuleDict d(Pairs{{"module_1", tagged(1)}, {"module_2", tagged(2)}});
  EXPECT_EQ(tag_at(d, "module_2"), 2);

  d.update(Pairs{{"module_2", tagged(0)}, {"module_3", tagged(3)}});  // one old key, one new
  EXPECT_EQ(d.size(), 3);
  EXPECT_EQ(tag_at(d, "module_2"), 0);

  d.update(Entries{{"module_3", tagged(0)}, {"module_4", tagged(4)}});
  EXPECT_EQ(d.size(), 4);
  EXPECT_EQ(tag_at(d, "module_3"), 0);

  const ModuleDict both_old(Pairs{{"module_4", tagged(0)}, {"module_1", tagged(0)}});
  d.update(both_old);
  EXPECT_EQ(d.size(), 4);
  EXPECT_EQ(tag_at(d, "module_1"), 0);
  EXPECT_EQ(tag_at(d, "module_4"), 0);
}

TEST_F(ModuleDictCases, KeysComeInInsertionOrderAndAMissingKeyIsNamed) {
  // Upstream holds a Conv2d(1, 2, 3) under "conv"; a Tanh stands in for it.
  ModuleDict d(Entries{{"linear", std::make_shared<Linear>(10, 3)},
                       {"conv", std::make_shared<Tanh>()},
                       {"dropout", std::make_shared<Dropout>(0.5)}});
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"linear", "conv", "dropout"}));
  ASSERT_THROWS_WITH(d["batch"], " 'batch' is not defined");
  EXPECT_TRUE(d["linear"]->as<Linear>());
  EXPECT_TRUE(d["conv"]->as<Tanh>());
  EXPECT_TRUE(d["dropout"]->as<Dropout>());
}

TEST_F(ModuleDictCases, ValuesAndIterationGiveTheInsertedObjects) {
  const Entries entries = {{"module_1", tagged(1)}, {"module_2", tagged(2)}};
  ModuleDict d(entries);
  EXPECT_EQ(d.values(), entries.values());
  EXPECT_TRUE(same_objects(d, entries));
}

TEST_F(ModuleDictCases, HoldsTheLibraryLayers) {
  ModuleDict d(Entries{{"linear", std::make_shared<Linear>(10, 3)},
                       {"dropout", std::make_shared<Dropout>(0.5)},
                       {"embedding", std::make_shared<Embedding>(4, 10)}});
  EXPECT_EQ(d.size(), 3);
}

TEST_F(ModuleDictCases, TwoDictsOfTheSameEntriesShareTheModules) {
  const Entries entries = {{"linear1", std::make_shared<Linear>(2, 3)},
                           {"linear2", std::make_shared<Linear>(3, 4)},
                           {"linear3", std::make_shared<Linear>(4, 5)}};
  ModuleDict a(entries), b(entries);
  EXPECT_EQ(a.size(), b.size());
  EXPECT_TRUE(same_objects(a, b));
}

TEST_F(ModuleDictCases, EntriesAreChildrenAndAReplacedKeyKeepsItsPlace) {
  // Upstream's Conv2d, LSTM and BatchNorm2d are a Tanh, a Sigmoid and a ReLU here.
  ModuleDict d(Entries{{"linear", std::make_shared<Linear>(10, 3)},
                       {"conv", std::make_shared<Tanh>()},
                       {"test", std::make_shared<Dropout>(0.5)}});
  auto kids = d.children();
  EXPECT_TRUE(kids[0]->as<Linear>());
  EXPECT_TRUE(kids[1]->as<Tanh>());
  EXPECT_TRUE(kids[2]->as<Dropout>());

  d.update(Entries{{"lstm", std::make_shared<Sigmoid>()}, {"test", std::make_shared<ReLU>()}});
  kids = d.children();
  EXPECT_TRUE(kids[0]->as<Linear>());
  EXPECT_TRUE(kids[1]->as<Tanh>());
  EXPECT_TRUE(kids[2]->as<ReLU>());     // "test" replaced where it stood
  EXPECT_TRUE(kids[3]->as<Sigmoid>());  // "lstm" appended
}
