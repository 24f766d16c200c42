// Tensor storage, views, factories, printing and the random generator.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/ops.h"
#include "autograd/tensor.h"

using namespace ag;

TEST(Tensor, FactoriesShapesAndDtypes) {
  Tensor z = Tensor::zeros({2, 3, 4, 5}, DType::Float64);
  EXPECT_EQ(z.dim(), 4);
  EXPECT_EQ(z.numel(), 120);
  EXPECT_EQ(z.dtype(), DType::Float64);
  EXPECT_EQ(z.size(-1), 5);
  EXPECT_TRUE(z.is_contiguous());
  EXPECT_EQ(z.strides(), (Shape{60, 20, 5, 1}));
  Tensor o = Tensor::ones({3}, DType::Int64);
  EXPECT_EQ(o.to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_DOUBLE_EQ(Tensor::scalar(2.5).item(), 2.5);
  EXPECT_EQ(Tensor::arange(4).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_THROW(Tensor::from_vector(std::vector<double>{1, 2, 3}, {2, 2}), std::invalid_argument);
  EXPECT_THROW(Tensor::empty({2, -1}), std::invalid_argument);
}

TEST(Tensor, ReshapeOfContiguousAndNarrowShareStorage) {
  Tensor a = Tensor::from_vector(std::vector<double>{0, 1, 2, 3, 4, 5}, {2, 3});
  Tensor r = reshape(a, {3, 2});
  EXPECT_EQ(r.impl().storage, a.impl().storage);
  Tensor n = narrow(a, 1, 1, 2);  // [[1, 2], [4, 5]]
  EXPECT_EQ(n.impl().storage, a.impl().storage);
  EXPECT_FALSE(n.is_contiguous());
  EXPECT_EQ(n.to_double_vector(), (std::vector<double>{1, 2, 4, 5}));
  a.data<float>()[1] = 42;  // writes through the shared storage
  EXPECT_DOUBLE_EQ(n.at({0, 0}), 42);
  EXPECT_DOUBLE_EQ(r.at({0, 1}), 42);
  Tensor t = transpose(a, 0, 1);
  EXPECT_EQ(t.impl().storage, a.impl().storage);
  EXPECT_EQ(t.to_double_vector(), (std::vector<double>{0, 3, 42, 4, 2, 5}));
  EXPECT_THROW(view(t, {6}), std::invalid_argument);  // a transposed view cannot be viewed flat
  EXPECT_EQ(reshape(t, {6}).to_double_vector(), (std::vector<double>{0, 3, 42, 4, 2, 5}));
}

TEST(Tensor, PrintingShowsDtypeShapeAndValues) {
  Tensor a = Tensor::matrix({{1, 2}, {3, 4.5}}, DType::Float64);
  const std::string s = a.to_string();
  EXPECT_NE(s.find("float64"), std::string::npos) << s;
  EXPECT_NE(s.find("shape=[2, 2]"), std::string::npos) << s;
  EXPECT_NE(s.find("[[1.0000, 2.0000],\n [3.0000, 4.5000]]"), std::string::npos) << s;
  Tensor big = Tensor::arange(100);
  EXPECT_NE(big.to_string().find("..."), std::string::npos);
  EXPECT_NE(big.to_string().find("99"), std::string::npos);
}

TEST(Tensor, ConversionAndCopy) {
  Tensor a = Tensor::from_vector(std::vector<double>{1.5, -2.25}, {2}, DType::Float64);
  Tensor f = a.to(DType::Float32);
  EXPECT_EQ(f.dtype(), DType::Float32);
  EXPECT_EQ(f.to_double_vector(), (std::vector<double>{1.5, -2.25}));
  Tensor b = Tensor::zeros({2});
  b.copy_(a);
  EXPECT_EQ(b.to_double_vector(), (std::vector<double>{1.5, -2.25}));
  EXPECT_THROW(b.copy_(Tensor::zeros({3})), std::invalid_argument);
  EXPECT_THROW((void)a.data<float>(), std::invalid_argument);
}

TEST(Generator, SeededStreamsAreReproducibleAndRestorable) {
  Generator g1(7), g2(7), g3(8);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(g1.next_u64(), g2.next_u64());
  EXPECT_NE(Generator(7).next_u64(), g3.next_u64());
  Generator g(99);
  g.normal();  // leaves a Box-Muller spare in the state
  const auto st = g.state();
  std::vector<double> a;
  for (int i = 0; i < 5; ++i) a.push_back(g.normal() + g.uniform() + static_cast<double>(g.randint(0, 1000)));
  g.set_state(st);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(a[i], g.normal() + g.uniform() + static_cast<double>(g.randint(0, 1000)));
}

TEST(Generator, DistributionsHaveTheRightMoments) {
  Generator g(1);
  const int n = 200000;
  double s = 0, s2 = 0, u = 0;
  int64_t lo = 10, hi = 0;
  for (int i = 0; i < n; ++i) {
    const double x = g.normal();
    s += x;
    s2 += x * x;
    u += g.uniform();
    const int64_t k = g.randint(3, 7);
    lo = std::min(lo, k);
    hi = std::max(hi, k);
  }
  EXPECT_NEAR(s / n, 0.0, 0.01);
  EXPECT_NEAR(s2 / n, 1.0, 0.02);
  EXPECT_NEAR(u / n, 0.5, 0.005);
  EXPECT_EQ(lo, 3);
  EXPECT_EQ(hi, 6);
  Tensor r = Tensor::randn({1000}, DType::Float32, g, 0.0, 0.02);
  double m = 0;
  for (double v : r.to_double_vector()) m += v * v;
  EXPECT_NEAR(std::sqrt(m / 1000), 0.02, 0.002);
}
