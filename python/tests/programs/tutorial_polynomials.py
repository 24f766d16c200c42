"""PyTorch's beginner tutorials that fit a cubic to sin(x) on [−π, π] (pytorch/tutorials,
beginner_source/examples_autograd/ and examples_nn/), restated in our own words: four 0-d tensors
with autograd and a gradient step written out under no_grad; a custom autograd.Function (the
Legendre polynomial P3); nn.Sequential(Linear, Flatten) over the features x, x², x³
(x.unsqueeze(-1).pow(tensor([1, 2, 3]))), a summed MSELoss and a step written out over
model.parameters(); the same with optim.SGD; a Module of four Parameters; and the dynamic net
that adds a random number of higher powers sharing one coefficient (Python's random, seeded).
Each prints its loss every 100 steps (200 for the dynamic net) and its fit, as the tutorials do;
the initial coefficients come from torch (the fixtures), as torch.randn draws them."""

import math
import random


def _sine(torch, dtype=None):
    """The curve every tutorial fits: 2000 points of sin on [−π, π]."""
    x = torch.linspace(-math.pi, math.pi, 2000, dtype=dtype or torch.float)
    return x, torch.sin(x)


def _cubic(c0, c1, c2, c3, x):
    return c0 + x * c1 + x ** 2 * c2 + x ** 3 * c3


def _describe(coefficients):
    return "fit: " + " + ".join(f"{c} x^{k}" for k, c in enumerate(coefficients))


def _descend(torch, say, weights, loss_of, lr, steps):
    """Gradient descent written out, as the autograd tutorials do it: the loss (printed every 100
    steps), backward, and each weight moved against its gradient under no_grad, its gradient then
    dropped (set to None)."""
    for step in range(steps):
        loss = loss_of()
        if (step + 1) % 100 == 0:
            say(step, loss.item())
        loss.backward()
        with torch.no_grad():
            for w in weights:
                w -= lr * w.grad
                w.grad = None
    return [w.item() for w in weights]


def autograd_by_hand(torch, say, start, steps=2000):
    """examples_autograd/polynomial_autograd.py."""
    dtype = torch.float
    accelerator = torch.accelerator
    device = accelerator.current_accelerator().type if accelerator.is_available() else "cpu"
    say(f"device: {device}")
    torch.set_default_device(device)
    x, y = _sine(torch, dtype)
    coefficients = [torch.tensor(v, dtype=dtype, requires_grad=True) for v in start]  # torch.randn(()) each
    result = _descend(torch, say, coefficients, lambda: (_cubic(*coefficients, x) - y).pow(2).sum(), 1e-6, steps)
    say(_describe(result))
    return result


def custom_function(torch, say, steps=2000):
    """examples_autograd/polynomial_custom_function.py."""

    class P3(torch.autograd.Function):
        """The Legendre polynomial of degree 3, (5t³ − 3t) / 2, with its derivative written out."""

        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return 0.5 * (5 * t ** 3 - 3 * t)

        @staticmethod
        def backward(ctx, upstream):
            (t,) = ctx.saved_tensors
            return upstream * 1.5 * (5 * t ** 2 - 1)  # dP3/dt = 3 (5t² − 1) / 2

    dtype, device = torch.float, torch.device("cpu")
    x = torch.linspace(-math.pi, math.pi, 2000, device=device, dtype=dtype)
    y = torch.sin(x)
    # fitting c0 + c1 P3(c2 + c3 x) from near a known fit, sin x ≈ −P3(0.3 x) on the interval
    c0, c1, c2, c3 = (torch.full((), v, device=device, dtype=dtype, requires_grad=True) for v in (0.0, -1.0, 0.0, 0.3))
    result = _descend(torch, say, [c0, c1, c2, c3], lambda: (c0 + c1 * P3.apply(c2 + c3 * x) - y).pow(2).sum(),
                      5e-6, steps)
    say("fit: {} + {} P3({} + {} x)".format(*result))
    return result


