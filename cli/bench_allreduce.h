// `bench train`'s communication figure under mpirun: the allreduce of one step's gradients on
// its own, which the overlap it reports is measured against.
#pragma once
#include <cstdint>
#include <vector>

#include "distributed/comm.h"

namespace ag::cli {

// A blocking allreduce of buffers shaped like the reducer's buckets, one after the other, with
// no computation to hide it behind, in seconds: the reference for the overlap `bench train`
// reports. `numels` are the reduced parameters' sizes, in the reducer's parameter order.
double time_blocking_allreduce(distributed::Comm& comm, const distributed::Reducer& reducer, const std::vector<int64_t>& numels);

}  // namespace ag::cli
