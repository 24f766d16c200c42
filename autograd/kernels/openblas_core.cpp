#include "autograd/kernels/openblas_core.h"

extern "C" char* openblas_get_corename(void);
extern "C" char* openblas_get_config(void);

namespace ag::kernels {

const char* openblas_core_name() { return openblas_get_corename(); }
const char* openblas_config() { return openblas_get_config(); }

}  // namespace ag::kernels
