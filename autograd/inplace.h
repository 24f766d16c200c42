// An in-place op given by its out-of-place computation, for front ends that offer more in-place
// ops than Tensor's own (the Python package's pow_, masked_fill_, clamp_, index_put_, ...).
#pragma once
#include <functional>
#include <vector>

#include "autograd/tensor.h"

namespace ag {

// Writes compute(self) into self, with the semantics of Tensor's in-place writes (tensor.h,
// autograd/tensor_inplace.cpp): one version bump; outside grad mode, or when neither self nor
// any of `operands` (the other tensors compute reads) requires grad, only the values are
// written; otherwise the write is recorded and self (or a view's base) takes the history of
// compute's result, and a leaf that requires grad, or a view of one, throws torch's message.
// compute's result must have self's shape and a dtype that converts to self's (not a float
// into an integer tensor). `saves_self`: compute's op keeps its input for its backward (mul,
// pow, clamp), so it is given a copy of self, which the write does not change.
const Tensor& inplace_op(const Tensor& self, const std::vector<Tensor>& operands, bool saves_self,
                         const std::function<Tensor(const Tensor& current)>& compute);

}  // namespace ag
