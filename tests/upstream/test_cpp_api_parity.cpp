// The C++ API's second round (issue 33) against PyTorch: every case of
// tests/parity/make_cpp_api2_fixtures.py (tests/parity/fixtures/cpp_api2/), repeated here on the
// stored inputs with attograd's spelling. No torch is needed here.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autograd/engine.h"
#include "autograd/function.h"
#include "autograd/indexing.h"
#include "autograd/ops.h"
#include "autograd/safetensors.h"
#include "autograd/tensor_data.h"
#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/functional.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/activation.h"
#include "nn/loss.h"
#include "nn/module_dict.h"
#include "nn/sequential.h"
#include "nn/utils/clip_grad.h"
#include "optim/adam.h"
#include "optim/sgd.h"

using namespace ag;
using namespace ag::indexing;

namespace {
namespace fs = std::filesystem;
const fs::path kDir = fs::path(ATTOGRAD_SOURCE_DIR) / "tests/parity/fixtures/cpp_api2";

const SafeTensorsFile& autograd_file() {
  static const SafeTensorsFile f = SafeTensorsFile::load((kDir / "autograd.safetensors").string());
  return f;
}
const SafeTensorsFile& nn_file() {
  static const SafeTensorsFile f = SafeTensorsFile::load((kDir / "nn.safetensors").string());
  return f;
}
const SafeTensorsFile& optim_file() {
  static const SafeTensorsFile f = SafeTensorsFile::load((kDir / "optim.safetensors").string());
  return f;
}
const nlohmann::json& api() {
  static const nlohmann::json j = [] {
    std::ifstream in(kDir / "api.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

// |a − b| ≤ tol·(1 + |b|) everywhere, NaN where b is NaN; shapes equal.
void expect_close(const Tensor& a, const Tensor& b, double tol, const std::string& what) {
  ASSERT_TRUE(a.defined()) << what << ": undefined";
  ASSERT_EQ(a.shape(), b.shape()) << what;
  const auto va = a.to_double_vector(), vb = b.to_double_vector();
  for (size_t i = 0; i < va.size(); ++i) {
    if (std::isnan(vb[i]) || std::isinf(vb[i])) {
      EXPECT_TRUE(std::isnan(vb[i]) ? std::isnan(va[i]) : va[i] == vb[i]) << what << "[" << i << "]: " << va[i] << " vs " << vb[i];
      continue;
    }
    EXPECT_LE(std::fabs(va[i] - vb[i]), tol * (1 + std::fabs(vb[i]))) << what << "[" << i << "]: " << va[i] << " vs " << vb[i];
  }
}

// The weighting the script multiplies each result by before summing.
Tensor coeff(const Shape& s) {
  std::vector<double> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) * 0.1 + 1.0;
  return Tensor::from_vector(v, s, DType::Float64);
}

Tensor in(const SafeTensorsFile& f, const std::string& name) {
  Tensor t = f.get(name);
  if (is_floating(t.dtype())) t.requires_grad_();
  return t;
}

// Checks a case's value and the gradients of its named inputs.
void expect_case(const SafeTensorsFile& f, const std::string& c, const Tensor& value,
                 const std::vector<std::pair<std::string, Tensor>>& inputs, double tol = 1e-12) {
  expect_close(value, f.get(c + ".value"), tol, c + ".value");
  for (const auto& [n, t] : inputs) {
    const std::string key = c + ".grad." + n;
    if (f.has(key)) expect_close(t.grad(), f.get(key), tol, key);
    else EXPECT_FALSE(t.grad().defined()) << key << ": torch has no gradient";
  }
}

std::string msg(const char* key) { return api()["errors"][key].get<std::string>(); }

// Expects an exception whose message holds torch's (the fixture's) text.
template <class F>
void expect_torch_error(F&& f, const char* key) {
  const std::string want = msg(key);
  try {
    f();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << "torch: " << want << "\nattograd: " << e.what();
    return;
  }
  ADD_FAILURE() << key << ": no exception (torch: " << want << ")";
}
}  // namespace

// ---- autograd ---------------------------------------------------------------------------------

TEST(CppApi2Parity, InPlaceArithmeticRecordsItsHistory) {
  const auto& f = autograd_file();
  Tensor x = in(f, "inplace_chain.in.x"), y = in(f, "inplace_chain.in.y");
  Tensor a = x * 1.5;
  a.mul_(y);
  a.add_(x, 0.5);
  a.sub_(2.0);
  a.div_(y.abs() + 1.0);
  a.mul_(0.5).add_(1.0);
  EXPECT_EQ(a._version(), api()["versions"]["inplace_chain"].get<int64_t>());
  sum(a * a * coeff(a.shape())).backward();
  expect_case(f, "inplace_chain", a, {{"x", x}, {"y", y}});
}

TEST(CppApi2Parity, WritesThroughViewsRewriteTheBasesHistory) {
  const auto& f = autograd_file();
  Tensor x = in(f, "view_writes.in.x"), y = in(f, "view_writes.in.y"), w = in(f, "view_writes.in.w");
  Tensor b = x.clone();
  b[1].mul_(3.0);
  b.index({Slice(), 0}) = y;
  b.index({0, Slice(1, 3)}).add_(w);
  b[2] = 7.0;
  EXPECT_EQ(b._version(), api()["versions"]["view_writes"].get<int64_t>());
  sum(b * b * coeff(b.shape())).backward();
  expect_case(f, "view_writes", b, {{"x", x}, {"y", y}, {"w", w}});
}

TEST(CppApi2Parity, AViewMadeBeforeItsBaseChangedFollowsTheNewHistory) {
  const auto& f = autograd_file();
  Tensor x = in(f, "view_before_rebase.in.x"), y = in(f, "view_before_rebase.in.y");
  Tensor b = x * 2.0;
  Tensor v = b[0];
  b.mul_(y);
  (sum(v * v) + sum(b * coeff(b.shape()))).backward();
  expect_close(v, f.get("view_before_rebase.view"), 1e-12, "view");
  expect_case(f, "view_before_rebase", b, {{"x", x}, {"y", y}});
}

TEST(CppApi2Parity, IndexPutAndElementAssignment) {
  const auto& f = autograd_file();
  Tensor u = in(f, "index_put.in.u"), r = in(f, "index_put.in.r");
  const Tensor mask = f.get("index_put.mask");
  Tensor s = Tensor::zeros({4, 3}, DType::Float64);
  s[1] = u;
  s.index_put_({ag::tensor({0, 3})}, r);
  s.index_put_({mask}, 5.0);
  s.index({2, Slice(1, None)}) = 1.5;
  sum(s * coeff(s.shape())).backward();
  expect_case(f, "index_put", s, {{"u", u}, {"r", r}});
}

TEST(CppApi2Parity, IndexReadsSlicesEllipsisNoneAndTensorIndices) {
  const auto& f = autograd_file();
  Tensor x = in(f, "index_read.in.x");
  const Tensor mask = f.get("index_read.mask");
  const std::vector<Tensor> parts = {x.index({Slice(1, 3), Slice(None, None, 2)}),
                                     x.index({Ellipsis, -1}),
                                     x.index({None, 2}),
                                     x.index({ag::tensor({3, 0, 3})}),
                                     x.index({mask}),
                                     x.index({Slice(), ag::tensor({{4, 1}, {0, 0}})}),
                                     x.index({-1, Slice(1, 4, 2)})};
  Tensor loss = Tensor::scalar(0.0, DType::Float64);
  for (size_t i = 0; i < parts.size(); ++i) {
    expect_close(parts[i], f.get("index_read.part." + std::to_string(i)), 1e-15, "part " + std::to_string(i));
    loss = loss + sum(parts[i] * coeff(parts[i].shape()));
  }
  loss.backward();
  expect_close(x.grad(), f.get("index_read.grad.x"), 1e-12, "grad x");
}

TEST(CppApi2Parity, FillAndZeroOnANonLeafGiveTheOldHistoryZeroGradient) {
  const auto& f = autograd_file();
  Tensor x = in(f, "fill_nonleaf.in.x");
  Tensor a = x * 2.0;
  a[0].fill_(5.0);
  a.index({Slice(), 1}).zero_();
  sum(a * a * coeff(a.shape())).backward();
  expect_case(f, "fill_nonleaf", a, {{"x", x}});
}

TEST(CppApi2Parity, CopyBroadcastsAndRecordsTheSource) {
  const auto& f = autograd_file();
  Tensor y = in(f, "copy_broadcast.in.y");
  Tensor a = Tensor::zeros({3, 4}, DType::Float64);
  a.copy_(y);
  EXPECT_TRUE(a.requires_grad());
  sum(a * coeff(a.shape())).backward();
  expect_case(f, "copy_broadcast", a, {{"y", y}});
}

TEST(CppApi2Parity, AHookThatReturnsNothingObserves) {
  const auto& f = autograd_file();
  Tensor x = in(f, "void_hook.in.x");
  Tensor h = x * 3.0;
  Tensor seen;
  h.register_hook([&seen](const Tensor& g) { seen = g.clone(); });
  sum(h * h * coeff(h.shape())).backward();
  expect_close(seen, f.get("void_hook.seen"), 1e-12, "seen");
  expect_case(f, "void_hook", h, {{"x", x}});
}

TEST(CppApi2Parity, VersionCounter) {
  Tensor x = Tensor::ones({3});
  std::vector<int64_t> v{x._version()};
  x.mul_(2.0);
  v.push_back(x._version());
  x.add_(1.0);
  v.push_back(x._version());
  x[0] = 4.0;
  v.push_back(x._version());
  EXPECT_EQ(v, api()["versions"]["ones_mul_add_assign"].get<std::vector<int64_t>>());
}

namespace {
std::vector<std::vector<bool>> g_seen;
struct RecordingMul : autograd::Function<RecordingMul> {
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b) {
    ctx->save_for_backward({a, b});
    return a * b;
  }
  static std::vector<Tensor> backward(AutogradContext* ctx, std::vector<Tensor> g) {
    g_seen.push_back({ctx->needs_input_grad(0), ctx->needs_input_grad(1), ctx->needs_input_grad({{0, 2}})});
    const auto s = ctx->get_saved_variables();
    return {g[0] * s[1], g[0] * s[0]};
  }
};
}  // namespace

TEST(CppApi2Parity, NeedsInputGradIsNarrowedToTheCallAsLibtorchs) {
  Tensor x = Tensor::randn({3}, DType::Float64).requires_grad_(), y = Tensor::randn({3}, DType::Float64).requires_grad_();
  const Tensor z = Tensor::randn({3}, DType::Float64);
  const std::vector<std::pair<std::string, std::function<void()>>> calls = {
      {"grad_x", [&] { grad({sum(RecordingMul::apply(x, y))}, {x}); }},
      {"grad_y", [&] { grad({sum(RecordingMul::apply(x, y))}, {y}); }},
      {"grad_xy", [&] { grad({sum(RecordingMul::apply(x, y))}, {x, y}); }},
      {"backward", [&] { sum(RecordingMul::apply(x, y)).backward(); }},
      {"backward_inputs_y", [&] { sum(RecordingMul::apply(x, y)).backward({}, {.inputs = {y}}); }},
      {"backward_y_constant", [&] { sum(RecordingMul::apply(x, z)).backward(); }},
  };
  for (const auto& [name, call] : calls) {
    g_seen.clear();
    call();
    ASSERT_EQ(g_seen.size(), 1u) << name;
    EXPECT_EQ(g_seen[0], api()["needs_input_grad"][name].get<std::vector<bool>>()) << name;
  }
}

TEST(CppApi2Parity, TorchsErrorTexts) {
  Tensor x = Tensor::randn({5, 5}).requires_grad_();
  Tensor z = x * x;
  Tensor one = Tensor::ones({1}).requires_grad_(), other = Tensor::ones({1}).requires_grad_();
  expect_torch_error([&] { z.backward(Tensor::ones({5, 5}), {.inputs = std::vector<Tensor>{}}); }, "backward_inputs_empty");
  expect_torch_error([&] { z.backward(); }, "implicit_scalar");
  expect_torch_error([&] { grad({one * 2.0}, {one, other}, {Tensor::ones({1})}); }, "unused_input");
  expect_torch_error([&] { Tensor::ones({2}).backward(); }, "no_grad_fn");
  expect_torch_error([&] { grad({sum(one * 2.0)}, {Tensor::ones({1})}); }, "input_no_grad");
  expect_torch_error([&] { one.mul_(2.0); }, "leaf_inplace");
  expect_torch_error([&] { one.index({Slice(0, 1)}).mul_(2.0); }, "view_of_leaf_inplace");
  expect_torch_error([&] { Tensor::ones({3}).add_(Tensor::ones({2, 3})); }, "broadcast_inplace");
  expect_torch_error([&] { Tensor::ones({3}, DType::Int64).div_(2.0); }, "float_into_long");
  expect_torch_error([&] { z.requires_grad_(false); }, "requires_grad_nonleaf");
  expect_torch_error([&] { ag::tensor({5}).requires_grad_(true); }, "requires_grad_int");
  expect_torch_error([&] { Tensor::zeros({3, 4})[5]; }, "index_out_of_range");
  expect_torch_error([&] { Tensor::zeros({3}).index({0, 0}); }, "too_many_indices");
  expect_torch_error([&] { Tensor::zeros({3, 4}).index_put_({ag::tensor({0, 1})}, Tensor::ones({3})); }, "index_put_shape");
}

TEST(CppApi2Parity, LiteralsHaveTorchsDtypesShapesAndValues) {
  const std::map<std::string, Tensor> made = {
      {"scalar_int", ag::tensor(123)},
      {"scalar_float", ag::tensor(123.456)},
      {"scalar_bool", ag::tensor(true)},
      {"ints", ag::tensor({1, 2, 3})},
      {"floats", ag::tensor({1.5, 2.25, 3.125})},
      {"bools", ag::tensor({true, false, true})},
      {"int_matrix", ag::tensor({{1, 2}, {3, 4}})},
      {"column", ag::tensor({{1}, {2}})},
      {"deep", ag::tensor({{{{{{{{1.0, 2.0, 3.0}}}}}, {{{{{4.0, 5.0, 6.0}}}}}, {{{{{7.0, 8.0, 9.0}}}}}}}})},
      {"bool_matrix", ag::tensor({{true, false}, {false, true}})},
      {"empty", ag::tensor({})},
      {"empty_rows", ag::tensor({{}, {}})},
      {"as_float64", ag::tensor({{1, 2}, {3, 4}}, DType::Float64)},
      {"floats_as_int64", ag::tensor({1.1, 2.7, -3.5}, DType::Int64)},
  };
  ASSERT_EQ(made.size(), api()["literals"].size());
  for (const auto& [name, t] : made) {
    const auto& want = api()["literals"][name];
    EXPECT_EQ(dtype_name(t.dtype()), want["dtype"].get<std::string>()) << name;
    EXPECT_EQ(t.shape(), want["shape"].get<Shape>()) << name;
    const auto v = t.to_double_vector();
    std::vector<double> w;  // bools are JSON's true and false
    for (const auto& x : want["values"]) w.push_back(x.is_boolean() ? (x.get<bool>() ? 1.0 : 0.0) : x.get<double>());
    ASSERT_EQ(v.size(), w.size()) << name;
    for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(v[i], t.dtype() == DType::Float32 ? static_cast<double>(static_cast<float>(w[i])) : w[i]) << name;
  }
}

// ---- nn ------------------------------------------------------------------------------------------

TEST(CppApi2Parity, LayerNormOverSeveralTrailingDims) {
  const auto& f = nn_file();
  for (const auto& [name, shape] : std::vector<std::pair<std::string, Shape>>{
           {"layer_norm_2d", {2, 3}}, {"layer_norm_3d", {2, 3, 4}}, {"layer_norm_1d", {5}}}) {
    SCOPED_TRACE(name);
    nn::LayerNorm ln(shape, 2e-5, true, DType::Float64);
    {
      NoGradGuard no_grad;
      ln.weight.copy_(f.get(name + ".in.w"));
      ln.bias.copy_(f.get(name + ".in.b"));
    }
    Tensor x = in(f, name + ".in.x");
    Tensor y = ln(x);
    sum(y * coeff(y.shape())).backward();
    expect_close(y, f.get(name + ".value"), 1e-12, "y");
    expect_close(x.grad(), f.get(name + ".grad.x"), 1e-11, "grad x");
    expect_close(ln.weight.grad(), f.get(name + ".grad.w"), 1e-11, "grad w");
    expect_close(ln.bias.grad(), f.get(name + ".grad.b"), 1e-11, "grad b");
    // The function torch::layer_norm(x, normalized_shape, w, b, eps) gives the same.
    expect_close(nn::functional::layer_norm(x, shape, ln.weight, ln.bias, 2e-5), y, 0, "functional");
  }
}

TEST(CppApi2Parity, EmbeddingFromPretrained) {
  const auto& f = nn_file();
  const Tensor weight = f.get("embedding_from_pretrained.in.weight"), ids = f.get("embedding_from_pretrained.ids");
  nn::Embedding frozen = nn::Embedding::from_pretrained(weight);
  nn::Embedding tuned = nn::Embedding::from_pretrained(weight.clone(), {.freeze = false});
  EXPECT_EQ(frozen.weight.requires_grad(), api()["embedding_requires_grad"]["frozen"].get<bool>());
  EXPECT_EQ(tuned.weight.requires_grad(), api()["embedding_requires_grad"]["tuned"].get<bool>());
  EXPECT_FALSE(weight.requires_grad());  // the tensor given keeps its own flag
  expect_close(frozen(ids), f.get("embedding_from_pretrained.value"), 0, "value");
  Tensor out = tuned(ids);
  sum(out * coeff(out.shape())).backward();
  expect_close(tuned.weight.grad(), f.get("embedding_from_pretrained.grad.weight"), 1e-12, "grad");
}

TEST(CppApi2Parity, LossModulesWithOptions) {
  const auto& f = nn_file();
  auto get = [&](const char* n) { return f.get(std::string("losses.in.") + n); };
  Tensor logits = get("logits").requires_grad_(), z = get("z").requires_grad_(), tgt = get("tgt").requires_grad_(),
         y = get("y").requires_grad_();
  const Tensor cls = get("cls"), probs = get("probs"), w5 = get("w5"), w4 = get("w4"), pw = get("pw");
  const std::vector<std::pair<std::string, std::function<Tensor()>>> losses = {
      {"cross_entropy", [&] { return nn::CrossEntropyLoss({.weight = w5, .ignore_index = 2, .label_smoothing = 0.1})(logits, cls); }},
      {"cross_entropy_probs", [&] { return nn::CrossEntropyLoss({.label_smoothing = 0.2})(logits, probs); }},
      {"nll_sum", [&] { return nn::NLLLoss({.weight = w5, .reduction = kSum})(log_softmax(logits, 1), cls); }},
      {"mse_sum", [&] { return nn::MSELoss({.reduction = kSum})(z, y); }},
      {"l1_none", [&] { return nn::L1Loss({.reduction = kNone})(z, y); }},
      {"bce_weight", [&] { return nn::BCELoss({.weight = w4})(sigmoid(z), tgt); }},
      {"bce_logits", [&] { return nn::BCEWithLogitsLoss({.weight = w4, .pos_weight = pw})(z, tgt); }},
  };
  for (const auto& [name, loss] : losses) {
    SCOPED_TRACE(name);
    for (Tensor* p : {&logits, &z, &tgt, &y}) p->zero_grad();
    Tensor out = loss();
    sum(out * coeff(out.shape())).backward();
    expect_close(out, f.get("losses." + name + ".value"), 1e-12, "value");
    for (const auto& [pn, p] : std::vector<std::pair<std::string, Tensor>>{{"logits", logits}, {"z", z}, {"tgt", tgt}, {"y", y}}) {
      const std::string key = "losses." + name + ".grad." + pn;
      if (f.has(key)) expect_close(p.grad(), f.get(key), 1e-11, key);
      else EXPECT_FALSE(p.grad().defined()) << key;
    }
  }
  // The class weights are buffers, as torch's.
  EXPECT_EQ(nn::CrossEntropyLoss({.weight = w5}).named_buffers().keys(),
            api()["loss_buffers"]["CrossEntropyLoss(weight)"].get<std::vector<std::string>>());
  EXPECT_EQ(nn::BCEWithLogitsLoss({.weight = w4, .pos_weight = pw}).named_buffers().keys(),
            api()["loss_buffers"]["BCEWithLogitsLoss(weight, pos_weight)"].get<std::vector<std::string>>());
  expect_torch_error([] { nn::BCEWithLogitsLoss()(Tensor::rand({5, 1}), Tensor::rand({5})); }, "bce_logits_target_size");
  expect_torch_error([] { nn::BCELoss()(Tensor::rand({5, 1}), Tensor::rand({5})); }, "bce_target_size");
  expect_torch_error([] { nn::BCELoss()(ag::tensor({1.5}), ag::tensor({1.0})); }, "bce_input_range");
  expect_torch_error([] { nn::functional::layer_norm(Tensor::rand({3, 3}), {2, 2}); }, "layer_norm_shape");
}

TEST(CppApi2Parity, BinaryCrossEntropyOnProbabilitiesAtTheClamps) {
  const auto& f = nn_file();
  Tensor p = in(f, "bce_clamps.in.p");
  const Tensor q = f.get("bce_clamps.in.q");
  Tensor out = binary_cross_entropy(p, q, {.reduction = kNone});
  sum(out * coeff(out.shape())).backward();
  expect_case(f, "bce_clamps", out, {{"p", p}});

  Tensor pm = in(f, "bce_mean.in.p"), qm = in(f, "bce_mean.in.q");
  Tensor mean_loss = nn::functional::binary_cross_entropy(pm, qm, {.weight = f.get("bce_mean.in.w")});
  mean_loss.backward();
  expect_case(f, "bce_mean", mean_loss, {{"p", pm}, {"q", qm}});
}

TEST(CppApi2Parity, MultiheadAttentionGivesTorchsNaNForFullyMaskedRowsWhenAsked) {
  const auto& f = nn_file();
  nn::MultiheadAttention mha(8, 2, 0.0, true, false, DType::Float64, default_generator(),
                             {.fully_masked_rows = nn::FullyMaskedRows::NaN});
  std::map<std::string, Tensor> sd;
  for (const auto& n : f.names())
    if (n.rfind("mha_masked.param.", 0) == 0) sd[n.substr(17)] = f.get(n);
  mha.load_state_dict(sd);
  Tensor q = in(f, "mha_masked.in.q"), k = in(f, "mha_masked.in.k");
  auto res = mha.forward(q, k, k, f.get("mha_masked.kpm"), true, f.get("mha_masked.am"), /*average_attn_weights=*/false);
  expect_close(res.output, f.get("mha_masked.value"), 1e-12, "output");
  expect_close(res.weights, f.get("mha_masked.weights"), 1e-12, "weights");
  sum(res.output).backward();
  expect_close(q.grad(), f.get("mha_masked.grad.q"), 1e-11, "grad q");
  expect_close(k.grad(), f.get("mha_masked.grad.k"), 1e-11, "grad k");
  expect_close(mha.in_proj_weight.grad(), f.get("mha_masked.grad.in_proj_weight"), 1e-11, "grad in_proj_weight");

  // The default keeps attograd's zeros: finite everywhere.
  nn::MultiheadAttention zeros(8, 2, 0.0, true, false, DType::Float64);
  zeros.load_state_dict(sd);
  auto z = zeros.forward(q.detach(), k.detach(), k.detach(), f.get("mha_masked.kpm"), true, f.get("mha_masked.am"), false);
  for (double v : z.output.to_double_vector()) EXPECT_TRUE(std::isfinite(v));
}

TEST(CppApi2Parity, ClipGradNormComputesEveryNormTypeAsTorch) {
  const auto& f = nn_file();
  for (const auto& [name, nt] : api()["clip_norm_types"].items()) {
    const double norm_type = std::stod(nt.get<std::string>());  // Python's repr: "0.5", "inf", "-inf"
    for (const auto& [subset, idx] : std::vector<std::pair<std::string, std::vector<int>>>{
             {"all", {0, 1, 2}}, {"first2", {0, 1}}, {"single", {0}}}) {
      SCOPED_TRACE(name + "." + subset);
      std::vector<Tensor> params;
      for (int i : idx) {
        const Tensor g = f.get("clip.grad." + std::to_string(i));
        params.push_back(Tensor::zeros(g.shape(), DType::Float64).requires_grad_());
        params.back().set_grad(g.clone());
      }
      const double norm = subset == "single" ? nn::utils::clip_grad_norm_(params[0], 0.1, norm_type)
                                             : nn::utils::clip_grad_norm_(params, 0.1, norm_type);
      expect_close(Tensor::scalar(norm, DType::Float64), f.get("clip." + name + "." + subset + ".norm"), 1e-13, "norm");
      for (size_t j = 0; j < params.size(); ++j)
        expect_close(params[j].grad(), f.get("clip." + name + "." + subset + "." + std::to_string(j)), 1e-13, "grad");
    }
  }
  std::vector<Tensor> bad{Tensor::ones({3}).requires_grad_()};
  bad[0].set_grad(Tensor::from_vector(std::vector<double>{1, INFINITY, 2}, {3}, DType::Float32));
  expect_torch_error([&] { nn::utils::clip_grad_norm_(bad, 1.0, 2.0, true); }, "clip_nonfinite");
}

// ---- containers --------------------------------------------------------------------------------

TEST(CppApi2Parity, SequentialNamesChildrenAsTorch) {
  nn::Sequential seq;
  seq.push_back(nn::Linear(3, 4));
  seq.push_back("linear2", nn::Linear(4, 4));
  seq.push_back(nn::ReLU());
  seq.extend(std::vector<std::shared_ptr<nn::Module>>{std::make_shared<nn::Tanh>(), std::make_shared<nn::Linear>(4, 2)});
  nn::Sequential seq2(nn::Sigmoid{});
  seq.extend(seq2);
  EXPECT_EQ(seq.named_children().keys(), api()["sequential"]["children"].get<std::vector<std::string>>());
  EXPECT_EQ(seq.named_parameters().keys(), api()["sequential"]["parameters"].get<std::vector<std::string>>());
}

TEST(CppApi2Parity, ModuleDictUpdatePopAsTorch) {
  nn::ModuleDict d{{"a", std::make_shared<nn::Linear>(2, 2)}, {"b", std::make_shared<nn::ReLU>()}};
  d.update({{"c", std::make_shared<nn::Tanh>()}, {"a", std::make_shared<nn::Linear>(2, 3)}});
  d.update(nn::ModuleDict{{"d", std::make_shared<nn::Linear>(3, 1)}});
  const std::shared_ptr<nn::Module> popped = d.pop("b");
  EXPECT_EQ(popped->name(), api()["module_dict"]["popped"].get<std::string>());
  EXPECT_EQ(d.keys(), api()["module_dict"]["keys"].get<std::vector<std::string>>());
  EXPECT_EQ(d.named_parameters().keys(), api()["module_dict"]["parameters"].get<std::vector<std::string>>());
  EXPECT_EQ(d.at<nn::Linear>("a").out_features, api()["module_dict"]["a_out_features"].get<int64_t>());
}

// ---- optimizers ----------------------------------------------------------------------------------

namespace {
// Runs a groups case's four steps on the fixture's tensors and gradients, then checks the
// parameters and each group's options against torch's.
template <class Opt, class MakeOpt>
void expect_groups_case(const std::string& name, MakeOpt make, const std::function<void(const nlohmann::json&, const typename Opt::ParamGroup&)>& check) {
  SCOPED_TRACE(name);
  const auto& f = optim_file();
  const std::string c = "groups." + name + ".";
  Tensor a = f.get(c + "in.a").requires_grad_(), b = f.get(c + "in.b").requires_grad_();
  Opt opt = make(a, b);
  for (int s = 0; s < 4; ++s) {
    opt.zero_grad();
    a.set_grad(f.get(c + "grad." + std::to_string(s) + ".a"));
    b.set_grad(f.get(c + "grad." + std::to_string(s) + ".b"));
    opt.step();
  }
  expect_close(a, f.get(c + "after.a"), 1e-14, "a");
  expect_close(b, f.get(c + "after.b"), 1e-14, "b");
  const auto& want = api()["group_options"][name];
  ASSERT_EQ(want.size(), opt.param_groups().size());
  for (size_t g = 0; g < want.size(); ++g) check(want[g], opt.param_groups()[g]);
}
}  // namespace

TEST(CppApi2Parity, OptimizerGroupsInheritTheDefaultsAsTorch2) {
  auto adam_like = [](const nlohmann::json& w, const auto& g) {
    EXPECT_EQ(g.options.lr, w["lr"].get<double>());
    EXPECT_EQ(std::get<0>(g.options.betas), w["betas"][0].get<double>());
    EXPECT_EQ(std::get<1>(g.options.betas), w["betas"][1].get<double>());
    EXPECT_EQ(g.options.eps, w["eps"].get<double>());
    EXPECT_EQ(g.options.weight_decay, w["weight_decay"].get<double>());
    EXPECT_EQ(g.options.amsgrad, w["amsgrad"].get<bool>());
  };
  // torch: AdamW([{"params": [a]}, {"params": [b], "weight_decay": 0.0, "betas": (0.8, 0.9)}], lr=0.01, weight_decay=0.1)
  expect_groups_case<optim::AdamW>(
      "adamw",
      [](const Tensor& a, const Tensor& b) {
        return optim::AdamW({{{a}, {}}, {{b}, {.betas = std::make_tuple(0.8, 0.9), .weight_decay = 0.0}}},
                            {.lr = 0.01, .weight_decay = 0.1});
      },
      adam_like);
  // torch: Adam([{"params": [a], "amsgrad": True}, {"params": [b], "eps": 1e-6}], lr=0.02, betas=(0.85, 0.95))
  expect_groups_case<optim::Adam>(
      "adam",
      [](const Tensor& a, const Tensor& b) {
        return optim::Adam({{{a}, {.amsgrad = true}}, {{b}, {.eps = 1e-6}}}, {.lr = 0.02, .betas = std::make_tuple(0.85, 0.95)});
      },
      adam_like);
  // torch: SGD([{"params": [a], "lr": 0.05}, {"params": [b]}], lr=0.1, momentum=0.9, nesterov=True)
  expect_groups_case<optim::SGD>(
      "sgd",
      [](const Tensor& a, const Tensor& b) {
        return optim::SGD({{{a}, {.lr = 0.05}}, {{b}, {}}}, {.lr = 0.1, .momentum = 0.9, .nesterov = true});
      },
      [](const nlohmann::json& w, const optim::SGD::ParamGroup& g) {
        EXPECT_EQ(g.options.lr, w["lr"].get<double>());
        EXPECT_EQ(g.options.momentum, w["momentum"].get<double>());
        EXPECT_EQ(g.options.dampening, w["dampening"].get<double>());
        EXPECT_EQ(g.options.weight_decay, w["weight_decay"].get<double>());
        EXPECT_EQ(g.options.nesterov, w["nesterov"].get<bool>());
      });
}

TEST(CppApi2Parity, StepWithAClosureReturnsItsLossAndAddedGroupsInherit) {
  Tensor w = ag::tensor({1.0, -2.0}, DType::Float64).requires_grad_();
  optim::SGD opt({w}, {.lr = 0.5, .momentum = 0.9});
  int calls = 0;
  const Tensor loss = opt.step([&] {
    ++calls;
    EXPECT_TRUE(GradMode::enabled());  // the closure runs the model and backward
    opt.zero_grad();
    Tensor l = sum(w * w);
    l.backward();
    return l;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(loss.item(), 5.0);
  EXPECT_EQ(w.to_double_vector(), (std::vector<double>{0.0, 0.0}));  // w − 0.5·2w
  EXPECT_FALSE(opt.step(optim::Optimizer::LossClosure()).defined());  // no closure: no loss
  Tensor v = ag::tensor({3.0}, DType::Float64).requires_grad_();
  opt.add_param_group({v}, {.lr = 0.1});  // the rest from the defaults, as torch's add_param_group
  EXPECT_EQ(opt.param_groups()[1].options.lr, 0.1);
  EXPECT_EQ(opt.param_groups()[1].options.momentum, 0.9);
}

namespace {
// An optimizer declared without group options (docs/architecture.md, "A new optimizer"):
// w ← w − lr·g, no state.
struct DescentOptions {
  double lr = 0.1;
  template <class Self, class F>
  static void for_each(Self& o, F&& f) {
    f("lr", o.lr);
  }
};
struct DescentState {};
class Descent : public optim::OptimizerBase<DescentOptions, DescentState> {
 public:
  Descent(std::vector<PartialParamGroup> groups, DescentOptions defaults) : OptimizerBase("Descent") {
    init(std::move(groups), defaults);
  }
  using Optimizer::step;  // step(closure), which step() would hide
  void step() override {
    NoGradGuard no_grad;
    for (const auto& g : param_groups())
      for (const Tensor& p : g.params)
        if (p.grad().defined()) p.sub_(p.grad() * g.options.lr);
  }

 protected:
  void check_options(const DescentOptions& o) const override {
    if (!(o.lr >= 0)) throw std::invalid_argument("Descent: Invalid learning rate: " + optim::repr(o.lr));
  }
  std::map<std::string, Tensor> state_to_map(const DescentState&) const override { return {}; }
  DescentState state_from_map(const std::map<std::string, Tensor>&, const Tensor&) const override { return {}; }
};
}  // namespace

TEST(CppApi2, AnOptimizerWithoutGroupOptionsGivesEveryPartialGroupTheDefaults) {
  Tensor a = ag::tensor({1.0, 2.0}, DType::Float64).requires_grad_(), b = ag::tensor({3.0}, DType::Float64).requires_grad_();
  Descent opt({{{a}, {}}}, {.lr = 0.25});
  opt.add_param_group({b});
  ASSERT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.param_groups()[1].options.lr, 0.25);
  Tensor loss = opt.step([&] {
    opt.zero_grad();
    Tensor l = sum(a * a) + sum(b);
    l.backward();
    return l;
  });
  EXPECT_EQ(loss.item(), 8.0);
  EXPECT_EQ(a.to_double_vector(), (std::vector<double>{0.5, 1.0}));  // a − 0.25·2a
  EXPECT_EQ(b.to_double_vector(), (std::vector<double>{2.75}));      // b − 0.25·1
  EXPECT_THROW(Descent({{{ag::tensor({1.0}).requires_grad_()}, {}}}, {.lr = -1.0}), std::invalid_argument);
}
