// The README's example of the tensor/autograd API. tests/cli/check_readme.cmake checks that
// README.md shows this file and its output exactly, so keep the two in step.
#include <iostream>

#include "autograd/ops.h"

using namespace ag;

int main() {
  // Leaves that require grad; ops on them record the graph as they run.
  Tensor x = Tensor::matrix({{1.0, -2.0}}).requires_grad_();                          // (1, 2)
  Tensor W = Tensor::matrix({{0.5, -1.0, 0.25}, {1.5, 0.0, -0.5}}).requires_grad_();  // (2, 3)
  Tensor b = Tensor::from_vector(std::vector<double>{0.1, 0.2, 0.3}, {3}).requires_grad_();

  Tensor h = tanh(matmul(x, W) + b);  // (1, 3); b is broadcast over the rows
  Tensor y = sum(h);                  // 0-d
  y.backward();                       // fills x.grad(), W.grad(), b.grad(); frees the graph

  std::cout << "h = " << h << "\n";
  std::cout << "y = " << y.item() << "\n";
  std::cout << "dy/db = " << b.grad() << "\n";
  std::cout << "dy/dW = " << W.grad() << "\n";
  std::cout << "dy/dx = " << x.grad() << "\n";
  // By hand: dy/db = 1 - h², dy/dW = xᵀ·(1 - h²), dy/dx = (1 - h²)·Wᵀ.
  Tensor d = 1.0 - h.detach() * h.detach();
  std::cout << "1 - h^2 = " << d << "\n";
}
