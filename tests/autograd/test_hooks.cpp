// Tensor hooks (register_hook, remove), retain_grad, post-accumulate-grad hooks, and the
// anomaly mode (engine.h).
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace ag;
using ag::testing_util::error_of;
using ag::testing_util::leaf;


TEST(Hooks, LeafHookSeesTheSummedGradientAndMayReplaceIt) {
  Tensor x = leaf({1, 2});
  std::vector<std::vector<double>> seen;
  x.register_hook([&](const Tensor& g) {
    seen.push_back(g.to_double_vector());
    return mul(g, 10.0);
  });
  sum(add(mul(x, 2.0), mul(x, 3.0))).backward();  // two uses: 2 + 3
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], (std::vector<double>{5, 5}));
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{50, 50}));
}

TEST(Hooks, IntermediateHookChangesWhatFlowsFurtherAndHandleRemovesIt) {
  Tensor x = leaf({1, 2});
  Tensor h = mul(x, 2.0);
  int calls = 0;
  HookHandle handle = h.register_hook([&](const Tensor& g) {
    ++calls;
    return mul(g, 0.0);
  });
  sum(mul(h, h)).backward();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{0, 0}));
  handle.remove();
  handle.remove();  // idempotent
  x.zero_grad();
  Tensor h2 = mul(x, 2.0);
  sum(mul(h2, h2)).backward();  // a new graph: never had the hook
  Tensor h3 = mul(x, 2.0);
  HookHandle keep = h3.register_hook([&](const Tensor&) { ++calls; return Tensor(); });  // observe only
  keep.remove();
  sum(h3).backward();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(x.grad().to_double_vector(), (std::vector<double>{10, 18}));  // 8x + 2
}

TEST(Hooks, RetainGradKeepsAnIntermediatesGradient) {
  Tensor x = leaf({1, -2});
  Tensor h = mul(x, 3.0), u = mul(x, 4.0);
  h.retain_grad();
  EXPECT_TRUE(h.retains_grad());
  EXPECT_FALSE(u.retains_grad());
  sum(add(mul(h, h), u)).backward();
  EXPECT_EQ(h.grad().to_double_vector(), (std::vector<double>{6, -12}));  // 2h
  EXPECT_FALSE(u.grad().defined());
  EXPECT_THROW(Tensor::ones({2}).retain_grad(), std::invalid_argument);
  EXPECT_THROW(Tensor::ones({2}).register_hook([](const Tensor& g) { return g; }), std::invalid_argument);
}

TEST(Hooks, HookOnALeafAppliesInAutogradGradToo) {
  Tensor x = leaf({1, 2});
  x.register_hook([](const Tensor& g) { return mul(g, -1.0); });
  const Tensor g = grad({sum(mul(x, x))}, {x})[0];
  EXPECT_EQ(g.to_double_vector(), (std::vector<double>{-2, -4}));
  EXPECT_FALSE(x.grad().defined());
}

// The post-accumulate hook fires as soon as the leaf's gradient is complete, while the rest of
// the graph is still being processed (what bucketed data-parallel reduction overlaps with).
TEST(Hooks, PostAccumulateGradHookFiresOnceWhenTheLeafIsCompleteDuringBackward) {
  Tensor a = leaf({1, 2}), b = leaf({0.5, -0.5});
  std::vector<std::string> log;
  a.register_post_accumulate_grad_hook([&](const Tensor& t) {
    log.push_back("a " + std::to_string(t.grad().at({0})) + (b.grad().defined() ? " b-done" : " b-pending"));
  });
  b.register_post_accumulate_grad_hook([&](const Tensor&) { log.push_back("b"); });
  // a is used twice near the output (its gradient sums both uses); b is deep in the graph.
  Tensor deep = tanh(tanh(mul(b, 2.0)));
  sum(add(mul(deep, a), mul(a, 3.0))).backward();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].substr(0, 2), "a ");
  EXPECT_NE(log[0].find("b-pending"), std::string::npos) << log[0];
  EXPECT_EQ(log[1], "b");
  EXPECT_NEAR(a.grad().at({0}), std::tanh(std::tanh(1.0)) + 3.0, 1e-12);
  EXPECT_THROW(mul(a, 2.0).register_post_accumulate_grad_hook([](const Tensor&) {}), std::invalid_argument);
  // not for ag::grad (nothing is accumulated)
  log.clear();
  grad({sum(mul(a, a))}, {a});
  EXPECT_TRUE(log.empty());
}

TEST(Anomaly, WithoutTheGuardANanGradientPassesSilently) {
  Tensor x = leaf({0.0, 1.0});
  sum(sqrt(x)).backward();  // d√x at 0 is inf
  EXPECT_TRUE(std::isinf(x.grad().at({0})));
}

TEST(Anomaly, TheGuardNamesTheOpAndWhereItWasRecorded) {
  EXPECT_FALSE(AnomalyMode::enabled());
  Tensor x = leaf({0.0, 1.0});
  std::string msg;
  {
    DetectAnomalyGuard anomaly;
    EXPECT_TRUE(AnomalyMode::enabled());
    Tensor y;
    {
      AnomalyScope scope("block 3.mlp");
      y = sum(mul(sqrt(x), 2.0));
    }
    msg = error_of([&] { y.backward(); });
  }
  EXPECT_FALSE(AnomalyMode::enabled());
  for (const char* part : {"'sqrt'", "inf", "elementwise.cpp", "block 3.mlp"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " not in: " << msg;
  // NaN too: √x at x = −1 is NaN, and so is its gradient 1/(2√x).
  DetectAnomalyGuard anomaly;
  Tensor z = leaf({-1.0});
  const std::string m2 = error_of([&] { sum(sqrt(z)).backward(); });
  EXPECT_NE(m2.find("nan"), std::string::npos) << m2;
}
