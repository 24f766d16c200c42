#include "cli/harness/gradcheck_cases.h"

#include <cmath>

#include "autograd/ops.h"

namespace ag {

namespace {
using V = const std::vector<Tensor>&;
using Args = std::vector<std::pair<std::string, Shape>>;

Tensor ints(std::vector<int64_t> v, Shape s) { return Tensor::from_vector(v, s); }
Tensor bools(std::vector<bool> v, Shape s) { return Tensor::from_vector(v, s); }
}  // namespace

std::vector<OpCase> op_cases() {
  const Tensor idx = ints({2, 0, 2}, {3});  // repeated index: the backward must add up
  const Tensor ids = ints({1, 3, 1, 0}, {2, 2});
  const Tensor targets = ints({4, 0, 2}, {3});
  const Tensor targets_ignored = ints({4, 0, -100, 2}, {4});
  const Tensor mask = bools({true, false, false, true, false, true}, {2, 3});
  const Tensor cond = bools({true, false, false, true, true, false}, {2, 3});
  const Tensor cond_row = bools({false, true, true}, {3});
  const Tensor gidx = ints({2, 0, 1, 1, 0, 0}, {2, 3});         // gather from (2, 4) along dim 1
  const Tensor gidx0 = ints({1, 0, 1, 2, 1, 0, 0, 1}, {4, 2});  // along dim 0 of (3, 2), repeats
  const Tensor amask = Tensor::from_vector(
      std::vector<double>{0.3, -0.2, -INFINITY, 0.1, 0.0, 0.5, -1.0, 0.2, -INFINITY, 0.4, 0.0, 0.1, 0.2, -0.3, 0.7},
      {3, 5}, DType::Float64);
  return {
      // ---- element-wise ------------------------------------------------------------------------
      {"add", "broadcast (2,3)+(3)", Args{{"a", {2, 3}}, {"b", {3}}}, Domain::Any, [](V x) { return add(x[0], x[1]); }},
      {"add", "scalar", Args{{"a", {2, 3}}}, Domain::Any, [](V x) { return add(x[0], 2.5); }},
      {"sub", "broadcast (2,3,4)-(3,1)", Args{{"a", {2, 3, 4}}, {"b", {3, 1}}}, Domain::Any,
       [](V x) { return sub(x[0], x[1]); }},
      {"sub", "broadcast (3,1)-(1,4)", Args{{"a", {3, 1}}, {"b", {1, 4}}}, Domain::Any,
       [](V x) { return sub(x[0], x[1]); }},
      {"mul", "same shape", Args{{"a", {2, 3}}, {"b", {2, 3}}}, Domain::Any, [](V x) { return mul(x[0], x[1]); }},
      {"mul", "by a 0-d tensor", Args{{"a", {2, 2}}, {"s", {}}}, Domain::Any, [](V x) { return mul(x[0], x[1]); }},
      {"mul", "scalar", Args{{"a", {2, 3}}}, Domain::Any, [](V x) { return mul(x[0], -1.5); }},
      {"div", "broadcast (2,1,4)/(4)", Args{{"a", {2, 1, 4}}, {"b", {4}}}, Domain::Positive,
       [](V x) { return div(x[0], x[1]); }},
      {"neg", "", Args{{"a", {2, 3}}}, Domain::Any, [](V x) { return neg(x[0]); }},
      {"rsub", "3 - a", Args{{"a", {2, 3}}}, Domain::Any, [](V x) { return rsub(3.0, x[0]); }},
      {"rdiv", "2 / a", Args{{"a", {2, 3}}}, Domain::Positive, [](V x) { return rdiv(2.0, x[0]); }},
      {"pow", "a^2.5", Args{{"a", {2, 3}}}, Domain::Positive, [](V x) { return pow(x[0], 2.5); }},
      {"pow", "a^-0.5", Args{{"a", {2, 3}}}, Domain::Positive, [](V x) { return pow(x[0], -0.5); }},
      {"pow", "a^3, any sign", Args{{"a", {2, 3}}}, Domain::Any, [](V x) { return pow(x[0], 3.0); }},
      {"pow", "a^0 at 0", Args{{"a", {3}}}, Domain::Any,
       [](V x) { return pow(mul(x[0], 0.0), 0.0) + x[0]; }},  // 0^0: gradient 0, not NaN
      {"pow", "a^b, both tensors (2,3)^(3)", Args{{"a", {2, 3}}, {"b", {3}}}, Domain::Positive,
       [](V x) { return pow(x[0], sub(mul(x[1], 2.0), Tensor::full({}, 2.0, DType::Float64))); }},
      {"pow", "a^b, a negative, b whole", Args{{"a", {4}}}, Domain::Positive,
       [](V x) { return pow(neg(x[0]), Tensor::from_vector(std::vector<double>{2, 3, -1, 0}, {4}, DType::Float64)); }},
      {"pow", "a^b at a = 0: db is 0", Args{{"b", {3}}}, Domain::Positive,
       [](V x) { return add(pow(Tensor::zeros({3}, DType::Float64), x[0]), x[0]); }},
      {"exp", "", Args{{"a", {2, 3}}}, Domain::Any, [](V x) { return exp(x[0]); }},
      {"log", "", Args{{"a", {2, 3}}}, Domain::Positive, [](V x) { return log(x[0]); }},
      {"sqrt", "", Args{{"a", {2, 3}}}, Domain::Positive, [](V x) { return sqrt(x[0]); }},
      {"tanh", "", Args{{"a", {2, 3}}}, Domain::Any, [](V x) { return tanh(x[0]); }},
      {"relu", "away from 0", Args{{"a", {2, 3}}}, Domain::AwayFromZero, [](V x) { return relu(x[0]); }},
      // The speedrun's MLP activation (models/transformer_lm.cpp): relu(x)², a product of relus.
      {"relu", "squared: relu(a)·relu(a), away from 0", Args{{"a", {2, 3}}}, Domain::AwayFromZero,
       [](V x) { return mul(relu(x[0]), relu(x[0])); }},
      {"gelu", "exact", Args{{"a", {2, 3}}}, Domain::Any, [](V x) { return gelu(mul(x[0], 2.0)); }},
      {"gelu", "tanh", Args{{"a", {2, 3}}}, Domain::Any, [](V x) { return gelu(mul(x[0], 2.0), true); }},
      {"abs", "away from 0", Args{{"a", {2, 3}}}, Domain::AwayFromZero, [](V x) { return abs(x[0]); }},
      {"sigmoid", "", Args{{"a", {2, 3}}}, Domain::Any, [](V x) { return sigmoid(mul(x[0], 3.0)); }},
      {"silu", "", Args{{"a", {2, 3}}}, Domain::Any, [](V x) { return silu(mul(x[0], 3.0)); }},
      {"sin", "", Args{{"a", {2, 3}}}, Domain::Any, [](V x) { return sin(mul(x[0], 2.0)); }},
      {"cos", "", Args{{"a", {2, 3}}}, Domain::Any, [](V x) { return cos(mul(x[0], 2.0)); }},
      {"where", "broadcast cond (3), a (2,3), b (2,1)", Args{{"a", {2, 3}}, {"b", {2, 1}}}, Domain::Any,
       [cond_row](V x) { return where(cond_row, x[0], x[1]); }},
      {"where", "same shapes", Args{{"a", {2, 3}}, {"b", {2, 3}}}, Domain::Any,
       [cond](V x) { return mul(where(cond, x[0], x[1]), x[0]); }},
      {"maximum", "broadcast (2,3),(3)", Args{{"a", {2, 3}}, {"b", {3}}}, Domain::Any,
       [](V x) { return maximum(x[0], x[1]); }},
      {"minimum", "broadcast (2,3),(2,1)", Args{{"a", {2, 3}}, {"b", {2, 1}}}, Domain::Any,
       [](V x) { return minimum(x[0], x[1]); }},
      {"clamp", "both bounds", Args{{"a", {3, 4}}}, Domain::Any, [](V x) { return mul(clamp(x[0], -0.5, 0.7), x[0]); }},
      {"clamp", "min only", Args{{"a", {3, 4}}}, Domain::Any, [](V x) { return clamp(x[0], 0.1, std::nullopt); }},
      {"sum_to", "(2,3,4) -> (3,1)", Args{{"g", {2, 3, 4}}}, Domain::Any,
       [](V x) {
         return sum_to(mul(x[0], x[0]), {3, 1});
       }},
      // ---- reductions --------------------------------------------------------------------------
      {"sum", "all", Args{{"a", {2, 3, 4}}}, Domain::Any, [](V x) { return sum(mul(x[0], x[0])); }},
      {"sum", "dims {0, 2}", Args{{"a", {2, 3, 4}}}, Domain::Any,
       [](V x) {
         return sum(mul(x[0], x[0]), {0, 2});
       }},
      {"sum", "dim 1, keepdim", Args{{"a", {2, 3, 4}}}, Domain::Any, [](V x) { return sum(x[0], {1}, true); }},
      {"mean", "all", Args{{"a", {2, 3, 4}}}, Domain::Any, [](V x) { return mean(mul(x[0], x[0])); }},
      {"mean", "dims {0, 1}, keepdim", Args{{"a", {2, 3, 4}}}, Domain::Any,
       [](V x) {
         return mean(mul(x[0], x[0]), {0, 1}, true);
       }},
      {"max", "dim 1", Args{{"a", {3, 4}}}, Domain::Any, [](V x) { return mul(max(x[0], 1), max(x[0], 1)); }},
      {"max", "dim 0, keepdim", Args{{"a", {3, 2, 2}}}, Domain::Any, [](V x) { return max(x[0], 0, true); }},
      {"min", "dim -1", Args{{"a", {3, 4}}}, Domain::Any, [](V x) { return mul(min(x[0], -1), 2.0); }},
      // ties: the two copies of x tie exactly (a perturbation moves both), so each gets half
      {"amax", "dims {0, 2}, exact ties", Args{{"a", {2, 3, 2}}}, Domain::Any,
       [](V x) { return amax(concat({x[0], x[0]}, 2), {0, 2}); }},
      {"amax", "all", Args{{"a", {3, 4}}}, Domain::Any, [](V x) { return mul(amax(x[0]), amax(x[0])); }},
      {"amin", "dim 1, keepdim, exact ties", Args{{"a", {3, 2}}}, Domain::Any,
       [](V x) { return amin(concat({x[0], x[0]}, 1), {1}, true); }},
      {"norm", "all", Args{{"a", {3, 4}}}, Domain::Any, [](V x) { return norm(x[0]); }},
      {"norm", "dims {0, 2}, keepdim", Args{{"a", {2, 3, 2}}}, Domain::Any,
       [](V x) { return mul(norm(x[0], 2.0, {0, 2}, true), x[0]); }},
      {"var", "all, unbiased", Args{{"a", {3, 4}}}, Domain::Any, [](V x) { return var(x[0]); }},
      {"var", "dim 1, correction 0, keepdim", Args{{"a", {2, 3, 4}}}, Domain::Any,
       [](V x) { return var(x[0], {1}, 0.0, true); }},
      {"var", "dims {0, 2}, correction 1", Args{{"a", {2, 3, 4}}}, Domain::Any,
       [](V x) {
         return var(x[0], {0, -1});
       }},
      {"logsumexp", "dim 1", Args{{"a", {3, 4}}}, Domain::Any, [](V x) { return logsumexp(mul(x[0], 3.0), {1}); }},
      {"logsumexp", "dims {0, 2}, keepdim", Args{{"a", {2, 3, 2}}}, Domain::Any,
       [](V x) {
         return logsumexp(x[0], {0, 2}, true);
       }},
      // ---- matmul ------------------------------------------------------------------------------
      {"matmul", "(3,4)@(4,2)", Args{{"a", {3, 4}}, {"b", {4, 2}}}, Domain::Any,
       [](V x) { return matmul(x[0], x[1]); }},
      {"matmul", "batched, b broadcast", Args{{"a", {2, 3, 4}}, {"b", {1, 4, 5}}}, Domain::Any,
       [](V x) { return matmul(x[0], x[1]); }},
      {"matmul", "both broadcast", Args{{"a", {2, 1, 3, 4}}, {"b", {3, 4, 2}}}, Domain::Any,
       [](V x) { return matmul(x[0], x[1]); }},
      {"matmul", "transposed operands", Args{{"aT", {4, 3}}, {"bT", {2, 4}}}, Domain::Any,
       [](V x) { return matmul(transpose(x[0], 0, 1), transpose(x[1], 0, 1)); }},
      {"matmul", "vector . vector", Args{{"a", {4}}, {"b", {4}}}, Domain::Any, [](V x) { return matmul(x[0], x[1]); }},
      {"matmul", "vector @ matrix", Args{{"a", {4}}, {"b", {4, 3}}}, Domain::Any,
       [](V x) { return matmul(x[0], x[1]); }},
      {"matmul", "matrix @ vector", Args{{"a", {3, 4}}, {"b", {4}}}, Domain::Any,
       [](V x) { return matmul(x[0], x[1]); }},
      {"matmul", "batched @ vector", Args{{"a", {2, 3, 4}}, {"b", {4}}}, Domain::Any,
       [](V x) { return matmul(x[0], x[1]); }},
      {"matmul", "vector @ batched", Args{{"a", {3}}, {"b", {2, 3, 2}}}, Domain::Any,
       [](V x) { return matmul(x[0], x[1]); }},
      {"linear", "with bias", Args{{"x", {2, 3, 4}}, {"W", {5, 4}}, {"b", {5}}}, Domain::Any,
       [](V x) { return linear(x[0], x[1], x[2]); }},
      {"linear", "no bias", Args{{"x", {3, 4}}, {"W", {2, 4}}}, Domain::Any, [](V x) { return linear(x[0], x[1]); }},
      {"gelu_mlp", "with biases", Args{{"x", {2, 3, 4}}, {"W1", {5, 4}}, {"b1", {5}}, {"W2", {3, 5}}, {"b2", {3}}},
       Domain::Any, [](V x) { return gelu_mlp(x[0], mul(x[1], 2.0), x[2], x[3], x[4]); }},
      {"gelu_mlp", "no biases", Args{{"x", {3, 4}}, {"W1", {6, 4}}, {"W2", {2, 6}}}, Domain::Any,
       [](V x) { return gelu_mlp(x[0], x[1], Tensor(), x[2], Tensor()); }},
      // ---- shapes and views ----------------------------------------------------------------------
      {"reshape", "", Args{{"a", {2, 3, 4}}}, Domain::Any,
       [](V x) {
         return mul(reshape(x[0], {4, -1}), 2.0);
       }},
      {"reshape", "of a strided view", Args{{"a", {2, 3, 4}}}, Domain::Any,
       [](V x) {
         return reshape(permute(x[0], {2, 0, 1}), {4, 6});
       }},
      {"view", "", Args{{"a", {2, 6}}}, Domain::Any,
       [](V x) {
         return mul(view(x[0], {3, 4}), 2.0);
       }},
      {"view", "of a split piece (strided)", Args{{"a", {3, 8}}}, Domain::Any,
       [](V x) { return mul(view(narrow(x[0], 1, 2, 4), {3, 2, 2}), 2.0); }},
      {"view", "of a transpose, splitting a dim", Args{{"a", {2, 3, 4}}}, Domain::Any,
       [](V x) { return mul(view(transpose(x[0], 0, 1), {3, 2, 2, 2}), 2.0); }},
      {"view_or_copy", "a view", Args{{"a", {3, 8}}}, Domain::Any,
       [](V x) { return mul(view_or_copy(narrow(x[0], 1, 4, 4), {3, 2, 2}), 2.0); }},
      {"view_or_copy", "a copy", Args{{"a", {2, 3, 4}}}, Domain::Any,
       [](V x) { return mul(view_or_copy(transpose(x[0], 1, 2), {8, 3}), 2.0); }},
      {"transpose", "", Args{{"a", {2, 3, 4}}}, Domain::Any, [](V x) { return mul(transpose(x[0], 0, 2), 2.0); }},
      {"permute", "", Args{{"a", {2, 3, 4}}}, Domain::Any,
       [](V x) {
         return mul(permute(x[0], {1, 2, 0}), 2.0);
       }},
      {"narrow", "", Args{{"a", {2, 3, 4}}}, Domain::Any, [](V x) { return mul(narrow(x[0], 2, 1, 2), 2.0); }},
      {"unsqueeze", "", Args{{"a", {2, 3}}}, Domain::Any, [](V x) { return mul(unsqueeze(x[0], 1), 2.0); }},
      {"select", "negative index", Args{{"a", {3, 4}}}, Domain::Any, [](V x) { return mul(select(x[0], 1, -2), 2.0); }},
      {"slice", "a step of 2", Args{{"a", {5, 3}}}, Domain::Any, [](V x) { return mul(slice(x[0], 0, 1, std::nullopt, 2), 2.0); }},
      {"slice", "of a transpose", Args{{"a", {3, 5}}}, Domain::Any,
       [](V x) { return mul(slice(transpose(x[0], 0, 1), 0, -4, 5, 3), 2.0); }},
      {"as_strided", "every other column", Args{{"a", {3, 4}}}, Domain::Any,
       [](V x) { return mul(as_strided(x[0], {3, 2}, {4, 2}, 1), 2.0); }},
      {"as_strided_scatter", "into a (3, 4) base", Args{{"src", {2, 2}}}, Domain::Any,
       [](V x) { return mul(as_strided_scatter(x[0], {3, 4}, {2, 2}, {4, 1}, 5), 2.0); }},
      {"squeeze", "", Args{{"a", {2, 1, 3}}}, Domain::Any, [](V x) { return mul(squeeze(x[0], 1), 2.0); }},
      {"concat", "", Args{{"a", {2, 1, 3}}, {"b", {2, 2, 3}}}, Domain::Any,
       [](V x) {
         return concat({x[0], x[1], x[0]}, 1);
       }},
      {"stack", "new dim 1", Args{{"a", {2, 3}}, {"b", {2, 3}}}, Domain::Any,
       [](V x) {
         return stack({x[0], x[1], x[0]}, 1);
       }},
      {"stack", "new last dim", Args{{"a", {3}}, {"b", {3}}}, Domain::Any,
       [](V x) {
         return stack({x[0], x[1]}, -1);
       }},
      {"split", "", Args{{"a", {2, 5}}}, Domain::Any,
       [](V x) {
         const auto parts = split(x[0], 2, 1);  // sizes 2, 2, 1
         return concat({mul(parts[2], 3.0), parts[0]}, 1);
       }},
      {"flip", "dims {0, 2}", Args{{"a", {2, 3, 4}}}, Domain::Any,
       [](V x) { return mul(flip(x[0], {0, -1}), x[0]); }},
      {"chunk", "5 into 3: sizes 2, 2, 1", Args{{"a", {2, 5}}}, Domain::Any,
       [](V x) {
         const auto parts = chunk(x[0], 3, 1);
         return concat({mul(parts[2], 3.0), parts[0], mul(parts[1], parts[1])}, 1);
       }},
      {"unbind", "dim 1", Args{{"a", {2, 3}}}, Domain::Any,
       [](V x) {
         const auto rows = unbind(x[0], 1);
         return stack({mul(rows[2], rows[0]), rows[1]}, 0);
       }},
      {"expand", "", Args{{"a", {3, 1}}}, Domain::Any,
       [](V x) {
         return expand(x[0], {2, 3, 4});
       }},
      // ---- lookups and masks ------------------------------------------------------------------------
      {"index_select", "dim 0", Args{{"a", {3, 4}}}, Domain::Any, [idx](V x) { return index_select(x[0], 0, idx); }},
      {"index_select", "dim 1", Args{{"a", {2, 3}}}, Domain::Any, [idx](V x) { return index_select(x[0], 1, idx); }},
      {"embedding", "", Args{{"weight", {4, 3}}}, Domain::Any, [ids](V x) { return embedding(ids, x[0]); }},
      {"masked_fill", "", Args{{"a", {2, 3}}}, Domain::Any,
       [mask](V x) { return mul(masked_fill(x[0], mask, -1.0), x[0]); }},
      {"topk", "2 largest along dim 1", Args{{"a", {3, 5}}}, Domain::Any, [](V x) { return topk(x[0], 2, 1).first; }},
      {"topk", "3 smallest along dim 0", Args{{"a", {4, 2, 3}}}, Domain::Any,
       [](V x) { return mul(topk(x[0], 3, 0, false).first, 2.0); }},
      {"topk", "of a transpose, k = n", Args{{"a", {3, 4}}}, Domain::Any,
       [](V x) { return topk(transpose(x[0], 0, 1), 3, -1).first; }},
      {"gather", "dim 1", Args{{"a", {2, 4}}}, Domain::Any, [gidx](V x) { return gather(x[0], 1, gidx); }},
      {"gather", "dim 0, repeats", Args{{"a", {3, 2}}}, Domain::Any,
       [gidx0](V x) { return mul(gather(x[0], 0, gidx0), gather(x[0], 0, gidx0)); }},
      {"scatter_add", "dim 0, repeats", Args{{"a", {3, 2}}, {"src", {4, 2}}}, Domain::Any,
       [gidx0](V x) { return mul(scatter_add(x[0], 0, gidx0, x[1]), x[0]); }},
      // ---- fused ops ------------------------------------------------------------------------------
      {"softmax", "last dim", Args{{"a", {3, 5}}}, Domain::Any, [](V x) { return softmax(mul(x[0], 2.0)); }},
      {"softmax", "dim 0", Args{{"a", {3, 4, 2}}}, Domain::Any, [](V x) { return softmax(x[0], 0); }},
      {"softmax", "with -inf entries", Args{{"a", {3, 5}}}, Domain::Any,
       [amask](V x) { return softmax(add(x[0], amask)); }},
      {"log_softmax", "last dim", Args{{"a", {3, 5}}}, Domain::Any, [](V x) { return log_softmax(mul(x[0], 2.0)); }},
      {"log_softmax", "dim 1", Args{{"a", {2, 3, 2}}}, Domain::Any, [](V x) { return log_softmax(x[0], 1); }},
      {"layer_norm", "weight and bias", Args{{"x", {2, 3, 6}}, {"weight", {6}}, {"bias", {6}}}, Domain::Any,
       [](V x) { return layer_norm(x[0], x[1], x[2]); }},
      {"layer_norm", "over 2 trailing dims", Args{{"x", {2, 3, 4}}, {"weight", {3, 4}}, {"bias", {3, 4}}}, Domain::Any,
       [](V x) { return layer_norm(x[0], Shape{3, 4}, x[1], x[2], 1e-5); }},
      {"layer_norm", "no affine", Args{{"x", {4, 5}}}, Domain::Any,
       [](V x) { return layer_norm(x[0], Tensor(), Tensor()); }},
      {"dropout", "", Args{{"a", {3, 4}}}, Domain::Any,
       [](V x) {
         Generator g(7);  // the same mask on every call: gradcheck needs a deterministic f
         return dropout(x[0], 0.3, /*training=*/true, g);
       }},
      // ---- parts of modern transformers ---------------------------------------------------------------
      {"rms_norm", "with weight", Args{{"x", {2, 3, 6}}, {"weight", {6}}}, Domain::Any,
       [](V x) { return rms_norm(x[0], x[1], 1e-5); }},
      {"rms_norm", "no weight, default eps", Args{{"x", {4, 5}}}, Domain::Any, [](V x) { return rms_norm(x[0]); }},
      {"rope", "(2, 3, 4, 6), offset 2", Args{{"x", {2, 3, 4, 6}}}, Domain::Any,
       [](V x) { return mul(rope(x[0], 2), x[0]); }},  // times x: a second derivative that is not zero
      {"rope", "inverse, base 100, strided view", Args{{"xT", {4, 3, 2}}}, Domain::Any,
       [](V x) { return rope(transpose(x[0], 0, 1), 1, 100.0, /*inverse=*/true); }},
      // QK-norm then RoPE, as MultiheadAttention's rope and qk_norm options apply them to each
      // head's q and k (nn/attention.cpp), then the scores q·kᵀ.
      {"rope", "QK-norm: rms_norm per head, rope, q·kᵀ", Args{{"q", {2, 3, 4}}, {"k", {2, 3, 4}}}, Domain::Any,
       [](V x) { return matmul(rope(rms_norm(x[0]), 0), transpose(rope(rms_norm(x[1]), 0), 1, 2)); }},
      {"softcap", "cap 2", Args{{"a", {3, 4}}}, Domain::Any, [](V x) { return softcap(mul(x[0], 3.0), 2.0); }},
      // modded-nanogpt's value embeddings, as MultiheadAttention's ValueMix mixes them into the
      // values (nn/attention.cpp): λ_v·v + λ_e·e, the two λ selected from one (2) parameter.
      {"select", "value mix: λ_v·v + λ_e·e, λ from select", Args{{"v", {2, 3, 4}}, {"e", {2, 3, 4}}, {"lambdas", {2}}},
       Domain::Any, [](V x) { return add(mul(x[0], select(x[2], 0, 0)), mul(x[1], select(x[2], 0, 1))); }},
      // ---- losses ------------------------------------------------------------------------------------
      {"mse_loss", "mean, both differentiated", Args{{"input", {2, 3}}, {"target", {2, 3}}}, Domain::Any,
       [](V x) { return mse_loss(x[0], x[1]); }},
      {"mse_loss", "none, broadcast target", Args{{"input", {2, 3}}, {"target", {3}}}, Domain::Any,
       [](V x) { return mse_loss(x[0], x[1], {.reduction = kNone}); }},
      {"l1_loss", "sum", Args{{"input", {2, 3}}}, Domain::AwayFromZero,
       [](V x) { return l1_loss(x[0], Tensor::zeros({2, 3}, DType::Float64), {.reduction = kSum}); }},
      {"binary_cross_entropy", "probabilities, weight, mean", Args{{"z", {2, 3}}, {"t", {2, 3}}, {"w", {3}}}, Domain::Any,
       [](V x) { return binary_cross_entropy(sigmoid(x[0]), sigmoid(x[1]), {.weight = x[2]}); }},
      {"binary_cross_entropy", "none", Args{{"z", {4}}, {"t", {4}}}, Domain::Any,
       [](V x) { return binary_cross_entropy(sigmoid(x[0]), sigmoid(x[1]), {.reduction = kNone}); }},
      {"binary_cross_entropy_with_logits", "mean", Args{{"input", {2, 3}}, {"target", {2, 3}}}, Domain::Any,
       [](V x) { return binary_cross_entropy_with_logits(mul(x[0], 3.0), x[1]); }},
      {"binary_cross_entropy_with_logits", "weight, pos_weight, none",
       Args{{"input", {2, 3}}, {"target", {2, 3}}, {"weight", {2, 1}}, {"pos_weight", {3}}}, Domain::Any,
       [](V x) {
         return binary_cross_entropy_with_logits(x[0], x[1], {.weight = x[2], .reduction = kNone, .pos_weight = x[3]});
       }},
      {"nll_loss", "ignore_index, mean", Args{{"input", {4, 5}}}, Domain::Any,
       [targets_ignored](V x) { return nll_loss(log_softmax(x[0]), targets_ignored); }},
      {"nll_loss", "(N, C, d1), weight, ignore_index 1", Args{{"input", {2, 3, 2}}, {"weight", {3}}}, Domain::Positive,
       [](V x) { return nll_loss(x[0], ints({0, 1, 2, 1}, {2, 2}), {.weight = x[1], .ignore_index = 1}); }},
      {"cross_entropy", "", Args{{"logits", {3, 5}}}, Domain::Any,
       [targets](V x) { return cross_entropy(x[0], targets); }},
      {"cross_entropy", "ignore_index -100", Args{{"logits", {4, 5}}}, Domain::Any,
       [targets_ignored](V x) { return cross_entropy(x[0], targets_ignored); }},
      {"cross_entropy", "label_smoothing, sum", Args{{"logits", {4, 5}}}, Domain::Any,
       [targets_ignored](V x) {
         return cross_entropy(x[0], targets_ignored, {.reduction = kSum, .label_smoothing = 0.2});
       }},
      {"cross_entropy", "(N, C, d1), none", Args{{"logits", {2, 3, 2}}}, Domain::Any,
       [](V x) { return cross_entropy(x[0], ints({0, 2, 1, -100}, {2, 2}), {.reduction = kNone}); }},
      {"cross_entropy", "weight, label_smoothing", Args{{"logits", {4, 5}}, {"weight", {5}}}, Domain::Positive,
       [targets_ignored](V x) { return cross_entropy(x[0], targets_ignored, {.weight = x[1], .label_smoothing = 0.3}); }},
      {"cross_entropy", "class probabilities", Args{{"logits", {3, 4}}, {"target", {3, 4}}}, Domain::Any,
       [](V x) { return cross_entropy(x[0], softmax(x[1]), {.label_smoothing = 0.1}); }},
      // ---- attention --------------------------------------------------------------------------------
      {"attention_probs", "no mask", Args{{"q", {2, 4, 3}}, {"k", {2, 5, 3}}}, Domain::Any,
       [](V x) { return attention_probs(x[0], x[1], Tensor(), 1 / std::sqrt(3.0), false); }},
      {"attention_probs", "causal", Args{{"q", {2, 3, 4}}, {"k", {2, 5, 4}}}, Domain::Any,
       [](V x) { return attention_probs(x[0], x[1], Tensor(), 0.5, /*causal=*/true); }},
      {"attention_probs", "causal, offset 1, float mask", Args{{"q", {1, 3, 3}}, {"k", {1, 5, 3}}}, Domain::Any,
       [amask](V x) { return attention_probs(x[0], x[1], amask, 0.5, /*causal=*/true, 1); }},
      {"attention_probs", "learned float mask (B, L, S)", Args{{"q", {2, 3, 2}}, {"k", {2, 4, 2}}, {"mask", {2, 3, 4}}},
       Domain::Any, [](V x) { return attention_probs(x[0], x[1], x[2], 0.7, /*causal=*/false); }},
      {"scaled_dot_product_attention", "L != S, Dv != D", Args{{"q", {2, 4, 3}}, {"k", {2, 5, 3}}, {"v", {2, 5, 2}}},
       Domain::Any, [](V x) { return scaled_dot_product_attention(x[0], x[1], x[2]); }},
      {"scaled_dot_product_attention", "causal, offset -1 (a row sees no key), 4-d",
       Args{{"q", {1, 2, 3, 2}}, {"k", {1, 2, 4, 2}}, {"v", {1, 2, 4, 3}}}, Domain::Any,
       [](V x) { return scaled_dot_product_attention(x[0], x[1], x[2], /*is_causal=*/true, 0.8, -1); }},
      {"scaled_dot_product_attention", "causal, strided views", Args{{"qT", {2, 3, 4}}, {"k", {4, 2, 3}}, {"v", {2, 4, 2}}},
       Domain::Any,
       [](V x) { return scaled_dot_product_attention(transpose(x[0], 1, 2), transpose(x[1], 0, 1), x[2], true); }},
      {"self_attention_qkv", "causal, 2 heads", Args{{"qkv", {2, 3, 12}}}, Domain::Any,
       [](V x) { return self_attention_qkv(x[0], 2, /*is_causal=*/true); }},
      {"self_attention_qkv", "3 heads, scale 0.6", Args{{"qkv", {1, 4, 9}}}, Domain::Any,
       [](V x) { return self_attention_qkv(x[0], 3, false, 0.6); }},
      // ---- backward ops: their own derivatives are the forward ops' second ones ----------------------
      {"tanh_backward", "", Args{{"grad", {2, 3}}, {"output", {2, 3}}}, Domain::Any,
       [](V x) { return tanh_backward(x[0], x[1]); }},
      {"threshold_backward", "threshold 0, away from it", Args{{"grad", {2, 3}}, {"self", {2, 3}}},
       Domain::AwayFromZero, [](V x) { return mul(threshold_backward(x[0], x[1], 0.0), x[1]); }},
      {"gelu_backward", "exact", Args{{"grad", {2, 3}}, {"self", {2, 3}}}, Domain::Any,
       [](V x) { return gelu_backward(x[0], mul(x[1], 2.0)); }},
      {"gelu_backward", "tanh", Args{{"grad", {2, 3}}, {"self", {2, 3}}}, Domain::Any,
       [](V x) { return gelu_backward(x[0], mul(x[1], 2.0), true); }},
      {"softmax_backward", "last dim", Args{{"grad", {3, 5}}, {"output", {3, 5}}}, Domain::Any,
       [](V x) { return softmax_backward(x[0], x[1]); }},
      {"softmax_backward", "dim 0", Args{{"grad", {3, 4, 2}}, {"output", {3, 4, 2}}}, Domain::Any,
       [](V x) { return softmax_backward(x[0], x[1], 0); }},
      {"log_softmax_backward", "last dim", Args{{"grad", {3, 5}}, {"output", {3, 5}}}, Domain::Any,
       [](V x) { return log_softmax_backward(x[0], x[1]); }},
      {"log_softmax_backward", "dim 1", Args{{"grad", {2, 3, 2}}, {"output", {2, 3, 2}}}, Domain::Any,
       [](V x) { return log_softmax_backward(x[0], x[1], 1); }},
      {"slice_backward", "[1, 4) of dim 1", Args{{"grad", {2, 3, 2}}}, Domain::Any,
       [](V x) { return mul(slice_backward(x[0], {2, 5, 2}, 1, 1, 4), slice_backward(x[0], {2, 5, 2}, -2, 1, 4)); }},
  };
}

const std::vector<std::string>& ops_without_gradient() {
  static const std::vector<std::string> names = {"argmax", "argmin", "eq", "ne", "lt", "le", "gt", "ge"};
  return names;
}

std::vector<Tensor> draw_inputs(const OpCase& c, Generator& gen) {
  std::vector<Tensor> inputs;
  for (const auto& [name, shape] : c.args) {
    Tensor t = Tensor::randn(shape, DType::Float64, gen);
    double* p = t.data<double>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (c.domain == Domain::Positive) p[i] = 0.5 + std::fabs(p[i]);
      if (c.domain == Domain::AwayFromZero) p[i] += p[i] < 0 ? -0.2 : 0.2;
    }
    inputs.push_back(t.requires_grad_());
  }
  return inputs;
}

}  // namespace ag
