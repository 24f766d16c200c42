// The lock the engine holds while it accumulates into a leaf's .grad (engine.cpp), as torch's
// AccumulateGrad holds one: two threads whose backward passes reach one leaf add both gradients.
// Code that reads or replaces a leaf's .grad while other threads may run backward into it (the
// Python front's Tensor.grad, which runs with other Python threads' backward passes outside the
// GIL) takes it too.
#pragma once
#include <mutex>

namespace ag {

struct TensorImpl;

std::mutex& grad_accumulation_mutex(const TensorImpl* leaf);

}  // namespace ag
