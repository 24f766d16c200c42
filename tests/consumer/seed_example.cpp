// The README's seed example, computed with the installed library: one head, no projections,
// d = 2, Q = [[1,0],[0,1]], K = [[1,0],[1,1],[0,1]], V = [[10,0],[0,5],[0,1]]. Then a character
// MLP from the model registry, to show that models link too.
#include <cmath>
#include <cstdio>

#include "autograd/ops.h"
#include "models/registry.h"

using namespace ag;

int main() {
  const Tensor Q = unsqueeze(Tensor::matrix({{1, 0}, {0, 1}}), 0);          // (1, 2, 2)
  const Tensor K = unsqueeze(Tensor::matrix({{1, 0}, {1, 1}, {0, 1}}), 0);  // (1, 3, 2)
  const Tensor V = unsqueeze(Tensor::matrix({{10, 0}, {0, 5}, {0, 1}}), 0);
  const Tensor P = attention_probs(Q, K, Tensor(), 1 / std::sqrt(2.0), false);  // (1, 2, 3)
  const Tensor C = matmul(P, V);                                                // (1, 2, 2)
  std::printf("softmax(QK^T/sqrt(2)) = [[%.3f, %.3f, %.3f], [%.3f, %.3f, %.3f]]\n", P.at({0, 0, 0}), P.at({0, 0, 1}),
              P.at({0, 0, 2}), P.at({0, 1, 0}), P.at({0, 1, 1}), P.at({0, 1, 2}));
  std::printf("context = [[%.3f, %.3f], [%.3f, %.3f]]\n", C.at({0, 0, 0}), C.at({0, 0, 1}), C.at({0, 1, 0}),
              C.at({0, 1, 1}));
  models::ModelConfig mlp;
  mlp.name = "mlp", mlp.vocab_size = 65, mlp.block_size = 8, mlp.n_embd = 16, mlp.hidden = 64;
  // (65 + 1)·16 + (8·16)·64 + 64 + 64·65 + 65 = 13537
  std::printf("mlp: %ld parameters\n", static_cast<long>(models::make_model(mlp)->num_parameters()));
}
