// The ops behind attograd.nn.functional (python/attograd/nn/functional.py gives them torch's
// names and keyword arguments): the layers' ops and the losses with their options. Each is
// attograd's op itself (autograd/ops.h); the GIL is released when the input is large.
#include "autograd/ops.h"
#include "common.h"
#include "gil.h"
#include "nn/functional.h"

namespace agpy {

namespace {

using ag::Tensor;

constexpr int64_t kReleaseElements = 32768;  // below it, releasing the GIL costs more than it frees

ag::Reduction reduction_of(int code) {
  switch (code) {
    case 0: return ag::kNone;
    case 1: return ag::kMean;
    case 2: return ag::kSum;
    default: throw nb::value_error("reduction code must be 0 (none), 1 (mean) or 2 (sum)");
  }
}

Tensor or_undefined(const std::optional<Tensor>& t) { return t ? *t : Tensor(); }

}  // namespace

void bind_nn_functional(nb::module_& m) {
  m.def("_nn_linear", [](const Tensor& x, const Tensor& weight, std::optional<Tensor> bias) {
    ReleaseGilIf release(x.numel() * (weight.dim() > 0 ? weight.size(0) : 1) >= kReleaseElements);
    return ag::linear(x, weight, or_undefined(bias));
  }, nb::arg("input"), nb::arg("weight"), nb::arg("bias").none() = nb::none());
  m.def("_nn_gelu", [](const Tensor& x, bool tanh) { return ag::gelu(x, tanh); }, nb::arg("input"), nb::arg("tanh"));
  m.def("_nn_silu", [](const Tensor& x) { return ag::silu(x); }, nb::arg("input"));
  m.def("_nn_dropout", [](const Tensor& x, double p, bool training) {
    if (!(p >= 0 && p <= 1)) throw nb::value_error(("dropout probability has to be between 0 and 1, but got " + std::to_string(p)).c_str());
    return ag::dropout(x, p, training);
  }, nb::arg("input"), nb::arg("p"), nb::arg("training"));
  m.def("_nn_embedding", [](const Tensor& ids, const Tensor& weight, std::optional<int64_t> padding_idx) {
    return ag::nn::functional::embedding(ids, weight, {.padding_idx = padding_idx});
  }, nb::arg("input"), nb::arg("weight"), nb::arg("padding_idx").none() = nb::none());
  m.def("_nn_layer_norm", [](const Tensor& x, nb::handle normalized_shape, std::optional<Tensor> weight,
                             std::optional<Tensor> bias, double eps) {
    const ag::Shape shape = shape_from_python(normalized_shape, "normalized_shape");
    ReleaseGilIf release(x.numel() >= kReleaseElements);
    return ag::layer_norm(x, shape, or_undefined(weight), or_undefined(bias), eps);
  }, nb::arg("input"), nb::arg("normalized_shape"), nb::arg("weight").none(), nb::arg("bias").none(), nb::arg("eps"));
  m.def("_nn_rms_norm", [](const Tensor& x, std::optional<Tensor> weight, std::optional<double> eps) {
    ReleaseGilIf release(x.numel() >= kReleaseElements);
    return ag::rms_norm(x, or_undefined(weight), eps);
  }, nb::arg("input"), nb::arg("weight").none(), nb::arg("eps").none());
  m.def("_nn_scaled_dot_product_attention", [](const Tensor& q, const Tensor& k, const Tensor& v, bool is_causal,
                                               std::optional<double> scale) {
    ReleaseGilIf release(q.numel() * (k.dim() >= 2 ? k.size(-2) : 1) >= kReleaseElements);
    return ag::scaled_dot_product_attention(q, k, v, is_causal, scale);
  }, nb::arg("query"), nb::arg("key"), nb::arg("value"), nb::arg("is_causal"), nb::arg("scale").none());
  m.def("_nn_softcap", [](const Tensor& x, double cap) { return ag::softcap(x, cap); }, nb::arg("input"), nb::arg("cap"));
  m.def("_nn_rope", [](const Tensor& x, int64_t offset, double base) { return ag::rope(x, offset, base); },
        nb::arg("input"), nb::arg("offset"), nb::arg("base"));

  // The losses: reduction 0 none, 1 mean, 2 sum (functional.py reads torch's strings).
  m.def("_nn_mse_loss", [](const Tensor& input, const Tensor& target, int reduction) {
    return ag::mse_loss(input, target, {.reduction = reduction_of(reduction)});
  }, nb::arg("input"), nb::arg("target"), nb::arg("reduction"));
  m.def("_nn_l1_loss", [](const Tensor& input, const Tensor& target, int reduction) {
    return ag::l1_loss(input, target, {.reduction = reduction_of(reduction)});
  }, nb::arg("input"), nb::arg("target"), nb::arg("reduction"));
  m.def("_nn_binary_cross_entropy_with_logits", [](const Tensor& input, const Tensor& target, std::optional<Tensor> weight,
                                                   int reduction, std::optional<Tensor> pos_weight) {
    return ag::binary_cross_entropy_with_logits(
        input, target, {.weight = or_undefined(weight), .reduction = reduction_of(reduction), .pos_weight = or_undefined(pos_weight)});
  }, nb::arg("input"), nb::arg("target"), nb::arg("weight").none(), nb::arg("reduction"), nb::arg("pos_weight").none());
  m.def("_nn_nll_loss", [](const Tensor& input, const Tensor& target, std::optional<Tensor> weight, int64_t ignore_index,
                           int reduction) {
    return ag::nll_loss(input, target,
                        {.weight = or_undefined(weight), .ignore_index = ignore_index, .reduction = reduction_of(reduction)});
  }, nb::arg("input"), nb::arg("target"), nb::arg("weight").none(), nb::arg("ignore_index"), nb::arg("reduction"));
  m.def("_nn_cross_entropy", [](const Tensor& input, const Tensor& target, std::optional<Tensor> weight,
                                int64_t ignore_index, int reduction, double label_smoothing) {
    ReleaseGilIf release(input.numel() >= kReleaseElements);
    return ag::cross_entropy(input, target,
                             {.weight = or_undefined(weight), .ignore_index = ignore_index,
                              .reduction = reduction_of(reduction), .label_smoothing = label_smoothing});
  }, nb::arg("input"), nb::arg("target"), nb::arg("weight").none(), nb::arg("ignore_index"), nb::arg("reduction"),
     nb::arg("label_smoothing"));
}

}  // namespace agpy
