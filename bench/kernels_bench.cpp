// Google Benchmark micro-benchmarks of the kernels a training step spends its time in, at the
// default model's shapes (B·T = 768 rows, E = 128). `build/attograd_bench`; for whole steps
// and the comparison with PyTorch see `attograd bench` and `make bench`.
#include <benchmark/benchmark.h>

#include "autograd/engine.h"
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

void BM_LayerNormForwardBackward(benchmark::State& st) {
  const Tensor x = Tensor::randn({768, 128}, DType::Float32, gen()).requires_grad_();
  const Tensor w = Tensor::ones({128}).requires_grad_(), b = Tensor::zeros({128}).requires_grad_();
  const Tensor g = Tensor::ones({768, 128});
  for (auto _ : st) layer_norm(x, w, b).backward(g);
  st.SetItemsProcessed(st.iterations() * x.numel());
}
BENCHMARK(BM_LayerNormForwardBackward)->Unit(benchmark::kMicrosecond);

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
