#include "autograd/grad_mode.h"

namespace ag {

namespace {
thread_local bool g_grad_enabled = true;
}

bool GradMode::enabled() { return g_grad_enabled; }
void GradMode::set_enabled(bool on) { g_grad_enabled = on; }

}  // namespace ag
