// Google Benchmark micro-benchmarks of the kernels a training step spends its time in, at the
// default model's shapes (B·T = 768 rows, E = 128). `build/attograd_bench`; for whole steps
// and the comparison with PyTorch see `attograd bench` and `make bench`.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "autograd/async_signals.h"
#include "autograd/engine.h"
#include "autograd/kernels/flash.h"
#include "autograd/kernels/onednn.h"
#include "autograd/kernels/vec.h"
#include "autograd/ops.h"

using namespace ag;

namespace {
Generator& gen() {
  static Generator g(1);
  return g;
}

void BM_Linear(benchmark::State& st) {  // (768, in) · (out, in)ᵀ
  const int64_t in = st.range(0), out = st.range(1);
  const Tensor x = Tensor::randn({768, in}, DType::Float32, gen()), w = Tensor::randn({out, in}, DType::Float32, gen());
  for (auto _ : st) benchmark::DoNotOptimize(linear(x, w).raw_data());
  st.SetItemsProcessed(st.iterations() * 2 * 768 * in * out);  // FLOPs
}
BENCHMARK(BM_Linear)->Args({128, 384})->Args({128, 512})->Args({512, 128})->Unit(benchmark::kMicrosecond);

void BM_GeluForwardBackward(benchmark::State& st) {
  const Tensor x = Tensor::randn({768, 512}, DType::Float32, gen()).requires_grad_();
  const Tensor g = Tensor::ones({768, 512});
  for (auto _ : st) gelu(x).backward(g);
  st.SetItemsProcessed(st.iterations() * x.numel());
}
BENCHMARK(BM_GeluForwardBackward)->Unit(benchmark::kMicrosecond);

// The fused MLP's GELU pass on one thread, one row of the large model's hidden width at a
// time: the float32 kernel (Φ through erfc's exp and φ through a second) against the bf16
// autocast one (both from one exp, h rounded as it is written). The hidden values are
// restored before each pass (the kernel writes gelu'(pre) over them), outside the timing.
void gelu_pass(benchmark::State& st, bool bf16) {
  const int64_t rows = st.range(0), H = 1536;
  const Tensor pre = Tensor::randn({rows, H}, DType::Float32, gen());
  std::vector<float> work(static_cast<size_t>(rows * H)), h(work.size());
  std::vector<uint16_t> bits(work.size());
  for (auto _ : st) {
    st.PauseTiming();
    std::copy(pre.data<float>(), pre.data<float>() + rows * H, work.begin());
    st.ResumeTiming();
    for (int64_t r = 0; r < rows; ++r) {
      if (bf16)
        kernels::vec::gelu_forward_and_grad_bf16(work.data() + r * H, bits.data() + r * H, H);
      else
        kernels::vec::gelu_forward_and_grad(work.data() + r * H, h.data() + r * H, H);
    }
    benchmark::DoNotOptimize(bits.data());
    benchmark::DoNotOptimize(h.data());
  }
  st.SetItemsProcessed(st.iterations() * rows * H);
}
void BM_GeluForwardAndGradFloat32(benchmark::State& st) { gelu_pass(st, false); }
void BM_GeluForwardAndGradBf16(benchmark::State& st) { gelu_pass(st, true); }
BENCHMARK(BM_GeluForwardAndGradFloat32)->Arg(128)->Arg(2048)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GeluForwardAndGradBf16)->Arg(128)->Arg(2048)->Unit(benchmark::kMicrosecond);

// The blockwise attention's softmax passes on one (128, 128) tile of scores, one thread: the
// forward's online softmax (max, exp, sum; flash.h) and the backward's P and dS (exp, then
// P ⊙ (dP − D)), the parts of its time outside the GEMMs that grow with L·S. The scores are
// restored before each pass (both kernels write over them), outside the timing.
void softmax_tile(benchmark::State& st, bool backward) {
  constexpr int64_t kT = 128;
  const Tensor scores = Tensor::randn({kT, kT}, DType::Float32, gen());
  const Tensor dp0 = Tensor::randn({kT, kT}, DType::Float32, gen());
  std::vector<float> s(kT * kT), dp(kT * kT), m(kT), l(kT), alpha(kT), lse(kT, 5.0f), drow(kT, 0.1f);
  for (auto _ : st) {
    st.PauseTiming();
    std::copy(scores.data<float>(), scores.data<float>() + kT * kT, s.begin());
    std::copy(dp0.data<float>(), dp0.data<float>() + kT * kT, dp.begin());
    std::fill(m.begin(), m.end(), -1.0f);
    std::fill(l.begin(), l.end(), 1.0f);
    st.ResumeTiming();
    if (backward)
      kernels::flash::softmax_grad_block(s.data(), dp.data(), kT, kT, kT, lse.data(), drow.data());
    else
      kernels::flash::online_softmax_block(s.data(), kT, kT, kT, m.data(), l.data(), alpha.data());
    benchmark::DoNotOptimize(s.data());
    benchmark::DoNotOptimize(dp.data());
  }
  st.SetItemsProcessed(st.iterations() * kT * kT);
}
void BM_OnlineSoftmaxTile(benchmark::State& st) { softmax_tile(st, false); }
void BM_SoftmaxGradTile(benchmark::State& st) { softmax_tile(st, true); }
BENCHMARK(BM_OnlineSoftmaxTile)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SoftmaxGradTile)->Unit(benchmark::kMicrosecond);

