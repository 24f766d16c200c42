#include "autograd/autocast.h"

namespace ag {

namespace {
thread_local Precision t_precision = Precision::FP32;
}  // namespace

const char* precision_name(Precision p) { return p == Precision::BF16 ? "bf16" : "fp32"; }

Precision autocast_precision() { return t_precision; }
bool is_autocast_enabled() { return t_precision == Precision::BF16; }

AutocastGuard::AutocastGuard(Precision p) : prev_(t_precision) { t_precision = p; }
AutocastGuard::~AutocastGuard() { t_precision = prev_; }

void detail::set_autocast_precision(Precision p) { t_precision = p; }

}  // namespace ag
