#!/usr/bin/env python3
"""Generate the fixtures of tests/upstream/test_cpp_api_parity.cpp (tests/parity/fixtures/cpp_api2/).

    /work/venv-torch/bin/python tests/parity/make_cpp_api2_fixtures.py [--out DIR]

The C++ API's second round (issue 33), each item computed by PyTorch in float64:

* autograd.safetensors: in-place arithmetic on tensors and views with their gradients
  (`<case>.in.<name>` inputs, `<case>.value` the written tensor, `<case>.grad.<name>`), the
  reads and writes of indexing, a void hook's view of a gradient.
* nn.safetensors: LayerNorm over several trailing dims, Embedding.from_pretrained, the loss
  modules with their options, binary_cross_entropy on probabilities (the −100 clamp and torch's
  1e-12 gradient clamp included), MultiheadAttention with fully masked rows (torch's NaN),
  clip_grad_norm_ with norm types 0, negative, −inf and on a single tensor.
* optim.safetensors: libtorch's check_exact_values trajectories (optim_baseline.py's: 1001
  steps of step(closure), every 100th) for SGD, Adam and AdamW, and parameter groups given in
  part beside the constructor's defaults (torch 2's inheritance), stepped four times.
* api.json: what torch says and names: needs_input_grad as each backward or grad call narrows
  it, versions after in-place ops, literal tensors' dtypes, shapes and values, the children and
  buffers containers list, and torch's error messages (torch.Size([2, 3]) written [2, 3], as
  attograd prints a shape).

Random values are seeded from a CRC32 of the case's name. The C++ test repeats each case's
operations on the stored inputs, by the case's name.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import re
import sys
import zlib

import torch
import torch.nn.functional as F
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import safetensors_io  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "fixtures", "cpp_api2")
F64 = torch.float64


def gen(name):
    return torch.Generator().manual_seed(zlib.crc32(name.encode()))


def leaf(g, *shape):
    return torch.randn(*shape, generator=g, dtype=F64).requires_grad_()


def coeff(shape):
    """A fixed weighting of each element, so that every gradient entry differs."""
    n = math.prod(shape)
    return (torch.arange(n, dtype=F64) * 0.1 + 1.0).reshape(shape)


def attograd_shapes(msg):
    return re.sub(r"torch\.Size\((\[[^\]]*\])\)", r"\1", msg)


def error(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001 - the message is the fixture
        return attograd_shapes(str(e))
    raise AssertionError("no error")


# ---- autograd ----------------------------------------------------------------------------------

def store(t, case, inputs, value, extra=None):
    for k, v in inputs.items():
        t[f"{case}.in.{k}"] = v.detach().clone()
        if v.grad is not None:
            t[f"{case}.grad.{k}"] = v.grad.detach().clone()
    t[f"{case}.value"] = value.detach().clone()
    for k, v in (extra or {}).items():
        t[f"{case}.{k}"] = v.detach().clone()


def autograd_cases(t, doc):
    versions = {}

    g = gen("inplace_chain")
    x, y = leaf(g, 3, 4), leaf(g, 4)
    a = x * 1.5
    a.mul_(y)
    a.add_(x, alpha=0.5)
    a.sub_(2.0)
    a.div_(y.abs() + 1)
    a.mul_(0.5).add_(1.0)
    versions["inplace_chain"] = a._version
    (a * a * coeff(a.shape)).sum().backward()
    store(t, "inplace_chain", {"x": x, "y": y}, a)

    g = gen("view_writes")
    x, y, w = leaf(g, 4, 3), leaf(g, 4), leaf(g, 2)
    b = x.clone()
    b[1].mul_(3)
    b[:, 0] = y
    b[0, 1:3].add_(w)
    b[2] = 7.0
    versions["view_writes"] = b._version
    (b * b * coeff(b.shape)).sum().backward()
    store(t, "view_writes", {"x": x, "y": y, "w": w}, b)

    g = gen("view_before_rebase")
    x, y = leaf(g, 4, 3), leaf(g, 3)
    b = x * 2
    v = b[0]  # made before the base's history changes
    b.mul_(y)
    ((v * v).sum() + (b * coeff(b.shape)).sum()).backward()
    store(t, "view_before_rebase", {"x": x, "y": y}, b, {"view": v})

    g = gen("index_put")
    u, r = leaf(g, 3), leaf(g, 2, 3)
    mask = torch.tensor([[False, True, False], [False, False, False], [True, False, False], [False, False, True]])
    s = torch.zeros(4, 3, dtype=F64)
    s[1] = u
    s.index_put_((torch.tensor([0, 3]),), r)
    s[mask] = 5.0
    s[2, 1:] = 1.5
    (s * coeff(s.shape)).sum().backward()
    store(t, "index_put", {"u": u, "r": r}, s, {"mask": mask})

    g = gen("index_read")
    x = leaf(g, 4, 5)
    mask = torch.randn(4, 5, generator=g) > 0
    idx = torch.tensor([3, 0, 3])
    parts = [x[1:3, ::2], x[..., -1], x[None, 2], x[idx], x[mask], x[:, torch.tensor([[4, 1], [0, 0]])], x[-1, 1:4:2]]
    sum((p * coeff(p.shape)).sum() for p in parts).backward()
    store(t, "index_read", {"x": x}, x, {"mask": mask, **{f"part.{i}": p for i, p in enumerate(parts)}})

    g = gen("fill_nonleaf")
    x = leaf(g, 3, 4)
    a = x * 2
    a[0].fill_(5.0)
    a[:, 1].zero_()
    (a * a * coeff(a.shape)).sum().backward()
    store(t, "fill_nonleaf", {"x": x}, a)

    g = gen("copy_broadcast")
    y = leaf(g, 4)
    a = torch.zeros(3, 4, dtype=F64)
    a.copy_(y)
    (a * coeff(a.shape)).sum().backward()
    store(t, "copy_broadcast", {"y": y}, a)

    g = gen("void_hook")
    x = leaf(g, 2, 3)
    h = x * 3
    seen = []
    h.register_hook(lambda grad: seen.append(grad.clone()))
    ((h * h) * coeff(h.shape)).sum().backward()
    store(t, "void_hook", {"x": x}, h, {"seen": seen[0]})

    x = torch.ones(3)
    vs = [x._version]
    x.mul_(2)
    vs.append(x._version)
    x.add_(1)
    vs.append(x._version)
    x[0] = 4
    vs.append(x._version)
    versions["ones_mul_add_assign"] = vs
    doc["versions"] = versions

    doc["needs_input_grad"] = libtorch_needs_input_grad()


# needs_input_grad is libtorch's (C++) view: in backward it asks the running graph task whether
# the input's gradient is used (Python's ctx.needs_input_grad is fixed in forward), so the
# fixture comes from a small C++ Function built against the installed libtorch.
NEEDS_INPUT_GRAD_SRC = r"""
#include <torch/extension.h>
using namespace torch::autograd;
static std::vector<std::vector<bool>> seen;
struct Mul : public Function<Mul> {
  static torch::Tensor forward(AutogradContext* ctx, torch::Tensor a, torch::Tensor b) {
    ctx->save_for_backward({a, b});
    return a * b;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    seen.push_back({ctx->needs_input_grad(0), ctx->needs_input_grad(1), ctx->needs_input_grad({{0, 2}})});
    auto s = ctx->get_saved_variables();
    return {g[0] * s[1], g[0] * s[0]};
  }
};
std::vector<std::vector<bool>> run() {
  pybind11::gil_scoped_release no_gil;
  std::vector<std::vector<bool>> out;
  auto x = torch::randn({3}, torch::requires_grad()), y = torch::randn({3}, torch::requires_grad());
  auto z = torch::randn({3});
  seen.clear(); torch::autograd::grad({Mul::apply(x, y).sum()}, {x}); out.push_back(seen[0]);
  seen.clear(); torch::autograd::grad({Mul::apply(x, y).sum()}, {y}); out.push_back(seen[0]);
  seen.clear(); torch::autograd::grad({Mul::apply(x, y).sum()}, {x, y}); out.push_back(seen[0]);
  seen.clear(); Mul::apply(x, y).sum().backward(); out.push_back(seen[0]);
  seen.clear(); Mul::apply(x, y).sum().backward({}, false, false, {y}); out.push_back(seen[0]);
  seen.clear(); Mul::apply(x, z).sum().backward(); out.push_back(seen[0]);
  return out;
}
"""


def libtorch_needs_input_grad():
    from torch.utils.cpp_extension import load_inline
    ext = load_inline(name="cpp_api2_needs_input_grad", cpp_sources=[NEEDS_INPUT_GRAD_SRC], functions=["run"])
    names = ["grad_x", "grad_y", "grad_xy", "backward", "backward_inputs_y", "backward_y_constant"]
    # per call: needs_input_grad(0), needs_input_grad(1), needs_input_grad({{0, 2}})
    return dict(zip(names, ext.run()))


# ---- literals ------------------------------------------------------------------------------------

def literal_cases(doc):
    cases = {
        "scalar_int": torch.tensor(123),
        "scalar_float": torch.tensor(123.456),
        "scalar_bool": torch.tensor(True),
        "ints": torch.tensor([1, 2, 3]),
        "floats": torch.tensor([1.5, 2.25, 3.125]),
        "bools": torch.tensor([True, False, True]),
        "int_matrix": torch.tensor([[1, 2], [3, 4]]),
        "column": torch.tensor([[1], [2]]),
        "deep": torch.tensor([[[[[[[[1.0, 2.0, 3.0]]]]], [[[[[4.0, 5.0, 6.0]]]]], [[[[[7.0, 8.0, 9.0]]]]]]]]),
        "bool_matrix": torch.tensor([[True, False], [False, True]]),
        "empty": torch.tensor([]),
        "empty_rows": torch.tensor([[], []]),
        "as_float64": torch.tensor([[1, 2], [3, 4]], dtype=F64),
        "floats_as_int64": torch.tensor([1.1, 2.7, -3.5], dtype=torch.int64),
    }
    doc["literals"] = {
        k: {"dtype": str(v.dtype).replace("torch.", ""), "shape": list(v.shape), "values": v.flatten().tolist()}
        for k, v in cases.items()
    }


# ---- nn ------------------------------------------------------------------------------------------

def nn_cases(t, doc):
    for name, shape in [("layer_norm_2d", (2, 3)), ("layer_norm_3d", (2, 3, 4)), ("layer_norm_1d", (5,))]:
        g = gen(name)
        x = leaf(g, 3, *shape)
        w, b = leaf(g, *shape), leaf(g, *shape)
        y = F.layer_norm(x, shape, w, b, 2e-5)
        (y * coeff(y.shape)).sum().backward()
        store(t, name, {"x": x, "w": w, "b": b}, y)

    g = gen("embedding_from_pretrained")
    weight = torch.randn(5, 3, generator=g, dtype=F64)
    ids = torch.tensor([[1, 4], [0, 1]])
    frozen = nn.Embedding.from_pretrained(weight)
    tuned = nn.Embedding.from_pretrained(weight.clone(), freeze=False)
    out = tuned(ids)
    (out * coeff(out.shape)).sum().backward()
    t["embedding_from_pretrained.in.weight"] = weight
    t["embedding_from_pretrained.ids"] = ids
    t["embedding_from_pretrained.value"] = frozen(ids).detach()
    t["embedding_from_pretrained.grad.weight"] = tuned.weight.grad
    doc["embedding_requires_grad"] = {"frozen": frozen.weight.requires_grad, "tuned": tuned.weight.requires_grad}

    g = gen("losses")
    logits = leaf(g, 6, 5)
    cls = torch.tensor([1, 2, 0, 4, 2, 3])
    probs = torch.softmax(torch.randn(6, 5, generator=g, dtype=F64), 1)
    w5 = torch.rand(5, generator=g, dtype=F64) + 0.5
    z = leaf(g, 3, 4)
    tgt = torch.rand(3, 4, generator=g, dtype=F64).requires_grad_()
    w4 = torch.rand(4, generator=g, dtype=F64) + 0.5
    pw = torch.rand(4, generator=g, dtype=F64) + 0.5
    y = leaf(g, 3, 4)
    for k, v in {"logits": logits, "probs": probs, "w5": w5, "z": z, "tgt": tgt, "w4": w4, "pw": pw, "y": y}.items():
        t[f"losses.in.{k}"] = v.detach().clone()
    t["losses.in.cls"] = cls
    losses = {
        "cross_entropy": lambda: nn.CrossEntropyLoss(weight=w5, ignore_index=2, label_smoothing=0.1)(logits, cls),
        "cross_entropy_probs": lambda: nn.CrossEntropyLoss(label_smoothing=0.2)(logits, probs),
        "nll_sum": lambda: nn.NLLLoss(weight=w5, reduction="sum")(torch.log_softmax(logits, 1), cls),
        "mse_sum": lambda: nn.MSELoss(reduction="sum")(z, y),
        "l1_none": lambda: nn.L1Loss(reduction="none")(z, y),
        "bce_weight": lambda: nn.BCELoss(weight=w4)(torch.sigmoid(z), tgt),
        "bce_logits": lambda: nn.BCEWithLogitsLoss(weight=w4, pos_weight=pw)(z, tgt),
    }
    for name, f in losses.items():
        for p in (logits, z, tgt, y):
            p.grad = None
        out = f()
        (out * coeff(out.shape)).sum().backward()
        t[f"losses.{name}.value"] = out.detach().clone()
        for pname, p in {"logits": logits, "z": z, "tgt": tgt, "y": y}.items():
            if p.grad is not None:
                t[f"losses.{name}.grad.{pname}"] = p.grad.clone()
    doc["loss_buffers"] = {"CrossEntropyLoss(weight)": list(dict(nn.CrossEntropyLoss(weight=w5).named_buffers())),
                           "BCEWithLogitsLoss(weight, pos_weight)":
                               list(dict(nn.BCEWithLogitsLoss(weight=w4, pos_weight=pw).named_buffers()))}

    # binary_cross_entropy on probabilities at the clamps: p = 0 and 1 (log clamped at −100),
    # p = 1e-300 (the gradient's denominator clamped at 1e-12), and a middle value.
    p = torch.tensor([[0.0, 1.0, 1e-300, 0.3], [0.0, 1.0, 1 - 1e-16, 0.7]], dtype=F64, requires_grad=True)
    q = torch.tensor([[0.0, 1.0, 0.5, 0.2], [1.0, 0.0, 0.5, 0.9]], dtype=F64)
    out = F.binary_cross_entropy(p, q, reduction="none")
    (out * coeff(out.shape)).sum().backward()
    store(t, "bce_clamps", {"p": p, "q": q}, out)
    g = gen("bce_mean")
    p = torch.rand(2, 3, generator=g, dtype=F64).requires_grad_()
    q = torch.rand(2, 3, generator=g, dtype=F64).requires_grad_()
    w = torch.rand(3, generator=g, dtype=F64)
    out = F.binary_cross_entropy(p, q, weight=w)
    out.backward()
    store(t, "bce_mean", {"p": p, "q": q, "w": w}, out)

    # MultiheadAttention: batch 1's keys all padded, query 2 of the attention mask hides every key.
    g = gen("mha_masked")
    torch.manual_seed(zlib.crc32(b"mha_masked"))
    mha = nn.MultiheadAttention(8, 2, dtype=F64)
    with torch.no_grad():
        mha.in_proj_bias.normal_(generator=g)
        mha.out_proj.bias.normal_(generator=g)
    q, k = leaf(g, 3, 2, 8), leaf(g, 4, 2, 8)
    kpm = torch.tensor([[False, True, False, False], [True, True, True, True]])
    am = torch.tensor([[False, False, True, False], [False, True, False, False], [True, True, True, True]])
    out, weights = mha(q, k, k, key_padding_mask=kpm, attn_mask=am, average_attn_weights=False)
    out.sum().backward()
    for kk, vv in mha.state_dict().items():
        t[f"mha_masked.param.{kk}"] = vv.detach().clone()
    store(t, "mha_masked", {"q": q, "k": k}, out,
          {"weights": weights, "kpm": kpm, "am": am, "grad.in_proj_weight": mha.in_proj_weight.grad})

    # clip_grad_norm_ with the norm types torch computes beyond p > 0.
    g = gen("clip_norm_types")
    grads = [torch.randn(4, 6, generator=g, dtype=F64), torch.randn(8, generator=g, dtype=F64), torch.zeros(5, dtype=F64)]
    grads[1][2] = 0.0
    for i, gr in enumerate(grads):
        t[f"clip.grad.{i}"] = gr
    types = {"p0": 0.0, "pm1": -1.0, "pm05": -0.5, "pm2": -2.0, "pminf": -math.inf, "p05": 0.5, "pinf": math.inf,
             "p3": 3.0}
    for name, nt in types.items():
        for subset, ps in (("all", [0, 1, 2]), ("first2", [0, 1]), ("single", [0])):
            params = [torch.zeros(grads[i].shape, dtype=F64, requires_grad=True) for i in ps]
            for p, i in zip(params, ps):
                p.grad = grads[i].clone()
            arg = params[0] if subset == "single" else params
            norm = nn.utils.clip_grad_norm_(arg, 0.1, norm_type=nt)
            t[f"clip.{name}.{subset}.norm"] = norm.detach().reshape(())
            for j, p in enumerate(params):
                t[f"clip.{name}.{subset}.{j}"] = p.grad.clone()
    doc["clip_norm_types"] = {k: repr(v) for k, v in types.items()}  # "inf", "-inf": JSON has no infinities


# ---- optimizers ----------------------------------------------------------------------------------

EXACT_PARAMS = {  # libtorch's check_exact_values: fixed starting values, flattened
    "0.weight": [-0.2109, -0.4976, -0.1413, -0.3420, -0.2524, 0.6976],
    "0.bias": [-0.1085, -0.2979, 0.6892],
    "2.weight": [-0.0508, -0.3941, -0.2843],
    "2.bias": [-0.0711],
}


def exact_value_cases():
    """libtorch's ProducesPyTorchValues cases that attograd's optimizers have."""
    return {
        "Adam": lambda p: torch.optim.Adam(p, lr=1.0),
        "Adam_with_weight_decay": lambda p: torch.optim.Adam(p, lr=1.0, weight_decay=1e-2),
        "Adam_with_weight_decay_and_amsgrad": lambda p: torch.optim.Adam(p, lr=1.0, weight_decay=1e-6, amsgrad=True),
        "AdamW": lambda p: torch.optim.AdamW(p, lr=1.0),
        "AdamW_without_weight_decay": lambda p: torch.optim.AdamW(p, lr=1.0, weight_decay=0),
        "AdamW_with_amsgrad": lambda p: torch.optim.AdamW(p, lr=1.0, amsgrad=True),
        "SGD": lambda p: torch.optim.SGD(p, lr=0.1),
        "SGD_with_weight_decay": lambda p: torch.optim.SGD(p, lr=0.1, weight_decay=1e-2),
        "SGD_with_weight_decay_and_momentum": lambda p: torch.optim.SGD(p, lr=0.1, weight_decay=1e-2, momentum=0.9),
        "SGD_with_weight_decay_and_nesterov_momentum":
            lambda p: torch.optim.SGD(p, lr=0.1, weight_decay=1e-6, momentum=0.9, nesterov=True),
    }


def optim_cases(t, doc):
    # The trajectories of libtorch's check_exact_values (its optim_baseline.py), every 100th of
    # 1001 steps, each a step(closure) whose closure returns 10.
    for name, make in exact_value_cases().items():
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(2, 3), nn.Sigmoid(), nn.Linear(3, 1), nn.Sigmoid()).double()
        with torch.no_grad():
            for k, v in model.named_parameters():
                v.copy_(torch.tensor(EXACT_PARAMS[k], dtype=F64).view_as(v))
        opt = make(model.parameters())
        x = torch.tensor([0.1, 0.2, 0.3, 0.4, 0.5, 0.6], dtype=F64).reshape(3, 2)
        for i in range(1001):
            opt.zero_grad()
            model(x).sum().backward()
            loss = opt.step(lambda: torch.tensor([10.0]))
            assert float(loss) == 10.0
            if i % 100 == 0:
                for j, (k, v) in enumerate(model.named_parameters()):
                    t[f"exact.{name}.{i // 100}.{j}"] = v.detach().flatten().clone()
    doc["exact_value_cases"] = list(exact_value_cases())

    # Parameter groups given in part, the rest from the constructor's defaults (torch 2).
    groups = {
        "adamw": lambda a, b: torch.optim.AdamW(
            [{"params": [a]}, {"params": [b], "weight_decay": 0.0, "betas": (0.8, 0.9)}], lr=0.01, weight_decay=0.1),
        "adam": lambda a, b: torch.optim.Adam([{"params": [a], "amsgrad": True}, {"params": [b], "eps": 1e-6}],
                                              lr=0.02, betas=(0.85, 0.95)),
        "sgd": lambda a, b: torch.optim.SGD([{"params": [a], "lr": 0.05}, {"params": [b]}], lr=0.1, momentum=0.9,
                                            nesterov=True),
    }
    opts = {}
    for name, make in groups.items():
        g = gen("groups_" + name)
        a, b = leaf(g, 3, 2), leaf(g, 4)
        t[f"groups.{name}.in.a"], t[f"groups.{name}.in.b"] = a.detach().clone(), b.detach().clone()
        opt = make(a, b)
        for s in range(4):
            opt.zero_grad()
            ga, gb = torch.randn(3, 2, generator=g, dtype=F64), torch.randn(4, generator=g, dtype=F64)
            t[f"groups.{name}.grad.{s}.a"], t[f"groups.{name}.grad.{s}.b"] = ga, gb
            a.grad, b.grad = ga.clone(), gb.clone()
            opt.step()
        t[f"groups.{name}.after.a"], t[f"groups.{name}.after.b"] = a.detach().clone(), b.detach().clone()
        opts[name] = [{k: (list(v) if isinstance(v, tuple) else v) for k, v in grp.items()
                       if k in ("lr", "betas", "eps", "weight_decay", "amsgrad", "momentum", "dampening", "nesterov")}
                      for grp in opt.state_dict()["param_groups"]]
    doc["group_options"] = opts


# ---- containers and messages ----------------------------------------------------------------

def container_cases(doc):
    seq = nn.Sequential()
    seq.append(nn.Linear(3, 4))
    seq.add_module("linear2", nn.Linear(4, 4))
    seq.append(nn.ReLU())
    seq.extend([nn.Tanh(), nn.Linear(4, 2)])
    seq2 = nn.Sequential(nn.Sigmoid())
    seq.extend(seq2)
    doc["sequential"] = {"children": [n for n, _ in seq.named_children()],
                         "parameters": [n for n, _ in seq.named_parameters()]}
    d = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    d.update([("c", nn.Tanh()), ("a", nn.Linear(2, 3))])
    d.update(nn.ModuleDict({"d": nn.Linear(3, 1)}))
    popped = type(d.pop("b")).__name__
    doc["module_dict"] = {"keys": list(d.keys()), "popped": popped,
                          "parameters": [n for n, _ in d.named_parameters()],
                          "a_out_features": d["a"].out_features}


def messages(doc):
    x = torch.randn(5, 5, requires_grad=True)
    z = x * x
    one = torch.ones(1, requires_grad=True)
    other = torch.ones(1, requires_grad=True)
    m = {
        "backward_inputs_empty": error(lambda: z.backward(torch.ones(5, 5), inputs=[])),
        "implicit_scalar": error(lambda: z.backward()),
        "unused_input": error(lambda: torch.autograd.grad(one * 2, [one, other])),
        "no_grad_fn": error(lambda: torch.ones(2).backward()),
        "input_no_grad": error(lambda: torch.autograd.grad((one * 2).sum(), [torch.ones(1)])),
        "leaf_inplace": error(lambda: one.mul_(2)),
        "view_of_leaf_inplace": error(lambda: one[0:1].mul_(2)),
        "broadcast_inplace": error(lambda: torch.ones(3).add_(torch.ones(2, 3))),
        "float_into_long": error(lambda: torch.ones(3, dtype=torch.long).mul_(1.5)),
        "requires_grad_nonleaf": error(lambda: z.requires_grad_(False)),
        # libtorch's Tensor::requires_grad_ reaches the core's check (Python's requires_grad_ has a
        # text of its own): the core's text is what a factory's requires_grad=True gives
        "requires_grad_int": error(lambda: torch.tensor([5], requires_grad=True)),
        "bce_logits_target_size": error(lambda: F.binary_cross_entropy_with_logits(torch.rand(5, 1), torch.rand(5))),
        "bce_target_size": error(lambda: F.binary_cross_entropy(torch.rand(5, 1), torch.rand(5))),
        "bce_input_range": error(lambda: F.binary_cross_entropy(torch.tensor([1.5]), torch.tensor([1.0]))),
        "layer_norm_shape": error(lambda: F.layer_norm(torch.rand(3, 3), [2, 2])),
        "index_out_of_range": error(lambda: torch.zeros(3, 4)[5]),
        "too_many_indices": error(lambda: torch.zeros(3)[0, 0]),
        "clip_nonfinite": error(lambda: nn.utils.clip_grad_norm_([_inf_grad()], 1.0, 2.0, True)),
        "index_put_shape": error(lambda: torch.zeros(3, 4).index_put_((torch.tensor([0, 1]),), torch.ones(3))),
    }
    doc["errors"] = m


def _inf_grad():
    p = torch.ones(3, requires_grad=True)
    p.grad = torch.tensor([1.0, math.inf, 2.0])
    return p


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for old in glob.glob(os.path.join(args.out, "*.safetensors")) + glob.glob(os.path.join(args.out, "*.json")):
        os.remove(old)
    meta = {"torch_version": torch.__version__, "generator": "tests/parity/make_cpp_api2_fixtures.py"}
    doc = {"torch_version": torch.__version__}
    t = {}
    autograd_cases(t, doc)
    safetensors_io.save_file(t, os.path.join(args.out, "autograd.safetensors"), meta)
    t = {}
    nn_cases(t, doc)
    safetensors_io.save_file(t, os.path.join(args.out, "nn.safetensors"), meta)
    t = {}
    optim_cases(t, doc)
    safetensors_io.save_file(t, os.path.join(args.out, "optim.safetensors"), meta)
    literal_cases(doc)
    container_cases(doc)
    messages(doc)
    with open(os.path.join(args.out, "api.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    print(f"wrote the fixtures of the C++ API's second round to {args.out}")


if __name__ == "__main__":
    main()
