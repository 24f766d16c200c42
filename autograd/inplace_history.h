// The history rewrite of an in-place write (autograd/tensor_inplace.cpp), for the one other
// writer that records one: a custom Function whose forward modified an input (mark_dirty).
#pragma once
#include "autograd/tensor.h"

namespace ag {

// `self` (already holding its new values) takes the history of `result` (the same values, with
// the node that made them): `self` itself when it is not a view; for a view, its base takes
// where(the view's region, result, the base's old history) and the view derives its own from it.
// Throws torch's message for a leaf that requires grad or a view of one (in grad mode).
void rebase_history(const Tensor& self, const Tensor& result);

}  // namespace ag
