// Autocast (autograd/autocast.h): inside an AutocastGuard(BF16) the float32 GEMMs of the ops
// take bf16-rounded operands, in the pool's threads too, and a node's backward runs under the
// setting of its forward; a training step's gradients stay within 3e-2 of float32's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "autograd/autocast.h"
#include "autograd/engine.h"
#include "autograd/kernels/bf16.h"
#include "autograd/kernels/bf16_matrix.h"
#include "autograd/kernels/flash.h"
#include "autograd/kernels/gemm.h"
#include "autograd/kernels/gemm_provider.h"
#include "autograd/ops.h"
#include "autograd/parallel.h"
#include "models/transformer_lm.h"

using namespace ag;
using models::Architecture;
using models::GPTConfig;

namespace {

// A float32 copy of t with every element rounded to bf16 (a leaf).
Tensor rounded(const Tensor& t) {
  Tensor r = t.detach().contiguous().clone();
  float* p = r.data<float>();
  for (int64_t i = 0; i < r.numel(); ++i) p[i] = kernels::round_to_bf16(p[i]);
  return r;
}

double relative_difference(const Tensor& a, const Tensor& ref) {
  const Tensor x = a.contiguous(), y = ref.contiguous();
  double num = 0, den = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double d = static_cast<double>(x.data<float>()[i]) - y.data<float>()[i];
    num += d * d;
    den += static_cast<double>(y.data<float>()[i]) * y.data<float>()[i];
  }
  if (den == 0) return num == 0 ? 0.0 : INFINITY;
  return std::sqrt(num / den);
}

// The pool at n threads while it lives, for a test (the work is split, so a worker runs part of it).
struct Threads {
  int saved = parallel::num_threads();
  explicit Threads(int n) { parallel::set_num_threads(n); }
  ~Threads() { parallel::set_num_threads(saved); }
};
struct TwoThreads : Threads {
  TwoThreads() : Threads(2) {}
};

}  // namespace

TEST(Autocast, GuardSetsAndRestoresThePrecisionPerThread) {
  EXPECT_EQ(autocast_precision(), Precision::FP32);
  EXPECT_FALSE(is_autocast_enabled());
  {
    AutocastGuard bf16(Precision::BF16);
    EXPECT_TRUE(is_autocast_enabled());
    {
      autocast off(Precision::FP32);  // torch.autocast(..., enabled=False) inside a region
      EXPECT_FALSE(is_autocast_enabled());
    }
    EXPECT_TRUE(is_autocast_enabled());
  }
  EXPECT_FALSE(is_autocast_enabled());
  EXPECT_STREQ(precision_name(Precision::BF16), "bf16");
  EXPECT_STREQ(precision_name(Precision::FP32), "fp32");
}

TEST(Autocast, LinearTakesBf16OperandsForwardAndBackward) {
  // Portable path (the default provider): the products are sgemm's on the rounded operands,
  // so bit for bit those of float32 ops on rounded copies.
  TwoThreads two;
  Generator gen(11);
  Tensor x = Tensor::randn({96, 48}, DType::Float32, gen).requires_grad_();
  Tensor w = Tensor::randn({40, 48}, DType::Float32, gen).requires_grad_();
  Tensor b = Tensor::randn({40}, DType::Float32, gen).requires_grad_();
  const Tensor c = Tensor::randn({96, 40}, DType::Float32, gen);  // the upstream gradient
  Tensor y;
  {
    AutocastGuard bf16(Precision::BF16);
    y = linear(x, w, b);
  }
  sum(y * c).backward();  // outside the guard: the node remembers its forward's precision
  Tensor xr = rounded(x).requires_grad_(), wr = rounded(w).requires_grad_();
  const Tensor yr = linear(xr, wr, b.detach());
  EXPECT_TRUE(equal(y, yr));
  EXPECT_FALSE(equal(y, linear(x.detach(), w.detach(), b.detach())));
  // dx = c·W and dW = cᵀ·x, both with rounded operands (c too); db = Σ c in float32
  EXPECT_TRUE(equal(x.grad(), matmul(rounded(c), rounded(w))));
  EXPECT_TRUE(equal(w.grad(), matmul(transpose(rounded(c), 0, 1), rounded(x))));
  EXPECT_TRUE(equal(b.grad(), sum(c, {0})));
}

