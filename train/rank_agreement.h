// Under mpirun every rank parses its own command line, and nothing made them equal: ranks
// started with `--iters 20` and `--iters 40` (mpirun's `-np 1 ... : -np 1 ...`), or
// `--layers 1` and `--layers 2`, waited forever for each other in an allreduce, and a
// different --seed, --batch or --eval-every trained silently wrong or ended in an MPI error.
// So at the start every rank compares its resolved configuration with rank 0's.
#pragma once

#include "distributed/comm.h"
#include "train/config/run_config.h"

namespace ag::train {

// Collective: every rank of comm calls it with its resolved configuration. Rank 0 broadcasts
// a hash of its fields and every rank compares; when any rank differs, rank 0 broadcasts the
// fields themselves, the ranks add up which differ, and every rank throws the same
// ConfigError naming them (with rank 0's values). Fields that may differ per process are not
// compared: the paths (data, out, init-from: each machine names its own files, whose contents
// are compared elsewhere) and how a process runs (the table's OnResume::Fresh rows: threads,
// progress, tensorboard...). A single process returns at once.
void check_ranks_agree(distributed::Comm& comm, const TrainConfig& cfg);

}  // namespace ag::train
