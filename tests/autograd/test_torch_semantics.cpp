// The engine's semantics case by case against PyTorch 2 (the values in the comments are what
// torch 2.15 printed for the same program, float64): accumulation into a held .grad, a second
// backward through nodes that saved nothing, backward(inputs=), and grad()'s options by name.
#include <gtest/gtest.h>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "tests/test_util.h"

using namespace ag;
using ag::testing_util::error_of;
using ag::testing_util::leaf;

namespace {
std::vector<double> values(const Tensor& t) { return t.to_double_vector(); }
}  // namespace

// a = [1, 2]; (a*a).sum().backward(); held = a.grad; (a*3).sum().backward()
// torch: held -> [5, 7], held is a.grad, held._version 1 -> 2.
TEST(TorchSemantics, ABackwardAccumulatesIntoTheHeldGradInPlace) {
  Tensor a = leaf({1, 2});
  sum(a * a).backward();
  const Tensor held = a.grad();
  const uint64_t version = held.version();
  EXPECT_EQ(values(held), (std::vector<double>{2, 4}));
  sum(a * 3.0).backward();
  EXPECT_TRUE(held.same(a.grad()));
  EXPECT_EQ(values(held), (std::vector<double>{5, 7}));
  EXPECT_GT(held.version(), version);  // an in-place write: saved copies of it would notice
}

// A .grad the user set is the tensor that receives the sums (torch: x.grad = y; backward adds into y).
TEST(TorchSemantics, AGradSetByTheUserIsAddedIntoThroughAnyLayout) {
  Tensor x = leaf({1, 2, 3, 4}, {2, 2});
  Tensor base = Tensor::from_vector(std::vector<double>{10, 20, 30, 40}, {2, 2}, DType::Float64);
  Tensor view = transpose(base, 0, 1);  // a strided .grad
  x.set_grad(view);
  sum(x * 2.0).backward();
  EXPECT_TRUE(x.grad().same(view));
  EXPECT_EQ(values(base), (std::vector<double>{12, 22, 32, 42}));
}

// b = [1, 2]; (b*b).sum().backward(); h = b.grad; (b*b*b).sum().backward(create_graph=True)
// torch: h stays [2, 4]; b.grad = [5, 16] is a new tensor that requires grad.
TEST(TorchSemantics, WithCreateGraphTheGradIsReplacedBySum) {
  Tensor b = leaf({1, 2});
  sum(b * b).backward();
  const Tensor h = b.grad();
  sum(b * b * b).backward({}, {.create_graph = true});
  EXPECT_EQ(values(h), (std::vector<double>{2, 4}));
  EXPECT_FALSE(h.same(b.grad()));
  EXPECT_EQ(values(b.grad()), (std::vector<double>{5, 16}));
  EXPECT_TRUE(b.grad().requires_grad());
  b.set_grad(Tensor());  // b.grad's graph points back to b: break the cycle
}

// The micro-batch accumulation of the trainer: float32, the in-place sum is the same
// element-wise addition as before, bit for bit.
TEST(TorchSemantics, InPlaceAccumulationHasTheBitsOfTheSum) {
  Generator gen(7);
  Tensor w = Tensor::randn({64, 33}, DType::Float32, gen).requires_grad_();
  const Tensor x1 = Tensor::randn({5, 64}, DType::Float32, gen), x2 = Tensor::randn({5, 64}, DType::Float32, gen);
  sum(tanh(matmul(x1, w))).backward();
  const Tensor g1 = w.grad().clone();
  w.zero_grad();
  sum(tanh(matmul(x2, w))).backward();
  const Tensor g2 = w.grad().clone();
  w.zero_grad();
  sum(tanh(matmul(x1, w))).backward();
  const Tensor held = w.grad();
  sum(tanh(matmul(x2, w))).backward();
  const std::vector<float> a = g1.to_vector<float>(), b = g2.to_vector<float>(), got = held.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(got[i], a[i] + b[i]) << i;
}

// a = [1, 2]; b = a + 1; b.sum().backward(); b.sum().backward()   torch: a.grad = [2, 2]
TEST(TorchSemantics, ASecondBackwardThroughNodesThatSavedNothingWorks) {
  Tensor a = leaf({1, 2});
  Tensor b = a + 1.0;
  sum(b).backward();
  sum(b).backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{2, 2}));
  // Shapes only, no tensors: reshape, transpose, sum, mean.
  Tensor c = mean(transpose(reshape(a, {2, 1}), 0, 1));
  c.backward();
  c.backward();
  EXPECT_EQ(values(a.grad()), (std::vector<double>{3, 3}));
}