// Σ_rows c (rows, cols) as the bf16 linear's backward sums its bias gradient on `parts` threads:
// each part's rows (rows·p/parts to rows·(p+1)/parts) down each column in double, the parts added
// in order.
Tensor bias_sum_in_parts(const Tensor& c, int64_t parts) {
  const int64_t rows = c.size(0), cols = c.size(1);
  const float* pc = c.data<float>();
  Tensor out = Tensor::empty({cols}, DType::Float32);
  for (int64_t j = 0; j < cols; ++j) {
    double total = 0;
    for (int64_t p = 0; p < parts; ++p) {
      double part = 0;
      for (int64_t r = rows * p / parts; r < rows * (p + 1) / parts; ++r) part += pc[r * cols + j];
      total += part;
    }
    out.data<float>()[j] = static_cast<float>(total);
  }
  return out;
}

TEST(Autocast, LinearsBiasGradientIsSummedByRowPartsInTheRoundingPass) {
  // Under bf16 the bias gradient is summed in the pass that rounds g, its rows split across the
  // threads (1024 rows of 200: above the 2 x 16k values that split it): each part sums its rows
  // in double, the parts are added in order, on both bf16 paths. On one thread that is
  // sum(g, {0}) itself; on two, within a float's rounding of it.
  Generator gen(17);
  const Tensor x = Tensor::randn({1024, 32}, DType::Float32, gen), w = Tensor::randn({200, 32}, DType::Float32, gen);
  const Tensor c = Tensor::randn({1024, 200}, DType::Float32, gen);  // the upstream gradient
  for (int threads : {1, 2}) {
    const Threads use_threads(threads);
    for (auto provider : kernels::kGemmProviders) {
      if (!kernels::gemm_provider_available(provider)) continue;
      kernels::GemmProviderGuard use(provider);
      Tensor b = Tensor::zeros({200}, DType::Float32).requires_grad_(), wl = w.clone().requires_grad_();
      Tensor xl = x.clone().requires_grad_();
      {
        AutocastGuard bf16(Precision::BF16);
        sum(linear(xl, wl, b) * c).backward();
      }
      const std::string name = std::string(kernels::gemm_provider_name(provider)) + ", threads " + std::to_string(threads);
      EXPECT_TRUE(equal(b.grad(), bias_sum_in_parts(c, threads))) << name;
      if (threads == 1) {
        EXPECT_TRUE(equal(b.grad(), sum(c, {0}))) << name;
      }
      EXPECT_LT(relative_difference(b.grad(), sum(c, {0})), 1e-6) << name;
      // g's copy, rounded part by part, is the one both GEMMs read (the native GEMM sums in its
      // own order, hence the tolerance; an unrounded g is 1e-4 away)
      const Tensor dw = matmul(transpose(rounded(c), 0, 1), rounded(x)), dx = matmul(rounded(c), rounded(w));
      EXPECT_LT(relative_difference(wl.grad(), dw), 2e-5) << name;
      EXPECT_LT(relative_difference(xl.grad(), dx), 2e-5) << name;
      EXPECT_GT(relative_difference(wl.grad(), matmul(transpose(c, 0, 1), rounded(x))), 1e-4) << name;
    }
  }
}

TEST(Autocast, BatchedMatmulRoundsInThePoolsThreadsToo) {
  // 16 products of 64³, dealt out to the pool's threads as whole products.
  TwoThreads two;
  Generator gen(12);
  const Tensor a = Tensor::randn({16, 64, 64}, DType::Float32, gen), b = Tensor::randn({16, 64, 64}, DType::Float32, gen);
  Tensor got;
  {
    AutocastGuard bf16(Precision::BF16);
    got = matmul(a, b);
  }
  EXPECT_TRUE(equal(got, matmul(rounded(a), rounded(b))));
  EXPECT_FALSE(is_autocast_enabled());
}