// What holding the asynchronous signals around a oneDNN GEMM costs (autograd/async_signals.h):
// a scope on a thread that does not hold them (two rt_sigprocmask calls, as on the caller's
// thread), one on a thread that does (a pool worker's: nothing), and the attention's 64×64×32
// bf16 tile GEMM it wraps.
void BM_AsyncSignalsHeldScope(benchmark::State& st) {
  for (auto _ : st) {
    const AsyncSignalsHeld held;
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_AsyncSignalsHeldScope);
void BM_AsyncSignalsHeldScopeInsideAHeldOne(benchmark::State& st) {
  const AsyncSignalsHeld outer;
  for (auto _ : st) {
    const AsyncSignalsHeld held;
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_AsyncSignalsHeldScopeInsideAHeldOne);
// An attention tile's q·kᵀ (64×64×32) through one of oneDNN's bf16 interfaces: the per-call
// cost the matmul primitive adds (its kept primitive looked up, its memory handles set).
using Bf16GemmFn = void (*)(bool, bool, int64_t, int64_t, int64_t, float, const uint16_t*, int64_t, const uint16_t*,
                            int64_t, float, float*, int64_t);
void attention_tile(benchmark::State& st, Bf16GemmFn fn, bool runs) {
  if (!runs) {
    st.SkipWithError("oneDNN has no bf16 GEMM here");
    return;
  }
  std::vector<uint16_t> a(64 * 32, 0x3f80), b(64 * 32, 0x3f80);  // bf16 1.0
  std::vector<float> c(64 * 64);
  for (auto _ : st) fn(false, true, 64, 64, 32, 1.0f, a.data(), 32, b.data(), 32, 0.0f, c.data(), 64);
}
void BM_OneDnnBf16GemmAttentionTile(benchmark::State& st) {
  attention_tile(st, kernels::onednn::gemm_bf16, kernels::onednn::bf16_gemm_runs());
}
BENCHMARK(BM_OneDnnBf16GemmAttentionTile);
void BM_OneDnnBf16MatmulAttentionTile(benchmark::State& st) {
  attention_tile(st, kernels::onednn::matmul_bf16, kernels::onednn::matmul_bf16_runs());
}
BENCHMARK(BM_OneDnnBf16MatmulAttentionTile);

void BM_LayerNormForwardBackward(benchmark::State& st) {
  const Tensor x = Tensor::randn({768, 128}, DType::Float32, gen()).requires_grad_();
  const Tensor w = Tensor::ones({128}).requires_grad_(), b = Tensor::zeros({128}).requires_grad_();
  const Tensor g = Tensor::ones({768, 128});
  for (auto _ : st) layer_norm(x, w, b).backward(g);
  st.SetItemsProcessed(st.iterations() * x.numel());
}
BENCHMARK(BM_LayerNormForwardBackward)->Unit(benchmark::kMicrosecond);

// layer_norm's float32 backward kernel on one thread, over one thread's share of the large
// model's rows (4096 rows of 384 on two threads): x, g and dx (2.4 MB each) out of L2, as in the
// step. Arg 0: all three gradients (dx, dw, db); 1: dx only.
void BM_LayerNormBackwardKernel(benchmark::State& st) {
  const int64_t rows = 2048, C = 384;
  const Tensor x = Tensor::randn({rows, C}, DType::Float32, gen()), g = Tensor::randn({rows, C}, DType::Float32, gen());
  const Tensor w = Tensor::randn({C}, DType::Float32, gen());
  std::vector<float> mean(rows, 0.1f), rstd(rows, 1.3f), dx(static_cast<size_t>(rows * C)), dw(C), db(C);
  const bool all = st.range(0) == 0;
  for (auto _ : st) {
    kernels::vec::layer_norm_backward(x.data<float>(), w.data<float>(), mean.data(), rstd.data(), g.data<float>(),
                                      dx.data(), all ? dw.data() : nullptr, all ? db.data() : nullptr, rows, C);
    benchmark::DoNotOptimize(dx.data());
  }
  st.SetItemsProcessed(st.iterations() * rows * C);
}
BENCHMARK(BM_LayerNormBackwardKernel)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_AttentionProbsForwardBackward(benchmark::State& st) {  // (B·H, T, hd) = (48, T, 32), causal
  const int64_t T = st.range(0);
  const Tensor q = Tensor::randn({48, T, 32}, DType::Float32, gen()).requires_grad_();
  const Tensor k = Tensor::randn({48, T, 32}, DType::Float32, gen()).requires_grad_();
  const Tensor g = Tensor::ones({48, T, T});
  for (auto _ : st) attention_probs(q, k, Tensor(), 0.17, true).backward(g);
}
BENCHMARK(BM_AttentionProbsForwardBackward)->Arg(64)->Arg(256)->Unit(benchmark::kMicrosecond);

void BM_CrossEntropy(benchmark::State& st) {
  const Tensor logits = Tensor::randn({768, 65}, DType::Float32, gen()).requires_grad_();
  const Tensor t = Tensor::randint(0, 65, {768}, gen());
  for (auto _ : st) cross_entropy(logits, t).backward();
}
BENCHMARK(BM_CrossEntropy)->Unit(benchmark::kMicrosecond);
}  // namespace

BENCHMARK_MAIN();
