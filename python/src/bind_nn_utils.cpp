// nn.init's draws and nn.utils' gradient clipping (python/attograd/nn/init.py and utils.py give
// them torch's names): the in-place initialisers draw from attograd's generator; the other
// initialisers of torch.nn.init are formulas over these two draws, written in Python.
#include "autograd/random.h"
#include "common.h"
#include "gil.h"
#include "nn/init.h"
#include "nn/utils/clip_grad.h"

namespace agpy {

void bind_nn_utils(nb::module_& m) {
  m.def("_nn_init_uniform_", [](ag::Tensor t, double a, double b) { ag::nn::init::uniform_(t, a, b); },
        nb::arg("tensor"), nb::arg("a"), nb::arg("b"));
  m.def("_nn_init_normal_", [](ag::Tensor t, double mean, double std) { ag::nn::init::normal_(t, mean, std); },
        nb::arg("tensor"), nb::arg("mean"), nb::arg("std"));
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
