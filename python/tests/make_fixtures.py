"""Makes the fixtures of the Python tests with PyTorch: values, gradients and second-order
gradients of torch_cases.py's cases, the custom Function, the function transforms, how tensors
print, type promotion and grad_fn names. Run it with a Python that has torch and numpy:

    /path/to/venv-with-torch/bin/python python/tests/make_fixtures.py

It rewrites python/tests/fixtures/; the tests read them with NumPy only.
"""

import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nn_cases  # noqa: E402
import torch_cases  # noqa: E402
from torch_cases import CASES  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")
rng = np.random.default_rng(20261203)


def draw(shape, positive):
    return rng.uniform(0.5, 2.0, shape) if positive else rng.standard_normal(shape)


def grads_of(out, xs, g):
    first = torch.autograd.grad(out, xs, g, create_graph=True, allow_unused=True)
    return [f if f is not None else torch.zeros_like(x) for f, x in zip(first, xs)]


def second_order(first, xs):
    vs = [torch.from_numpy(rng.standard_normal(tuple(f.shape))) for f in first]
    inner = sum((f * v).sum() for f, v in zip(first, vs) if f.requires_grad)
    if not torch.is_tensor(inner) or not inner.requires_grad:
        return vs, [torch.zeros_like(x) for x in xs]
    gg = torch.autograd.grad(inner, xs, allow_unused=True)
    return vs, [g if g is not None else torch.zeros_like(x) for g, x in zip(gg, xs)]


def record_case(store, name, xs_np, fn):
    xs = [torch.from_numpy(x).requires_grad_() for x in xs_np]
    out = fn(*xs)
    g = torch.from_numpy(rng.standard_normal(tuple(out.shape)))
    first = grads_of(out, xs, g)
    vs, gg = second_order(first, xs)
    for i, x in enumerate(xs_np):
        store[f"{name}/input{i}"] = x
        store[f"{name}/grad{i}"] = first[i].detach().numpy()
        store[f"{name}/v{i}"] = vs[i].numpy()
        store[f"{name}/gradgrad{i}"] = gg[i].detach().numpy()
    store[f"{name}/out"] = out.detach().numpy()
    store[f"{name}/grad_out"] = g.numpy()


def make_cases():
    store = {}
    for case in CASES:
        xs = [draw(s, i in case.positive) for i, s in enumerate(case.shapes)]
        record_case(store, case.name, xs, lambda *a, c=case: c.fn(torch, *a))
    XExp = torch_cases.make_function(torch)
    record_case(store, "function_xexp", [draw((3, 2), False)], lambda x: XExp.apply(x, 1.5))
    np.savez_compressed(os.path.join(OUT, "cases.npz"), **store)


def make_functional():
    f = torch_cases.functional_fn(torch)
    g = torch_cases.vector_fn(torch)
    x = torch.from_numpy(draw((4,), False))
    v = torch.from_numpy(draw((4,), False))
    F = torch.autograd.functional
    store = {"x": x.numpy(), "v": v.numpy()}
    out, store["vjp"] = F.vjp(g, x, v)
    store["vjp_out"] = out.numpy()
    store["vjp"] = store["vjp"].numpy()
    out, jv = F.jvp(g, x, v)
    store["jvp"] = jv.numpy()
    store["jacobian"] = F.jacobian(g, x).numpy()
    store["hessian"] = F.hessian(f, x).numpy()
    store["hvp"] = F.hvp(f, x, v)[1].numpy()
    store["vhp"] = F.vhp(f, x, v)[1].numpy()
    store["f_out"] = f(x).numpy()
    np.savez_compressed(os.path.join(OUT, "functional.npz"), **store)


# Tensors whose repr the tests compare with torch's ("torch." spelled "attograd.").
REPRS = [
    "T.tensor([[1.5, -2.25], [3.0, 4.0]])",
    "T.tensor([1.0, 2.0, 3.0])",
    "T.tensor([1.0, 2.0], dtype=T.float64)",
    "T.tensor([1e-5, 1.0, 1000.0])",
    "T.tensor([123456789.0, 1.0])",
    "T.tensor([0.1, -0.25, float('nan'), float('inf')])",
    "T.tensor(3.5)",
    "T.tensor(7)",
    "T.tensor([True, False, True])",
    "T.tensor([[1, -20], [300, 4]])",
    "T.arange(12).reshape(3, 4)",
    "T.arange(2000) * 1.5",
    "T.arange(24, dtype=T.float64).reshape(2, 3, 4) / 7",
    "T.arange(5000).reshape(50, 100)",
    "T.zeros(0, 3)",
    "T.zeros(0)",
    "T.tensor([], dtype=T.int64)",
    "T.tensor([1.0, 2.0], requires_grad=True)",
    "T.tensor([1.0, 2.0], requires_grad=True) * 2",
    "T.tensor([[1.0, 2.0]], requires_grad=True).sum()",
    "T.tensor([1.0, -2.0], dtype=T.float64, requires_grad=True).tanh()",
    "T.arange(30, dtype=T.float32) / 3",
]

