// Hot float32 loops, compiled for several instruction sets and picked at run time from what
// the CPU offers (GCC target_clones: AVX-512, AVX2+FMA, baseline x86-64). The binary still
// runs on any x86-64; no -march flag is needed. Each has a plain reference beside it in the
// ops (the float64 path) and a test holding the two equal (tests/autograd/test_vec_kernels.cpp).
#pragma once
#include <cstdint>

namespace ag::kernels::vec {

// y = x·Φ(x) (exact GELU, erfc form) and its backward dx = g·(Φ(x) + x·φ(x)).
void gelu_forward(const float* x, float* y, int64_t n);
void gelu_backward(const float* x, const float* g, float* dx, int64_t n);
// y = gelu(x) and gelu'(x) = Φ(x) + x·φ(x) in one pass, the derivative written over x (the
// fused MLP's training forward: Φ is evaluated once and the backward needs no GELU at all).
void gelu_forward_and_grad(float* x_then_grad, float* y, int64_t n);
// The same with y rounded to bfloat16 as it is written (bf16 bits, or float32 values for the
// portable path): the fused MLP's forward under bf16 autocast, whose second GEMM and dW2 read
// only the rounded h, so no float32 h is stored and read back to be rounded.
void gelu_forward_and_grad_bf16(float* x_then_grad, uint16_t* y_bits, int64_t n);
void gelu_forward_and_grad_bf16(float* x_then_grad, float* y_rounded, int64_t n);

// One row of n: y = softmax(x) (all −inf -> all 0), and dx = y ⊙ (g − Σ g·y).
void softmax_row(const float* x, float* y, int64_t n);
void softmax_row_backward(const float* y, const float* g, float* dx, int64_t n);

// LayerNorm over rows of C: y = (x − μ)·rstd·w + b; writes mean and rstd per row.
// w and b may be null (1 and 0).
void layer_norm_forward(const float* x, const float* w, const float* b, float* y, float* mean, float* rstd,
                        int64_t rows, int64_t C, float eps);
// dx (may be null), and dw, db accumulated (+=) when not null.
void layer_norm_backward(const float* x, const float* w, const float* mean, const float* rstd, const float* g,
                         float* dx, float* dw, float* db, int64_t rows, int64_t C);

// RMSNorm over rows of C: y = x·rstd·w with rstd = 1/√(mean(x²) + eps); writes rstd per row.
// w may be null (1).
void rms_norm_forward(const float* x, const float* w, float* y, float* rstd, int64_t rows, int64_t C, float eps);
// dx (may be null), and dw accumulated (+=) when not null.
void rms_norm_backward(const float* x, const float* w, const float* rstd, const float* g, float* dx, float* dw,
                       int64_t rows, int64_t C);

// One AdamW step on n elements (PyTorch's formula; decay = 1 − lr·wd, or 1 without decay).
void adamw_step(float* w, float* m, float* v, const float* g, int64_t n, float beta1, float beta2, float decay,
                float step_size, float bc2_sqrt, float eps);

// Σ x² in double, for gradient norms.
double sum_squares(const float* x, int64_t n);

}  // namespace ag::kernels::vec
