// nn.utils' gradient clipping (python/attograd/nn/utils.py gives it torch's names). (nn.init's
// draws are Tensor.uniform_ and normal_: bind_random.cpp.)
#include "common.h"
#include "gil.h"
#include "nn/utils/clip_grad.h"

namespace agpy {

void bind_nn_utils(nb::module_& m) {
  m.def("_nn_clip_grad_norm_", [](const std::vector<ag::Tensor>& params, double max_norm, double norm_type,
                                  bool error_if_nonfinite) {
    nb::gil_scoped_release release;
    return ag::nn::utils::clip_grad_norm_(params, max_norm, norm_type, error_if_nonfinite);
  }, nb::arg("parameters"), nb::arg("max_norm"), nb::arg("norm_type"), nb::arg("error_if_nonfinite"));
  m.def("_nn_clip_grad_value_", [](const std::vector<ag::Tensor>& params, double clip_value) {
    nb::gil_scoped_release release;
    ag::nn::utils::clip_grad_value_(params, clip_value);
  }, nb::arg("parameters"), nb::arg("clip_value"));
}

}  // namespace agpy