// b = a * a; b.sum().backward(); b.sum().backward()   torch: RuntimeError, this text.
TEST(TorchSemantics, ASecondBackwardThroughSavedTensorsThrowsTorchsError) {
  Tensor a = leaf({1, 2});
  Tensor b = a * a;
  sum(b).backward();
  const std::string msg = error_of([&] { sum(b).backward(); });
  for (const char* part : {"'mul'", "Trying to backward through the graph a second time",
                           "Specify retain_graph=True", ".retain_graph = true"})
    EXPECT_NE(msg.find(part), std::string::npos) << part << " not in: " << msg;
  // So do ops that keep an index or a mask (the rows max picked, dropout's mask).
  Tensor m = max(reshape(a, {1, 2}), 1);
  sum(m).backward();
  EXPECT_THROW(sum(m).backward(), std::runtime_error);
}

// retain_graph defaults to create_graph, as torch's: the graph survives a create_graph grad().
TEST(TorchSemantics, RetainGraphDefaultsToCreateGraph) {
  Tensor x = leaf({0.5, -1});
  Tensor y = sum(x * x * x);
  const Tensor g1 = grad({y}, {x}, {}, {.create_graph = true})[0];
  const Tensor g2 = grad({y}, {x})[0];  // the graph was kept
  EXPECT_EQ(values(g1), values(g2));
  EXPECT_THROW(grad({y}, {x}), std::runtime_error);  // ... but not by a plain grad()
  Tensor z = sum(x * x * x);
  z.backward({}, {.retain_graph = true, .create_graph = false});
  z.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<double>{1.5, 6}));  // 2 · 3x²
}

// x = [1, 2]; w = [3, -1]; h = x*w; y = (h*h).sum(); y.backward(inputs=[w])
// torch: x.grad None, w.grad = [6, -8].
TEST(TorchSemantics, BackwardInputsAccumulatesOnlyIntoThoseTensors) {
  Tensor x = leaf({1, 2}), w = leaf({3, -1});
  int x_hook_calls = 0;
  x.register_hook([&](const Tensor&) {
    ++x_hook_calls;
    return Tensor();
  });
  Tensor h = x * w;
  sum(h * h).backward({}, {.inputs = {w}});
  EXPECT_FALSE(x.grad().defined());
  EXPECT_EQ(x_hook_calls, 0);  // x's accumulation never ran, as in torch
  EXPECT_EQ(values(w.grad()), (std::vector<double>{6, -8}));
}

// x = [1, 2]; h = x*3; y = (h*h).sum()
// y.backward(inputs=[h], retain_graph=True)   torch: h.grad = [6, 12], x.grad None
// y.backward(inputs=[h, x])                   torch: h.grad = [12, 24], x.grad = [18, 36]
TEST(TorchSemantics, BackwardInputsMayBeIntermediates) {
  Tensor x = leaf({1, 2});
  Tensor h = x * 3.0;
  Tensor y = sum(h * h);
  y.backward({}, {.retain_graph = true, .inputs = {h}});
  EXPECT_EQ(values(h.grad()), (std::vector<double>{6, 12}));
  EXPECT_FALSE(x.grad().defined());
  y.backward({}, {.inputs = {h, x}});
  EXPECT_EQ(values(h.grad()), (std::vector<double>{12, 24}));
  EXPECT_EQ(values(x.grad()), (std::vector<double>{18, 36}));
  Tensor c = Tensor::ones({2}, DType::Float64);
  EXPECT_THROW(sum(h * h).backward({}, {.inputs = {c}}), std::invalid_argument);  // c does not require grad
}

// torch.autograd.grad(y, [x, z], allow_unused=True, materialize_grads=True): zeros for z.
TEST(TorchSemantics, GradOptionsByName) {
  Tensor x = leaf({1, 2}), z = leaf({5, 6, 7});
  Tensor y = sum(x * x);
  const std::string msg = error_of<std::invalid_argument>([&] { grad({y}, {x, z}, {}, {.retain_graph = true}); });
  EXPECT_NE(msg.find("appears to not have been used in the graph. Set allow_unused=True"), std::string::npos) << msg;
  const auto unused = grad({y}, {x, z}, {}, {.retain_graph = true, .allow_unused = true});
  EXPECT_FALSE(unused[1].defined());
  const auto zeros = grad({y}, {x, z}, {}, {.materialize_grads = true});
  EXPECT_EQ(values(zeros[0]), (std::vector<double>{2, 4}));
  EXPECT_EQ(values(zeros[1]), (std::vector<double>{0, 0, 0}));
}

// torch.autograd.backward([y1, y2], [g1, g2])
TEST(TorchSemantics, BackwardOfSeveralRoots) {
  Tensor x = leaf({1, 2});
  Tensor y1 = sum(x * x), y2 = x * 3.0;
  backward({y1, y2}, {Tensor::scalar(2.0, DType::Float64), Tensor::from_vector(std::vector<double>{1, -1}, {2}, DType::Float64)});
  EXPECT_EQ(values(x.grad()), (std::vector<double>{7, 5}));  // 2·2x + 3·[1, −1]
}