TEST(Autocast, Float64IsNeverRounded) {
  Generator gen(13);
  const Tensor a = Tensor::randn({8, 8}, DType::Float64, gen), b = Tensor::randn({8, 8}, DType::Float64, gen);
  const Tensor ref = matmul(a, b);
  AutocastGuard bf16(Precision::BF16);
  const Tensor got = matmul(a, b);
  for (int64_t i = 0; i < 64; ++i) EXPECT_EQ(got.data<double>()[i], ref.data<double>()[i]);
}

TEST(Autocast, AttentionAndTheFusedMlpChangeOnlyAtBf16sScale) {
  // The blockwise attention rounds q, k, v and the probabilities before P·V (as torch's bf16
  // flash attention does); the fused MLP rounds both GEMMs' operands. Both stay close to
  // float32 and are not float32.
  Generator gen(14);
  const Tensor qkv = Tensor::randn({2, 64, 3 * 32}, DType::Float32, gen);
  const Tensor x = Tensor::randn({2, 64, 32}, DType::Float32, gen);
  const Tensor w1 = Tensor::randn({128, 32}, DType::Float32, gen), b1 = Tensor::randn({128}, DType::Float32, gen);
  const Tensor w2 = Tensor::randn({32, 128}, DType::Float32, gen), b2 = Tensor::randn({32}, DType::Float32, gen);
  const Tensor att = self_attention_qkv(qkv, 4, true), mlp = gelu_mlp(x, w1, b1, w2, b2);
  Tensor att16, mlp16;
  {
    AutocastGuard bf16(Precision::BF16);
    att16 = self_attention_qkv(qkv, 4, true);
    mlp16 = gelu_mlp(x, w1, b1, w2, b2);
  }
  EXPECT_GT(relative_difference(att16, att), 0.0);
  EXPECT_LT(relative_difference(att16, att), 1e-2);
  EXPECT_GT(relative_difference(mlp16, mlp), 0.0);
  EXPECT_LT(relative_difference(mlp16, mlp), 1e-2);
}

TEST(Autocast, FusedMlpsBackwardOnTheOtherBf16PathReadsTheForwardsRoundedH) {
  // Under bf16 the fused MLP's forward keeps h only as its rounded copy. A backward that cannot
  // use the forward's copies (the provider changed in between: native bits against the portable
  // path's values) falls back to ops on float32 tensors, and takes h from that copy.
  TwoThreads two;
  std::string why;
  if (!kernels::gemm_provider_available(kernels::GemmProvider::OneDNN, &why)) GTEST_SKIP() << why;
  {
    kernels::GemmProviderGuard onednn(kernels::GemmProvider::OneDNN);
    if (!kernels::bf16_path_is_native()) GTEST_SKIP() << "oneDNN has no native bf16 GEMM on this CPU";
  }
  Generator gen(18);
  const Tensor x = Tensor::randn({96, 32}, DType::Float32, gen);
  const Tensor w1 = Tensor::randn({128, 32}, DType::Float32, gen), b1 = Tensor::randn({128}, DType::Float32, gen);
  const Tensor w2 = Tensor::randn({32, 128}, DType::Float32, gen), b2 = Tensor::randn({32}, DType::Float32, gen);
  const Tensor c = Tensor::randn({96, 32}, DType::Float32, gen);  // the upstream gradient
  Tensor xl = x.clone().requires_grad_(), w1l = w1.clone().requires_grad_(), w2l = w2.clone().requires_grad_(), y;
  {
    kernels::GemmProviderGuard onednn(kernels::GemmProvider::OneDNN);
    AutocastGuard bf16(Precision::BF16);
    y = gelu_mlp(xl, w1l, b1, w2l, b2);
  }
  {
    kernels::GemmProviderGuard openblas(kernels::GemmProvider::OpenBLAS);
    sum(y * c).backward();
  }
  const Tensor h = gelu(linear(rounded(x), rounded(w1), b1));
  EXPECT_LT(relative_difference(w2l.grad(), matmul(transpose(rounded(c), 0, 1), rounded(h))), 2e-5);
}

