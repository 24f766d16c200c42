// How modules describe their parameters (nn/param_spec.h) and when they get storage and values
// (nn/deferred_init.h): drawn at registration as in PyTorch, deferred to one draw by the model
// that builds them, or never (meta: descriptions only).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "nn/attention.h"
#include "nn/deferred_init.h"
#include "nn/embedding.h"
#include "nn/layer_norm.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "tests/test_util.h"

namespace ag {
namespace {

using nn::Init;
using nn::OptimGroup;

// Skipping an init leaves the generator exactly as drawing it does, whatever Box-Muller spare
// the stream holds before and after, uniform draws between normal ones included.
TEST(ParamSpec, SkipLeavesTheGeneratorAsDrawingWould) {
  struct Step {
    Init init;
    int64_t n;
  };
  const std::vector<Step> steps = {{Init::normal(1), 5}, {Init::uniform(2), 3}, {Init::normal(0.5), 4}, {Init::normal(1), 1},
                                   {Init::uniform(1), 0}, {Init::normal(1), 0},  {Init::normal(1), 2},   {Init::ones(), 7},
                                   {Init::normal(1), 3},  {Init::normal(1), 1},  {Init::uniform(1), 1}, {Init::normal(1), 6}};
  Generator drawn(11), skipped(11);
  for (const Step& s : steps) {
    Tensor t = Tensor::empty({s.n});
    s.init.apply(t, drawn);
    s.init.skip(skipped, s.n, DType::Float32);
    ASSERT_EQ(skipped.state(), drawn.state()) << s.n;
  }
  EXPECT_EQ(skipped.normal(), drawn.normal());
}

// A torch generator's draws depend on the dtype and the count (torch's blocks of 16 for normal
// values): skipping draws them all the same.
TEST(ParamSpec, SkipLeavesATorchGeneratorAsDrawingWould) {
  Generator drawn = Generator::torch(11), skipped = Generator::torch(11);
  for (DType d : {DType::Float32, DType::Float64})
    for (const Init& init : {Init::normal(1), Init::uniform(2), Init::ones()})
      for (int64_t n : {0, 1, 5, 16, 33}) {
        Tensor t = Tensor::empty({n}, d);
        init.apply(t, drawn);
        init.skip(skipped, n, d);
        ASSERT_EQ(skipped.state(), drawn.state()) << n;
      }
  EXPECT_EQ(skipped.normal(), drawn.normal());
}

// Used on its own, a module keeps torch's init, drawn as it registers each parameter, and says
// what it is for an optimizer.
TEST(ParamSpec, AModuleOnItsOwnDrawsTorchsInitAtOnce) {
  Generator gen(5), expected(5);
  const nn::Linear lin(4, 3, true, DType::Float64, gen);
  const double w = nn::init::kaiming_uniform_bound(4, std::sqrt(5.0)), b = 0.5;  // both 1/√in, w as torch rounds it
  EXPECT_NEAR(w, b, 1e-15);
  for (double v : lin.weight.to_double_vector()) EXPECT_EQ(v, expected.uniform(-w, w));
  for (double v : lin.bias.to_double_vector()) EXPECT_EQ(v, expected.uniform(-b, b));
  EXPECT_EQ(gen.state(), expected.state());
  const auto specs = lin.named_param_specs();
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_TRUE(specs[0].second == (nn::ParamSpec{{3, 4}, Init::uniform(w), OptimGroup::Matrix, 1}));
  EXPECT_TRUE(specs[1].second == (nn::ParamSpec{{3}, Init::uniform(b), OptimGroup::NoDecay, 0}));
  const nn::Embedding emb(3, 2);
  EXPECT_EQ(emb.named_param_specs()[0].second.group, OptimGroup::Decay);
  const nn::LayerNorm ln(4);
  EXPECT_EQ(ln.weight.to_double_vector(), std::vector<double>(4, 1.0));
  EXPECT_EQ(ln.bias.to_double_vector(), std::vector<double>(4, 0.0));
}

// torch's MultiheadAttention zeroes out_proj's bias after its Linear drew one: so does set_init
// outside a guard, at once.
TEST(ParamSpec, SetInitOutsideAGuardAppliesAtOnce) {
  const nn::MultiheadAttention mha(4, 2);
  EXPECT_EQ(mha.out_proj->bias.to_double_vector(), std::vector<double>(4, 0.0));
  EXPECT_EQ(mha.named_param_specs()[3].first, "out_proj.bias");
  EXPECT_EQ(mha.named_param_specs()[3].second.init, Init::zeros());
  nn::Linear lin(2, 2);
  Generator gen(1);
  lin.set_init("weight", Init::ones(), gen);
  EXPECT_EQ(lin.weight.to_double_vector(), std::vector<double>(4, 1.0));
  EXPECT_NE(testing_util::error_of<std::logic_error>([&] { lin.set_init("weights", Init::ones(), gen); })
                .find("no parameter 'weights' registered with a description"),
            std::string::npos);
}

// Under DeferredInit the modules draw nothing; init() draws each parameter once, as its
// description then says, in named_parameters() order.
TEST(DeferredInit, DrawsEachParameterOnceAsFinallyDescribed) {
  Generator gen(3), expected(3);
  nn::Linear* lin = nullptr;
  std::shared_ptr<nn::Module> root = std::make_shared<nn::Module>();
  {
    nn::DeferredInit deferred;
    lin = root->register_module("lin", std::make_shared<nn::Linear>(2, 3, true, DType::Float64, gen)).get();
    EXPECT_EQ(gen.state(), expected.state());  // nothing drawn yet
    lin->set_init("weight", Init::normal(0.5), gen);
    deferred.init(*root, gen);
  }
  for (double v : lin->weight.to_double_vector()) EXPECT_EQ(v, 0.5 * expected.normal());
  const double b = 1 / std::sqrt(2.0);
  for (double v : lin->bias.to_double_vector()) EXPECT_EQ(v, expected.uniform(-b, b));
  EXPECT_EQ(gen.state(), expected.state());
}

// ModuleDraws::Skipped: the generator passes over what the modules' own init would have drawn,
// so the model's draws come where they came when modules drew theirs first.
TEST(DeferredInit, SkippedModuleDrawsKeepTheStream) {
  Generator gen(9), twice(9);
  Tensor w;
  {
    nn::DeferredInit deferred(nn::DeferredInit::ModuleDraws::Skipped);
    nn::Embedding emb(3, 5, DType::Float64, gen);  // 15 normal values: a spare left over
    emb.set_init("weight", Init::normal(0.02), gen);
    deferred.init(emb, gen);
    w = emb.weight;
  }
  nn::Embedding drawn_twice(3, 5, DType::Float64, twice);
  drawn_twice.set_init("weight", Init::normal(0.02), twice);  // outside a guard: drawn again
  EXPECT_EQ(w.to_double_vector(), drawn_twice.weight.to_double_vector());
  EXPECT_EQ(gen.state(), twice.state());
}

// A forgotten init() leaves NaN, which the first loss shows, not uninitialised memory; a
// parameter registered under the guard but not in init()'s module is a mistake said at once.
TEST(DeferredInit, WhatInitDoesNotReachIsNaNOrRefused) {
  Generator gen(1);
  std::shared_ptr<nn::Linear> forgotten;
  {
    nn::DeferredInit deferred;
    forgotten = std::make_shared<nn::Linear>(2, 2, true, DType::Float32, gen);
  }
  for (double v : forgotten->weight.to_double_vector()) EXPECT_TRUE(std::isnan(v));
  nn::DeferredInit deferred;
  const nn::Linear a(2, 2, true, DType::Float32, gen), b(2, 2, true, DType::Float32, gen);
  EXPECT_NE(testing_util::error_of<std::logic_error>([&] { deferred.init(a, gen); }).find("2 parameter(s) registered under the guard are not Linear's"),
            std::string::npos);
}

// Under MetaInit nothing is allocated, whatever the sizes: the modules only describe their
// parameters. A DeferredInit inside changes nothing; after the guard, modules allocate again.
TEST(MetaInit, DescribesWithoutAllocating) {
  {
    nn::MetaInit meta;
    nn::DeferredInit inert;
    const int64_t huge = int64_t{1} << 40;
    nn::Linear lin(huge, huge);
    EXPECT_FALSE(lin.weight.defined());
    EXPECT_TRUE(lin.named_parameters().empty());
    const auto specs = lin.named_param_specs();
    ASSERT_EQ(specs.size(), 2u);
    EXPECT_EQ(specs[0].second.shape, (Shape{huge, huge}));
    const nn::MultiheadAttention mha(8, 2);
    EXPECT_EQ(mha.named_param_specs().size(), 4u);
    EXPECT_THROW(nn::MultiheadAttention(int64_t{1} << 62, 2), std::overflow_error);  // 3E does not fit
  }
  const nn::Linear lin(2, 2);
  EXPECT_TRUE(lin.weight.defined());
}

}  // namespace
}  // namespace ag
