// attograd.backends (python/attograd/backends.py): which library runs the float32 GEMMs
// (autograd/kernels/gemm_provider.h). `attograd train` resolves --gemm auto before a run, so a
// training loop written in Python would otherwise run on the library default (OpenBLAS) while the
// command runs on the faster provider: the same choice, by the same measurement, is offered here.
#include <algorithm>
#include <stdexcept>

#include "common.h"
#include "autograd/errors.h"
#include "autograd/kernels/gemm_provider.h"
#include "autograd/parallel.h"
#include "models/language_model.h"
#include "models/registry.h"
#include "train/config/config_error.h"
#include "train/gemm_choice.h"

namespace agpy {

namespace train = ag::train;
namespace kernels = ag::kernels;
namespace tuning = ag::tuning;

void bind_backends(nb::module_& m) {
  m.def("_gemm_provider", [] { return std::string(kernels::gemm_provider_name(kernels::gemm_provider())); });
  m.def("_gemm_providers", [] {
    nb::dict out;  // name -> None when it runs here, else why not
    for (kernels::GemmProvider p : kernels::kGemmProviders) {
      std::string why;
      out[kernels::gemm_provider_name(p)] = kernels::gemm_provider_available(p, &why) ? nb::none() : nb::cast(why);
    }
    return out;
  });
  // name: openblas, onednn or auto; auto measures both at `model`'s GEMM shapes with `tokens`
  // positions per step (the command's measurement and per-machine cache). Returns how it chose.
  m.def("_set_gemm_provider", [](const std::string& name, const ag::models::LanguageModel* model, int64_t tokens) {
    if (name != "auto") {
      for (kernels::GemmProvider p : kernels::kGemmProviders) {
        if (name != kernels::gemm_provider_name(p)) continue;
        try {
          kernels::set_gemm_provider(p);
        } catch (const std::invalid_argument& e) {
          throw std::runtime_error(e.what());  // cannot run here (built without oneDNN)
        }
        return "--gemm " + name;
      }
      throw ag::ValueError("unknown GEMM provider '" + name + "' (auto, openblas or onednn)");
    }
    if (model == nullptr || tokens <= 0)
      throw ag::ValueError("set_gemm_provider('auto') needs model= (from attograd.models) and tokens= > 0, the "
                           "positions of one step, to measure both providers at that model's GEMM shapes");
    const ag::models::ModelConfig cfg = model->model_config();
    const ag::models::ParamTable table = ag::models::find_model(cfg.name).parameters(cfg);
    const int64_t rows = tokens / std::max(ag::parallel::num_threads(), 1);  // a GEMM chunk's rows, as the trainer's
    try {
      nb::gil_scoped_release release;  // auto times GEMMs for a fraction of a second
      return train::apply_gemm_choice(train::GemmChoice::Auto, train::GemmBf16Choice::Auto, ag::Precision::FP32, table, rows,
                                      tuning::GemmWork::TrainingStep)
          .how;
    } catch (const train::ConfigError& e) {
      throw std::runtime_error(e.what());  // oneDNN cannot run here after all
    }
  }, nb::arg("name"), nb::arg("model").none(), nb::arg("tokens"));
}

}  // namespace agpy