TEST(Autocast, FusedMlpRoundsEachOperandOnceForwardAndBackward) {
  // The fused MLP keeps the bf16 copies of x and h from its forward and rounds g and dpre once
  // each for both GEMMs that read them: every GEMM still sees exactly the rounded operands, on
  // both bf16 paths. The reference is the composition on explicitly rounded float32 copies (its
  // GELU is the op's, not the fused kernel's, hence a tolerance far below bf16's 4e-3).
  TwoThreads two;
  Generator gen(16);
  const Tensor x = Tensor::randn({96, 32}, DType::Float32, gen);
  const Tensor w1 = Tensor::randn({128, 32}, DType::Float32, gen), b1 = Tensor::randn({128}, DType::Float32, gen);
  const Tensor w2 = Tensor::randn({32, 128}, DType::Float32, gen), b2 = Tensor::randn({32}, DType::Float32, gen);
  const Tensor c = Tensor::randn({96, 32}, DType::Float32, gen);  // the upstream gradient
  for (auto provider : kernels::kGemmProviders) {
    if (!kernels::gemm_provider_available(provider)) continue;
    kernels::GemmProviderGuard use(provider);
    Tensor xl = x.clone().requires_grad_(), w1l = w1.clone().requires_grad_(), w2l = w2.clone().requires_grad_();
    {
      AutocastGuard bf16(Precision::BF16);
      sum(gelu_mlp(xl, w1l, b1, w2l, b2) * c).backward();
    }
    // y = gelu(x·W1ᵀ + b1)·W2ᵀ + b2 with every GEMM operand rounded
    Tensor pre = linear(rounded(x), rounded(w1), b1).requires_grad_();
    const Tensor h = gelu(pre);
    const Tensor dh = matmul(rounded(c), rounded(w2));            // g·W2
    const Tensor dpre = grad({h}, {pre}, {dh})[0];                // dh ⊙ gelu'(pre)
    const Tensor dx = matmul(rounded(dpre), rounded(w1));         // dpre·W1
    const Tensor dw1 = matmul(transpose(rounded(dpre), 0, 1), rounded(x));
    const Tensor dw2 = matmul(transpose(rounded(c), 0, 1), rounded(h));
    const char* name = kernels::gemm_provider_name(provider);
    EXPECT_LT(relative_difference(xl.grad(), dx), 2e-5) << name;
    EXPECT_LT(relative_difference(w1l.grad(), dw1), 2e-5) << name;
    EXPECT_LT(relative_difference(w2l.grad(), dw2), 2e-5) << name;
    // what the test tells apart: the same gradient from an unrounded g is bf16's scale away
    EXPECT_GT(relative_difference(w2l.grad(), matmul(transpose(c, 0, 1), rounded(h))), 1e-4) << name;
  }
}

TEST(Autocast, AttentionsBackwardStaysAtBf16sScale) {
  // The blockwise attention's backward reads each head's q, k, v and dO rounded once and each
  // tile's P and dS rounded once: its gradient stays within bf16's scale of float32's, causal
  // or not, on one tile (T = 64) and on several (T = 300: partial tiles, masked blocks), on
  // both bf16 paths; a wrong tile offset would be far off.
  TwoThreads two;
  for (const int64_t T : {64, 300}) {
    for (const bool causal : {true, false}) {
      Generator gen(17);
      const Tensor qkv = Tensor::randn({2, T, 3 * 32}, DType::Float32, gen);
      const Tensor c = Tensor::randn({2, T, 32}, DType::Float32, gen);  // the upstream gradient
      Tensor x32 = qkv.clone().requires_grad_();
      sum(self_attention_qkv(x32, 2, causal) * c).backward();
      for (auto provider : kernels::kGemmProviders) {
        if (!kernels::gemm_provider_available(provider)) continue;
        kernels::GemmProviderGuard use(provider);
        Tensor x16 = qkv.clone().requires_grad_();
        {
          AutocastGuard bf16(Precision::BF16);
          sum(self_attention_qkv(x16, 2, causal) * c).backward();
        }
        const double d = relative_difference(x16.grad(), x32.grad());
        EXPECT_GT(d, 0.0) << "T " << T << " causal " << causal << " " << kernels::gemm_provider_name(provider);
        EXPECT_LT(d, 2e-2) << "T " << T << " causal " << causal << " " << kernels::gemm_provider_name(provider);
      }
    }
  }
}

