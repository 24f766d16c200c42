// What the tests of this folder built on PyTorch's C++ frontend suite share: the few checks
// those cases are phrased with, defined here in attograd's terms.
//
// Each file keeps upstream's inputs and expected values; tests/upstream/README.md names the
// upstream file it draws on and says which are written in the project's own words. A case that
// needs what attograd does not have (CUDA, dtypes other than float32, float64, int64 and bool,
// TorchScript, pretty printing, module cloning, warnings) is not there, and the file says which
// and why.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <string>

#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/tensor.h"

// a and b agree to ag::allclose's default tolerances.
#define ASSERT_VARIABLE_EQ(a, b) ASSERT_TRUE(ag::allclose((a), (b)))
#define EXPECT_VARIABLE_EQ(a, b) EXPECT_TRUE(ag::allclose((a), (b)))

namespace ag::testing_port {
// What `run` throws, as its message; nothing when it returns normally.
template <class Run> std::optional<std::string> message_thrown_by(Run&& run) {
  try {
    run();
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}
}  // namespace ag::testing_port

// `statement` must throw, and its message must contain `part`.
#define ASSERT_THROWS_WITH(statement, part)                                                         \
  do {                                                                                              \
    const auto ag_thrown_ = ::ag::testing_port::message_thrown_by([&] { (void)statement; });       \
    ASSERT_TRUE(ag_thrown_.has_value()) << "`" #statement "` threw nothing";                        \
    ASSERT_NE(ag_thrown_->find(part), std::string::npos)                                            \
        << "`" #statement "` threw \"" << *ag_thrown_ << "\", without \"" << (part) << "\"";        \
  } while (false)

namespace ag::testing_port {

// A fixture whose every test starts from seed 0, so that the random inputs are the same each run.
struct SeedingFixture : ::testing::Test {
  SeedingFixture() { ag::manual_seed(0); }
};

// A float32 tensor of `shape` holding zeros and ones at random.
inline Tensor coin_flips(const Shape& shape) { return Tensor::randint(0, 2, shape).to(DType::Float32); }

// A loss (a function or a module's forward) of sigmoid(x) against 0/1 targets on a 5×6 batch is a
// scalar whose backward gives x a gradient of x's shape.
inline void expect_scalar_loss_with_gradient(const std::function<Tensor(const Tensor&, const Tensor&)>& loss) {
  const Tensor x = Tensor::randn({5, 6}).requires_grad_();
  const Tensor value = loss(sigmoid(x), coin_flips({5, 6}));
  Tensor total = value.sum();
  total.backward();
  EXPECT_EQ(value.shape(), Shape());
  EXPECT_EQ(x.grad().shape(), x.shape());
}

}  // namespace ag::testing_port
