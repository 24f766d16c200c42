// attograd.nn's C++ layers: the C++ modules (nn/*.h) as Python objects, which the package's
// Python modules (python/attograd/nn/modules/cpp.py) wrap. A wrapper registers the C++ module's
// own parameter tensors as its nn.Parameters (the same TensorImpls: an update from Python is seen
// by the C++ forward) and calls the C++ forward; a parameter assigned from Python is put in the
// C++ member through the properties below, so the forward uses what Python shows.
//
// A module's forward releases the GIL when it is big enough to pay for it: the model's forward
// always, a layer's when its matrix product is (the same threshold as matmul's).
#include <iterator>
#include <type_traits>
#include <utility>
#include <vector>

#include "autograd/dtype.h"
#include "autograd/random.h"
#include "common.h"
#include "gil.h"
#include "nn/attention.h"
#include "nn/embedding.h"
#include "nn/layer_norm.h"
#include "nn/linear.h"
#include "nn/module.h"
#include "nn/rms_norm.h"

namespace agpy {

namespace {

using ag::Tensor;
namespace nn = ag::nn;

constexpr double kForwardReleaseWork = 32768;  // matmul's (bind_tensor_ops.cpp)

ag::DType dtype_or_default(std::optional<ag::DType> d) { return d ? *d : default_dtype(); }

// A parameter member as a property: None for an undefined tensor; assigning None drops it.
template <class M>
void param_property(nb::class_<M, nn::Module>& cls, const char* name, Tensor M::*member) {
  cls.def_prop_rw(
      name, [member](const M& m) { return m.*member; },
      [member](M& m, std::optional<Tensor> t) { m.*member = t ? *t : Tensor(); }, nb::arg("value").none());
}

// (name, value) pairs in order, as Python lists them: from the C++ named_* (an OrderedDict of
// name -> value, iterated as pairs).
template <class Named>
auto as_pairs(const Named& named) {
  using Item = std::remove_cvref_t<decltype(*std::begin(named))>;
  std::vector<std::pair<typename Item::first_type, typename Item::second_type>> out;
  for (const auto& [name, value] : named) out.emplace_back(name, value);
  return out;
}

}  // namespace

void bind_nn(nb::module_& m) {
  nb::class_<nn::Module>(m, "_Module")
      .def("named_parameters", [](const nn::Module& mod) { return as_pairs(mod.named_parameters()); })
      .def("named_children", [](const nn::Module& mod) { return as_pairs(mod.named_children()); })
      .def("forward", [](const nn::Module& mod, const Tensor& x) {
        nb::gil_scoped_release release;
        return mod.forward(x);
      }, nb::arg("input"))
      .def("train", &nn::Module::train, nb::arg("mode") = true)
      .def_prop_ro("training", &nn::Module::is_training)
      .def("name", &nn::Module::name);

  auto linear = nb::class_<nn::Linear, nn::Module>(m, "_Linear")
      .def(nb::new_([](int64_t in_features, int64_t out_features, bool bias, std::optional<ag::DType> dtype) {
        return std::make_shared<nn::Linear>(in_features, out_features, bias, dtype_or_default(dtype));
      }), nb::arg("in_features"), nb::arg("out_features"), nb::arg("bias") = true, nb::arg("dtype").none() = nb::none())
      .def("forward", [](const nn::Linear& l, const Tensor& x) {
        ReleaseGilIf release(static_cast<double>(x.numel()) * static_cast<double>(l.out_features) >= kForwardReleaseWork);
        return l.forward(x);
      }, nb::arg("input"))
      .def_ro("in_features", &nn::Linear::in_features)
      .def_ro("out_features", &nn::Linear::out_features);
  param_property(linear, "weight", &nn::Linear::weight);
  param_property(linear, "bias", &nn::Linear::bias);

  auto embedding = nb::class_<nn::Embedding, nn::Module>(m, "_Embedding")
      .def(nb::new_([](int64_t num_embeddings, int64_t embedding_dim, std::optional<ag::DType> dtype,
                       std::optional<int64_t> padding_idx) {
        auto e = std::make_shared<nn::Embedding>(num_embeddings, embedding_dim, dtype_or_default(dtype));
        if (padding_idx) e->set_padding_idx(*padding_idx);
        return e;
      }), nb::arg("num_embeddings"), nb::arg("embedding_dim"), nb::arg("dtype").none() = nb::none(),
         nb::arg("padding_idx").none() = nb::none())
      .def_static("from_pretrained", [](const Tensor& embeddings, bool freeze, std::optional<int64_t> padding_idx) {
        return std::make_shared<nn::Embedding>(nn::Embedding::from_pretrained(embeddings, {freeze, padding_idx}));
      }, nb::arg("embeddings"), nb::arg("freeze") = true, nb::arg("padding_idx").none() = nb::none())
      .def("forward", [](const nn::Embedding& e, const Tensor& ids) { return e.forward(ids); }, nb::arg("input"))
      .def_ro("num_embeddings", &nn::Embedding::num_embeddings)
      .def_ro("embedding_dim", &nn::Embedding::dim)
      .def_ro("padding_idx", &nn::Embedding::padding_idx);
  param_property(embedding, "weight", &nn::Embedding::weight);

  auto layer_norm = nb::class_<nn::LayerNorm, nn::Module>(m, "_LayerNorm")
      .def(nb::new_([](nb::handle normalized_shape, double eps, bool elementwise_affine, std::optional<ag::DType> dtype) {
        return std::make_shared<nn::LayerNorm>(shape_from_python(normalized_shape, "normalized_shape"), eps,
                                               elementwise_affine, dtype_or_default(dtype));
      }), nb::arg("normalized_shape"), nb::arg("eps") = 1e-5, nb::arg("elementwise_affine") = true,
         nb::arg("dtype").none() = nb::none())
      .def("forward", [](const nn::LayerNorm& l, const Tensor& x) { return l.forward(x); }, nb::arg("input"))
      .def_prop_ro("normalized_shape", [](const nn::LayerNorm& l) { return nb::tuple(nb::cast(l.normalized_shape)); })
      .def_ro("dim", &nn::LayerNorm::dim)
      .def_ro("eps", &nn::LayerNorm::eps);
  param_property(layer_norm, "weight", &nn::LayerNorm::weight);
  param_property(layer_norm, "bias", &nn::LayerNorm::bias);

  auto rms_norm = nb::class_<nn::RMSNorm, nn::Module>(m, "_RMSNorm")
      .def(nb::new_([](int64_t dim, std::optional<double> eps, bool elementwise_affine, std::optional<ag::DType> dtype) {
        return std::make_shared<nn::RMSNorm>(dim, eps, elementwise_affine, dtype_or_default(dtype));
      }), nb::arg("normalized_shape"), nb::arg("eps").none() = nb::none(), nb::arg("elementwise_affine") = true,
         nb::arg("dtype").none() = nb::none())
      .def("forward", [](const nn::RMSNorm& l, const Tensor& x) { return l.forward(x); }, nb::arg("input"))
      .def_ro("dim", &nn::RMSNorm::dim)
      .def_ro("eps", &nn::RMSNorm::eps);
  param_property(rms_norm, "weight", &nn::RMSNorm::weight);

  auto mha = nb::class_<nn::MultiheadAttention, nn::Module>(m, "_MultiheadAttention")
      .def(nb::new_([](int64_t embed_dim, int64_t num_heads, double dropout, bool bias, bool batch_first,
                       std::optional<ag::DType> dtype) {
        return std::make_shared<nn::MultiheadAttention>(embed_dim, num_heads, dropout, bias, batch_first,
                                                        dtype_or_default(dtype));
      }), nb::arg("embed_dim"), nb::arg("num_heads"), nb::arg("dropout") = 0.0, nb::arg("bias") = true,
         nb::arg("batch_first") = false, nb::arg("dtype").none() = nb::none())
      .def("forward", [](const nn::MultiheadAttention& a, const Tensor& query, const Tensor& key, const Tensor& value,
                         std::optional<Tensor> key_padding_mask, bool need_weights, std::optional<Tensor> attn_mask,
                         bool average_attn_weights, bool is_causal) {
        nn::MultiheadAttention::Output out;
        {
          ReleaseGilIf release(static_cast<double>(query.numel()) * static_cast<double>(3 * a.embed_dim) >=
                               kForwardReleaseWork);
          out = a.forward(query, key, value, key_padding_mask.value_or(Tensor()), need_weights,
                          attn_mask.value_or(Tensor()), average_attn_weights, is_causal);
        }
        return nb::make_tuple(out.output, out.weights);
      }, nb::arg("query"), nb::arg("key"), nb::arg("value"), nb::arg("key_padding_mask").none() = nb::none(),
         nb::arg("need_weights") = true, nb::arg("attn_mask").none() = nb::none(), nb::arg("average_attn_weights") = true,
         nb::arg("is_causal") = false)
      .def_ro("embed_dim", &nn::MultiheadAttention::embed_dim)
      .def_ro("num_heads", &nn::MultiheadAttention::num_heads)
      .def_ro("head_dim", &nn::MultiheadAttention::head_dim)
      .def_ro("dropout", &nn::MultiheadAttention::dropout)
      .def_ro("batch_first", &nn::MultiheadAttention::batch_first)
      .def_prop_ro("out_proj", [](const nn::MultiheadAttention& a) { return a.out_proj; });
  param_property(mha, "in_proj_weight", &nn::MultiheadAttention::in_proj_weight);
  param_property(mha, "in_proj_bias", &nn::MultiheadAttention::in_proj_bias);
}

}  // namespace agpy