namespace {

// Every parameter's gradient of one loss.backward() of model m on (x, y), at a precision.
std::vector<std::pair<std::string, Tensor>> step_grads(models::TransformerLM& m, const Tensor& x, const Tensor& y,
                                                       Precision p) {
  for (auto& [n, t] : m.named_parameters()) t.zero_grad();
  {
    AutocastGuard precision(p);
    m.loss(x, y).backward();
  }
  std::vector<std::pair<std::string, Tensor>> g;
  for (auto& [n, t] : m.named_parameters()) g.emplace_back(n, t.grad().clone());
  return g;
}

void expect_bf16_gradients_close(const GPTConfig& cfg, int64_t batch) {
  Generator gen(15);
  models::TransformerLM m(cfg, DType::Float32, gen);
  for (auto& [n, p] : m.named_parameters()) {  // zero-initialised projections would stop the gradient
    float* v = p.data<float>();
    bool zero = true;
    for (int64_t i = 0; i < p.numel(); ++i) zero = zero && v[i] == 0.0f;
    if (zero && p.dim() == 2)
      for (int64_t i = 0; i < p.numel(); ++i) v[i] = static_cast<float>(0.02 * gen.normal());
  }
  const Tensor x = Tensor::randint(0, cfg.vocab_size, {batch, cfg.block_size}, gen);
  const Tensor y = Tensor::randint(0, cfg.vocab_size, {batch, cfg.block_size}, gen);
  for (auto provider : kernels::kGemmProviders) {
    if (!kernels::gemm_provider_available(provider)) continue;
    kernels::GemmProviderGuard use(provider);
    const auto fp32 = step_grads(m, x, y, Precision::FP32);
    const auto bf16 = step_grads(m, x, y, Precision::BF16);
    ASSERT_EQ(fp32.size(), bf16.size());
    double worst = 0;
    for (size_t i = 0; i < fp32.size(); ++i) {
      const double d = relative_difference(bf16[i].second, fp32[i].second);
      EXPECT_LE(d, 3e-2) << fp32[i].first << " with " << kernels::gemm_provider_name(provider);
      worst = std::max(worst, d);
    }
    EXPECT_GT(worst, 0.0) << "bf16 changed nothing with " << kernels::gemm_provider_name(provider);
  }
}

}  // namespace

TEST(Autocast, DefaultGptStepGradientsWithin3e2OfFloat32) {
  expect_bf16_gradients_close(GPTConfig{65, 4, 4, 128, 64, 0.0}, 4);
}

TEST(Autocast, ModernStepGradientsWithin3e2OfFloat32) {
  GPTConfig cfg{65, 2, 4, 128, 64, 0.0};
  cfg.arch = Architecture::modern(30.0);
  expect_bf16_gradients_close(cfg, 4);
}

TEST(Autocast, AWeightIsRoundedOncePerRegionAndAgainWhenWritten) {
  Generator gen(16);
  Tensor w = Tensor::randn({8, 4}, DType::Float32, gen).requires_grad_();
  EXPECT_EQ(autocast_weight(w), nullptr);  // outside autocast
  {
    AutocastGuard bf16(Precision::BF16);
    const kernels::Bf16Matrix* first = autocast_weight(w);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(autocast_weight(w), first);           // the forward's GEMMs share it
    EXPECT_EQ(autocast_weight(w.detach()), first);  // and the backward's saved copy (the same storage)
    EXPECT_EQ(autocast_weight(w * 2.0), nullptr);   // an activation is rounded by each GEMM itself
    {
      NoGradGuard no_grad;
      w.copy_(Tensor::full({8, 4}, 0.1));  // written (a version bump): rounded again
    }
    const kernels::Bf16Matrix* again = autocast_weight(w);
    ASSERT_NE(again, nullptr);
    const bool native = again->native();
    const float got = native ? kernels::bf16_to_float(static_cast<const uint16_t*>(again->data())[5])
                             : static_cast<const float*>(again->data())[5];
    EXPECT_EQ(got, kernels::round_to_bf16(0.1f));
  }
  // Between regions an optimizer writes through the data pointer, with no version bump: the
  // next region starts empty, so it rounds the new values.
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] = 0.3f;
  AutocastGuard bf16(Precision::BF16);
  const kernels::Bf16Matrix* next = autocast_weight(w);
  ASSERT_NE(next, nullptr);
  const float got = next->native() ? kernels::bf16_to_float(static_cast<const uint16_t*>(next->data())[5])
                                   : static_cast<const float*>(next->data())[5];
  EXPECT_EQ(got, kernels::round_to_bf16(0.3f));
}