def _features(torch):
    x, y = _sine(torch)
    return x.unsqueeze(-1).pow(torch.tensor([1, 2, 3])), y  # (2000, 3): columns x, x², x³


def _linear_cubic(torch):
    """A linear layer over the three powers, flattened from (N, 1) to (N,)."""
    return torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.Flatten(0, 1))


def _linear_coefficients(model):
    layer = model[0]
    return [layer.bias.item()] + [layer.weight[:, k].item() for k in range(3)]


def _fit(torch, say, model, x, y, steps, zero_grad, update, every=100):
    """The nn tutorials' loop: the summed squared error (printed every `every` steps), zero_grad,
    backward, update."""
    squared_error = torch.nn.MSELoss(reduction="sum")
    for step in range(steps):
        loss = squared_error(model(x), y)
        if (step + 1) % every == 0:
            say(step, loss.item())
        zero_grad()
        loss.backward()
        update()


def nn_by_hand(torch, say, init_state, steps=2000):
    """examples_nn/polynomial_nn.py."""
    features, y = _features(torch)
    model = _linear_cubic(torch)
    model.load_state_dict(init_state)

    def step_by_hand():
        with torch.no_grad():
            for p in model.parameters():
                p -= 1e-6 * p.grad

    _fit(torch, say, model, features, y, steps, model.zero_grad, step_by_hand)
    result = _linear_coefficients(model)
    say(_describe(result))
    return result


def nn_with_optim(torch, say, init_state, steps=2000):
    """examples_nn/polynomial_optim.py."""
    features, y = _features(torch)
    model = _linear_cubic(torch)
    model.load_state_dict(init_state)
    sgd = torch.optim.SGD(model.parameters(), lr=1e-6)
    _fit(torch, say, model, features, y, steps, sgd.zero_grad, sgd.step)
    result = _linear_coefficients(model)
    say(_describe(result))
    return result


def _coefficient_module(torch, n):
    """A Module of n 0-d Parameters c0 … c{n-1}, drawn by torch.randn(()) in that order."""

    class Coefficients(torch.nn.Module):
        def __init__(self):
            super().__init__()
            for k in range(n):
                setattr(self, f"c{k}", torch.nn.Parameter(torch.randn(())))

        def cubic(self, x):
            return _cubic(self.c0, self.c1, self.c2, self.c3, x)

    return Coefficients


def _cubic_module(torch):
    class Cubic(_coefficient_module(torch, 4)):
        def forward(self, x):
            return self.cubic(x)

    return Cubic


def module(torch, say, init_state, steps=2000):
    """examples_nn/polynomial_module.py."""
    x, y = _sine(torch)
    model = _cubic_module(torch)()
    model.load_state_dict(init_state)
    sgd = torch.optim.SGD(model.parameters(), lr=1e-6)
    _fit(torch, say, model, x, y, steps, sgd.zero_grad, sgd.step)
    result = [p.item() for p in model.parameters()]
    say(_describe(result))
    return result


def dynamic_net(torch, say, init_state, steps=2000, seed=0):
    """examples_nn/dynamic_net.py (2000 of its 30000 steps)."""

    class RandomDepth(_coefficient_module(torch, 5)):
        def forward(self, x):
            y = self.cubic(x)
            # none, x⁴, or x⁴ and x⁵ at random, all weighted by the one coefficient c4
            for power in range(4, random.randint(4, 6)):
                y = y + x ** power * self.c4
            return y

    random.seed(seed)
    x, y = _sine(torch)
    model = RandomDepth()
    model.load_state_dict(init_state)
    sgd = torch.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
    _fit(torch, say, model, x, y, steps, sgd.zero_grad, sgd.step, every=200)
    result = [p.item() for p in model.parameters()]
    say(_describe(result[:4]) + f" + {result[4]} x^4? + {result[4]} x^5?")
    return result
