// What the ports of PyTorch's C++ frontend tests (tests/test_libtorch_*.cpp) share: the
// assertion spellings of test/cpp/api/support.h, respelled for attograd.
//
// Each ported case keeps upstream's name, inputs, expected values and assertions; the code is
// respelled per docs/cpp_api.md (ag:: for torch::, plain modules for module holders,
// designated initializers for options builders, tensor.shape() for sizes()). A case or an
// assertion that needs what attograd does not have (CUDA, dtypes other than float32, float64,
// int64 and bool, TorchScript, pretty printing, module cloning, warnings) is left out, and the
// file says which and why.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include "autograd/ops.h"
#include "autograd/random.h"
#include "autograd/tensor.h"

// torch::allclose with torch's default tolerances.
#define ASSERT_VARIABLE_EQ(a, b) ASSERT_TRUE(ag::allclose((a), (b)))
#define EXPECT_VARIABLE_EQ(a, b) EXPECT_TRUE(ag::allclose((a), (b)))

// support.h's ASSERT_THROWS_WITH: the statement throws, and the message holds `substring`.
#define ASSERT_THROWS_WITH(statement, substring)                                                    \
  {                                                                                                 \
    std::string assert_throws_with_error_message;                                                   \
    try {                                                                                           \
      (void)statement;                                                                              \
      FAIL() << "Expected statement `" #statement "` to throw an exception, but it did not";        \
    } catch (const std::exception& e) {                                                             \
      assert_throws_with_error_message = e.what();                                                  \
    }                                                                                               \
    if (assert_throws_with_error_message.find(substring) == std::string::npos) {                    \
      FAIL() << "Error message \"" << assert_throws_with_error_message                              \
             << "\" did not contain expected substring \"" << substring << "\"";                   \
    }                                                                                               \
  }

namespace ag::testing_port {

// support.h's SeedingFixture: every test starts from the same random numbers.
struct SeedingFixture : ::testing::Test {
  SeedingFixture() { ag::manual_seed(0); }
};

}  // namespace ag::testing_port