TEST(Autocast, SelfAttentionRoundsQkvOnceWithTheBitsOfRoundingPerTile) {
  // Under bf16 autocast, self_attention_qkv's forward rounds each head's q, k and v once
  // (flash::RoundedHeads) and its backward reads them from there, where each forward tile GEMM
  // had rounded its own tiles and the backward each slice again: the same operands at the same
  // row strides, so the same bits as the flash kernels without them. On every provider's bf16
  // path, two query tiles (the second partial), causal and not, two threads; and a backward on
  // the other path (native bits against float32 values) rounds for itself, as before.
  using namespace kernels::flash;
  TwoThreads two;
  const int64_t N = 2, H = 3, hd = 8, E = H * hd, L = kTileQ + 9;
  Generator gen(23);
  const Tensor x = Tensor::randn({N, L, 3 * E}, DType::Float32, gen), c = Tensor::randn({N, L, E}, DType::Float32, gen);
  const Slices sq = head_slices(N, H, L, 3 * E, 0, hd), sk = head_slices(N, H, L, 3 * E, E, hd),
               sv = head_slices(N, H, L, 3 * E, 2 * E, hd), so = head_slices(N, H, L, E, 0, hd);
  const float scale = 1 / std::sqrt(static_cast<float>(hd));
  auto same_bits = [](const Tensor& a, const Tensor& b) {
    return a.numel() == b.numel() && std::memcmp(a.data<float>(), b.data<float>(), a.numel() * sizeof(float)) == 0;
  };
  std::vector<kernels::GemmProvider> providers;
  for (auto provider : kernels::kGemmProviders)
    if (kernels::gemm_provider_available(provider)) providers.push_back(provider);
  for (auto forward_provider : providers)
    for (auto backward_provider : providers)
      for (bool causal : {false, true}) {
        Dims d;
        d.BH = N * H, d.L = L, d.S = L, d.D = hd, d.Dv = hd, d.causal = causal;
        const std::string name = std::string(kernels::gemm_provider_name(forward_provider)) + " then " +
                                 kernels::gemm_provider_name(backward_provider) + (causal ? ", causal" : "");
        AutocastGuard bf16(Precision::BF16);
        Tensor xl = x.clone().requires_grad_(), o;
        Tensor o_ref = Tensor::empty({N, L, E}, DType::Float32), lse = Tensor::empty({N * H, L}, DType::Float32);
        {
          kernels::GemmProviderGuard use(forward_provider);
          o = self_attention_qkv(xl, H, causal);
          forward<float>(d, scale, x.data<float>(), sq, x.data<float>(), sk, x.data<float>(), sv, o_ref.data<float>(),
                         so, lse.data<float>());
        }
        EXPECT_TRUE(same_bits(o, o_ref)) << name;
        kernels::GemmProviderGuard use(backward_provider);
        const Tensor dx = grad({sum(mul(o, c))}, {xl})[0];
        Tensor dx_ref = Tensor::empty({N, L, 3 * E}, DType::Float32);
        float* p = dx_ref.data<float>();
        backward<float>(d, scale, x.data<float>(), sq, x.data<float>(), sk, x.data<float>(), sv, o_ref.data<float>(), so,
                        c.data<float>(), so, lse.data<float>(), p, sq, p, sk, p, sv);
        EXPECT_TRUE(same_bits(dx, dx_ref)) << name;
      }
}