# Operator and function results whose dtype (and values) follow torch's type promotion.
PROMOTIONS = [
    "T.tensor([1, 2]) + 1",
    "T.tensor([1, 2]) * 2.5",
    "T.tensor([1, 2]) / 2",
    "3 - T.tensor([1, 2])",
    "T.tensor([1.0, 2.0]) + T.tensor([1, 2])",
    "T.tensor([1.0], dtype=T.float64) * T.tensor([2.0])",
    "T.tensor([1.0, 2.0]) + T.tensor(1.0, dtype=T.float64)",
    "T.tensor([1, 2]) + T.tensor(1.5, dtype=T.float64)",
    "T.tensor([True, False]) + 1",
    "T.tensor([True, False]) * 1.5",
    "T.tensor([True, True]).sum()",
    "T.tensor([3, 1, 2]).sum()",
    "T.tensor([3, 1, 2]).max()",
    "(T.tensor([1.0, 2.0]) > 1.5).sum()",
    "T.tensor([1, 2]) ** 2",
    "T.tensor([1.0, 4.0]).exp()",
    "T.tensor([1, 4]).sqrt()",
    "T.where(T.tensor([True, False]), T.tensor([1, 2]), 0)",
    "T.where(T.tensor([True, False]), T.tensor([1.0, 2.0]), 0)",
    "T.tensor([1, -2]).abs()",
    "-T.tensor([1, -2])",
    "T.tensor([1.5, 2.5]).sum(dtype=T.float64)",
]

# grad_fn.name() of ops whose attograd node has torch's name.
NAMES = [
    "x + y", "x - y", "x * y", "x / y", "x + 1", "x * 2", "x.sum()", "x.mean()", "x.exp()", "x.log()",
    "x.tanh()", "x.sigmoid()", "x.relu()", "x.sqrt()", "x.sin()", "x.cos()", "x.abs()", "-x", "x.pow(2)",
    "x.softmax(0)", "x.log_softmax(0)", "x.clone()", "x.clamp(0, 1)", "T.where(x > 0, x, y)",
    "T.cat([x, y])", "T.stack([x, y])", "x.unsqueeze(0)", "x.flip(0)", "x.norm()", "x.amax()",
    "x.gather(0, T.tensor([0]))", "x.masked_fill(x > 0, 0.0)", "x.var()", "x.logsumexp(0)", "x.expand(2, 3)",
    "x.to(T.float64)", "T.maximum(x, y)", "x.index_select(0, T.tensor([1]))",
]


def make_nn():
    """nn_cases' modules: torch's initial state_dict, the input, the upstream gradient, the output,
    the names in order, and the gradient of every parameter (and of a float input)."""
    store, names = {}, {}
    for name, make, spec in nn_cases.MODULE_CASES:
        torch.manual_seed(20261203)
        model = make(torch).double()
        if spec[0] == "ids":
            x = torch.from_numpy(rng.integers(0, spec[2], spec[1]))
        else:
            x = torch.from_numpy(draw(spec[1], False)).requires_grad_()
        model.eval() if name == "tokens" else model.train()
        out = model(x)
        g = torch.from_numpy(rng.standard_normal(tuple(out.shape)))
        out.backward(g)
        names[name] = [n for n, _ in model.named_parameters()]
        for n, t in model.state_dict().items():
            store[f"{name}/state/{n}"] = t.numpy()
        for n, p in model.named_parameters():
            store[f"{name}/grad/{n}"] = p.grad.numpy()
        store[f"{name}/input"] = x.detach().numpy()
        if x.requires_grad:
            store[f"{name}/input_grad"] = x.grad.numpy()
        store[f"{name}/out"] = out.detach().numpy()
        store[f"{name}/grad_out"] = g.numpy()
    np.savez_compressed(os.path.join(OUT, "nn.npz"), **store)
    return names


