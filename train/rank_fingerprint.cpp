#include "train/rank_fingerprint.h"

#include <stdexcept>
#include <string>

namespace ag::train {

void check_same_corpus(distributed::Comm& comm, const data::Corpus& corpus) {
  if (!comm.distributed()) return;
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the ids of both splits
  for (const auto* ids : {&corpus.train_ids, &corpus.val_ids}) {
    for (int64_t v : *ids) h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  }
  uint64_t root = h;
  comm.broadcast(&root, sizeof root);
  if (root != h)
    throw std::runtime_error(corpus.path + ": this text differs from rank 0's corpus (every rank must read the same file)");
}

void check_same_weights(distributed::Comm& comm, const std::vector<std::pair<std::string, Tensor>>& params, int64_t iter) {
  if (!comm.distributed()) return;
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the bytes of every parameter
  for (const auto& [name, param] : params) {
    const Tensor p = param.is_contiguous() ? param : param.contiguous();
    const unsigned char* b = static_cast<const unsigned char*>(p.raw_data());
    for (size_t i = 0, n = static_cast<size_t>(p.numel()) * dtype_size(p.dtype()); i < n; ++i)
      h = (h ^ b[i]) * 1099511628211ull;
  }
  uint64_t root = h;
  comm.broadcast(&root, sizeof root);
  if (root != h)
    throw std::runtime_error("the weights of " + comm.describe(comm.rank()) + " differ from rank 0's at iter " +
                             std::to_string(iter) + " (the ranks no longer train the same model)");
}

}  // namespace ag::train
