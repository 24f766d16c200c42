// attograd._C: the C++ engine as a Python extension module. The package attograd (python/attograd)
// builds torch's Python names on it; this file only lists the parts, each bound in its own file.
//
// Extension points: a new part of the C++ API (nn modules, optimizers, the study tools) gets a
// bind_NAME.cpp with a `void bind_NAME(nb::module_&)` declared in common.h and one line below,
// and its Python names in python/attograd/NAME/. Tensors, dtypes and errors cross the boundary on
// their own (common.h's casters, errors.cpp), so a binding states only its functions.
#include "tuning/tuning.h"
#include "common.h"

NB_MODULE(_C, m) {
  // OpenBLAS's kernels chosen as the attograd program chooses them, before any BLAS call
  // (tuning/openblas_kernels.h): a run from Python and the same run from the command
  // then compute with the same kernels.
  ag::tuning::use_fast_openblas_core();
  m.doc() = "attograd's C++ engine (use the package attograd, not this module)";
  m.attr("__version__") = ATTOGRAD_VERSION;
  agpy::bind_errors(m);
  agpy::bind_dtype(m);
  static PyType_Slot tensor_slots[] = {{Py_tp_traverse, reinterpret_cast<void*>(&agpy::tensor_traverse)},
                                        {Py_tp_clear, reinterpret_cast<void*>(&agpy::tensor_clear)},
                                        {0, nullptr}};
  nb::class_<ag::TensorImpl> tensor(m, "Tensor", nb::dynamic_attr(), nb::is_weak_referenceable(),
                                    nb::type_slots(tensor_slots));
  agpy::bind_tensor(m, tensor);
  agpy::bind_tensor_ops(m, tensor);
  agpy::bind_indexing(tensor);
  agpy::bind_sampling(m, tensor);
  agpy::bind_factories(m);
  agpy::bind_random(m);
  agpy::bind_numpy(m, tensor);
  agpy::bind_autograd(m, tensor);
  agpy::bind_function(m);
  agpy::bind_functional(m);
  agpy::bind_anomaly(m);
  agpy::bind_io(m);
  agpy::bind_nn(m);
  agpy::bind_nn_functional(m);
  agpy::bind_nn_utils(m);
  agpy::bind_optim(m);
  agpy::bind_models(m);
  agpy::bind_study(m);
  agpy::bind_training(m);
  agpy::bind_backends(m);
}