def make_losses():
    """nn_cases' losses and functional ops: value and the gradients torch computes (None: no key)."""
    store = {}
    for name, fn in nn_cases.LOSS_CASES:
        x = torch.from_numpy(draw(nn_cases.LOSS_SHAPE, False)).requires_grad_()
        logits = draw(nn_cases.LOSS_SHAPE, False)
        p = torch.from_numpy(np.exp(logits) / np.exp(logits).sum(1, keepdims=True)).requires_grad_()
        t = torch.tensor([1, 2, 4, 0])
        w = torch.from_numpy(draw((nn_cases.LOSS_SHAPE[1],), True)).requires_grad_()
        out = fn(torch, torch.nn.functional, x, t, p, w)
        g = torch.from_numpy(rng.standard_normal(tuple(out.shape)))
        grads = torch.autograd.grad(out, [x, p, w], g, allow_unused=True)
        store[f"{name}/x"], store[f"{name}/p"], store[f"{name}/w"] = x.detach().numpy(), p.detach().numpy(), w.detach().numpy()
        store[f"{name}/t"], store[f"{name}/out"], store[f"{name}/grad_out"] = t.numpy(), out.detach().numpy(), g.numpy()
        for k, gr in zip("xpw", grads):
            if gr is not None:
                store[f"{name}/grad_{k}"] = gr.numpy()
    np.savez_compressed(os.path.join(OUT, "losses.npz"), **store)


def _zeropower_float64(grad, ns_coefficients, ns_steps, eps):
    """Muon's Newton–Schulz iteration as torch's (optim/_muon.py), in the gradient's own dtype:
    torch runs it in bfloat16, which a float64 comparison cannot follow."""
    a, b, c = ns_coefficients
    x = grad.clone()
    transposed = x.size(0) > x.size(1)
    if transposed:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):
        s = x @ x.T
        x = torch.addmm(x, torch.addmm(s, s, s, beta=b, alpha=c), x, beta=a)
    return x.T if transposed else x


def make_optim():
    """nn_cases' optimizer trajectories: the start, every parameter and lr after each step."""
    import torch.optim._muon as muon_module

    original = muon_module._zeropower_via_newtonschulz
    muon_module._zeropower_via_newtonschulz = _zeropower_float64
    try:
        store = {"X": draw((5, 3), False), "C": draw((5, 2), False)}
        start = [draw((3, 4), False), draw((4,), False), draw((4, 2), False)]
        for i, p in enumerate(start):
            store[f"start{i}"] = p
        for name, make in nn_cases.OPTIMIZER_CASES:
            params = [torch.from_numpy(p.copy()).requires_grad_() for p in start]
            trajectory, lrs = nn_cases.run_optimizer(torch, make, *params, torch.from_numpy(store["X"]),
                                                     torch.from_numpy(store["C"]))
            for s, ps in enumerate(trajectory):
                for i, p in enumerate(ps):
                    store[f"{name}/step{s}/param{i}"] = p.numpy()
            store[f"{name}/lrs"] = np.array(lrs)
    finally:
        muon_module._zeropower_via_newtonschulz = original
    np.savez_compressed(os.path.join(OUT, "optim.npz"), **store)


def make_tables(nn_names):
    x = torch.tensor([0.5, 1.5, 2.0], requires_grad=True)
    y = torch.tensor([1.0, -1.0, 0.25], requires_grad=True)
    env = {"T": torch, "x": x, "y": y}
    tables = {
        "reprs": [[e, repr(eval(e, env)).replace("torch.", "attograd.")] for e in REPRS],
        "promotions": [[e, str(r.dtype).replace("torch.", ""), r.tolist()] for e in PROMOTIONS
                       for r in [eval(e, env)]],
        "names": [[e, eval(e, env).grad_fn.name()] for e in NAMES],
        "nn_names": nn_names,
        "torch": torch.__version__,
    }
    with open(os.path.join(OUT, "tables.json"), "w") as f:
        json.dump(tables, f, indent=1, allow_nan=True)
        f.write("\n")


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    torch.set_default_dtype(torch.float32)
    make_cases()
    make_functional()
    make_losses()
    make_optim()
    make_tables(make_nn())
    import make_program_fixtures  # the learner programs
    import make_view_fixtures  # views, in-place ops, selection and sampling, devices

    make_view_fixtures.make()
    make_program_fixtures.make()
    print(f"fixtures written to {OUT} with torch {torch.__version__}")
