// torch's names of the graph's nodes ("AddBackward0" for attograd's op "add"), for what shows a
// graph or names a node as torch does: the Python package's grad_fn, the engine's error for a
// saved tensor modified in place.
#pragma once
#include <string>

namespace ag {

// "AddBackward0" for attograd's op "add" (and "add_scalar"), the renamed ones where torch's node
// has another name ("concat" is "CatBackward0"; a write through a view is torch's C++ class
// "torch::autograd::CopySlices"), and a custom Function's class name with "Backward" appended
// ("MulConstantBackward"), as torch's grad_fn.name() gives them.
std::string torch_node_name(const std::string& op);

}  // namespace ag
