#!/usr/bin/python3
"""Generate the nn::MultiheadAttention parity fixtures from torch.nn.MultiheadAttention.

Run from anywhere with Debian's Python (the one that has torch):

    /usr/bin/python3 tests/parity/make_mha_fixtures.py [--out DIR]

For every case below it writes, into tests/parity/fixtures/mha/ by default,

    <case>_f64.case.safetensors      inputs for the attograd probe (CASE)
    <case>_f64.expected.safetensors  what torch computed (RESULT)
    <case>_f32.case.safetensors      the same inputs cast to float32
    <case>_f32.expected.safetensors  torch run in float32 on those inputs
    cases.json                       index of all of the above

CASE tensors: query, key, value, in_proj_weight, out_proj.weight, and when present
in_proj_bias, out_proj.bias, attn_mask (BOOL or the float dtype), key_padding_mask (BOOL),
grad_output (absent: the gradient is that of output.sum()). CASE __metadata__: num_heads and,
only when the case sets them, batch_first / is_causal / average_attn_weights ("true"/"false";
defaults false, false, true).

RESULT tensors: output, attn_weights, grad.<input> for every float input except grad_output
and attn_mask.

Semantics bridged here (see README.md):
  * is_causal=true is attograd's own flag (it builds the mask, key j > query i is masked).
    torch 1.13 has no is_causal argument, so torch gets an explicit triu(ones(L, S), 1) bool mask,
    combined with the case's attn_mask when the case has both; the CASE file then holds only the
    case's own attn_mask (or none) plus the flag.
  * query, key and value are always separate leaves, even in self-attention cases where they
    hold equal values, so grad.query/grad.key/grad.value are the per-input gradients.
  * No case has a fully masked row (torch gives NaN there, attograd zeros).

Every case is also recomputed from the CASE tensors by a small independent implementation of
the contract's semantics (`_reference`), which must agree with torch in float64.

The output is deterministic: each case is seeded from a CRC32 of its name.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import zlib
from dataclasses import dataclass
from typing import Dict, Optional

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "mha")


@dataclass
class Case:
    name: str
    desc: str
    E: int
    H: int
    L: int
    S: Optional[int] = None            # default: L
    N: Optional[int] = 2               # None: unbatched 2-d input
    self_attn: bool = True             # query, key, value hold equal values (L == S)
    batch_first: Optional[bool] = None  # None: not written to metadata (default false)
    is_causal: Optional[bool] = None
    average: Optional[bool] = None     # average_attn_weights; None: not written (default true)
    bias: bool = True
    kpm: bool = False                  # key_padding_mask
    mask: Optional[str] = None         # None | "float2d" | "bool3d" | "float2d_lower"
    grad_output: bool = False          # explicit random grad_output in the CASE file


CASES = [
    Case("causal_self", "causal self-attention (is_causal flag only, no attn_mask in the file)",
         E=8, H=2, L=5, N=2, is_causal=True, grad_output=True),
    Case("padding", "self-attention with a bool key_padding_mask (N, S), random positions",
         E=12, H=3, L=6, N=3, kpm=True),
    Case("causal_padding", "is_causal plus key_padding_mask (key 0 is never padded)",
         E=8, H=4, L=6, N=3, is_causal=True, kpm=True, grad_output=True),
    Case("float_mask", "2-d float additive attn_mask (L, S): finite values and some -inf",
         E=12, H=4, L=5, N=2, mask="float2d"),
    Case("bool_mask_3d", "3-d per-head bool attn_mask (N*H, L, S), row index n*H + h",
         E=8, H=2, L=4, S=6, N=3, self_attn=False, mask="bool3d", grad_output=True),
    Case("cross_attn", "cross-attention, L != S, distinct key and value",
         E=8, H=2, L=3, S=7, N=2, self_attn=False),
    Case("batch_first", "batch_first=true self-attention, (N, L, E) layout",
         E=12, H=3, L=5, N=3, batch_first=True, grad_output=True),
    Case("batch_first_cross_padding", "batch_first=true cross-attention with key_padding_mask",
         E=8, H=2, L=4, S=6, N=2, self_attn=False, batch_first=True, kpm=True),
    Case("seq_first", "batch_first=false written explicitly, (L, N, E) layout",
         E=8, H=2, L=4, N=3, batch_first=False, grad_output=True),
    Case("unbatched", "unbatched 2-d input (L, E) / (S, E); weights come back (L, S)",
         E=8, H=2, L=4, S=5, N=None, self_attn=False),
    Case("unbatched_causal_per_head", "unbatched, is_causal, per-head weights (H, L, S)",
         E=12, H=3, L=5, N=None, is_causal=True, average=False, grad_output=True),
    Case("avg_weights", "average_attn_weights=true written explicitly; weights (N, L, S)",
         E=8, H=2, L=6, N=2, average=True),
    Case("per_head_weights", "average_attn_weights=false; weights (N, H, L, S)",
         E=16, H=4, L=5, S=6, N=2, self_attn=False, average=False, grad_output=True),
    Case("no_bias", "bias=False module: no bias tensors in CASE, no bias grads in RESULT",
         E=8, H=2, L=5, S=4, N=2, self_attn=False, bias=False),
    Case("causal_float_mask", "is_causal combined with a 2-d float attn_mask (mask + causal)",
         E=8, H=2, L=5, N=2, is_causal=True, mask="float2d_lower", grad_output=True),
]


def _tf(b: bool) -> str:
    return "true" if b else "false"


def _rows_ok(masked: torch.Tensor) -> bool:
    """masked: bool (..., L, S), True = may not attend. No row may be fully masked."""
    return bool((~masked).any(dim=-1).all())


def build_case(c: Case) -> Dict[str, object]:
    """Draw the float64 CASE tensors, metadata and the mask handed to torch."""
    g = torch.Generator().manual_seed(zlib.crc32(c.name.encode()))
    f64 = torch.float64
    E, H, L = c.E, c.H, c.L
    S = c.S if c.S is not None else L
    assert E % H == 0 and 8 <= E <= 16 and 2 <= H <= 4 and L <= 7 and S <= 7
    assert not (c.self_attn and S != L)
    N = c.N

    def randn(*shape, scale=1.0):
        return torch.randn(*shape, generator=g, dtype=f64) * scale

    def rand(*shape):
        return torch.rand(*shape, generator=g, dtype=f64)

    def seq(length):
        if N is None:
            return (length, E)
        return (N, length, E) if c.batch_first else (length, N, E)

    t: Dict[str, torch.Tensor] = {}
    t["in_proj_weight"] = randn(3 * E, E, scale=1 / math.sqrt(E))
    t["out_proj.weight"] = randn(E, E, scale=1 / math.sqrt(E))
    if c.bias:
        t["in_proj_bias"] = randn(3 * E, scale=0.5)
        t["out_proj.bias"] = randn(E, scale=0.5)
    t["query"] = randn(*seq(L))
    if c.self_attn:
        t["key"] = t["query"].clone()
        t["value"] = t["query"].clone()
    else:
        t["key"] = randn(*seq(S))
        t["value"] = randn(*seq(S))

    # "not allowed" pattern, for checking that no row is fully masked: (Nb, Hb, L, S)
    Nb = 1 if N is None else N
    blocked = torch.zeros(Nb, H, L, S, dtype=torch.bool)
    causal = torch.triu(torch.ones(L, S, dtype=torch.bool), diagonal=1)
    torch_mask = None

    if c.mask == "float2d":
        m = randn(L, S)
        inf = rand(L, S) < 0.3
        for i in range(L):  # keep at least one finite entry per row
            if inf[i].all():
                inf[i, int(torch.randint(S, (1,), generator=g))] = False
        m[inf] = -math.inf
        assert inf.any(), "float2d mask should contain some -inf"
        t["attn_mask"] = m
        blocked |= inf
    elif c.mask == "float2d_lower":  # -inf only strictly below the diagonal: rows keep j == i
        m = randn(L, S)
        inf = (rand(L, S) < 0.3) & torch.tril(torch.ones(L, S, dtype=torch.bool), diagonal=-1)
        m[inf] = -math.inf
        assert inf.any()
        t["attn_mask"] = m
        blocked |= inf
    elif c.mask == "bool3d":
        assert N is not None
        m = rand(N * H, L, S) < 0.35
        for r in range(N * H):
            for i in range(L):
                if m[r, i].all():
                    m[r, i, int(torch.randint(S, (1,), generator=g))] = False
        assert m.any()
        t["attn_mask"] = m
        blocked |= m.view(N, H, L, S)
    else:
        assert c.mask is None

    if c.is_causal:
        blocked |= causal
        if "attn_mask" in t:
            m = t["attn_mask"]
            torch_mask = m | causal if m.dtype == torch.bool else m.masked_fill(causal, -math.inf)
        else:
            torch_mask = causal
    else:
        torch_mask = t.get("attn_mask")

    if c.kpm:
        assert N is not None, "torch wants a 1-d key_padding_mask for unbatched input"
        kpm = rand(N, S) < 0.35
        kpm[:, 0] = False          # key 0 stays visible: no fully masked row, even with causal
        if not kpm.any():
            kpm[0, S - 1] = True
        t["key_padding_mask"] = kpm
        blocked |= kpm.view(N, 1, 1, S)

    assert _rows_ok(blocked), f"{c.name}: a fully masked row"

    out_shape = (L, E) if N is None else ((N, L, E) if c.batch_first else (L, N, E))
    if c.grad_output:
        t["grad_output"] = randn(*out_shape)

    meta = {"num_heads": str(H)}
    if c.batch_first is not None:
        meta["batch_first"] = _tf(c.batch_first)
    if c.is_causal is not None:
        meta["is_causal"] = _tf(c.is_causal)
    if c.average is not None:
        meta["average_attn_weights"] = _tf(c.average)
    return {"tensors": t, "meta": meta, "torch_mask": torch_mask}


def run_torch(c: Case, t: Dict[str, torch.Tensor], torch_mask, dtype) -> Dict[str, torch.Tensor]:
    """Run torch.nn.MultiheadAttention on the CASE tensors cast to `dtype`."""
    E, H = c.E, c.H
    cast = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in t.items()}
    if torch_mask is not None and torch_mask.is_floating_point():
        torch_mask = torch_mask.to(dtype)

    mha = nn.MultiheadAttention(E, H, bias=c.bias, batch_first=bool(c.batch_first), dtype=dtype)
    mha.train()  # dropout is 0; training mode also rules out torch's inference fast path
    with torch.no_grad():
        mha.in_proj_weight.copy_(cast["in_proj_weight"])
        mha.out_proj.weight.copy_(cast["out_proj.weight"])
        if c.bias:
            mha.in_proj_bias.copy_(cast["in_proj_bias"])
            mha.out_proj.bias.copy_(cast["out_proj.bias"])
        else:
            assert mha.in_proj_bias is None and mha.out_proj.bias is None

    # separate leaves, even when the values are equal (self-attention)
    q = cast["query"].clone().requires_grad_(True)
    k = cast["key"].clone().requires_grad_(True)
    v = cast["value"].clone().requires_grad_(True)
    out, w = mha(q, k, v, key_padding_mask=cast.get("key_padding_mask"), need_weights=True,
                 attn_mask=torch_mask,
                 average_attn_weights=c.average if c.average is not None else True)
    if "grad_output" in cast:
        out.backward(cast["grad_output"])
    else:
        out.sum().backward()

    r = {"output": out.detach(), "attn_weights": w.detach(),
         "grad.query": q.grad, "grad.key": k.grad, "grad.value": v.grad,
         "grad.in_proj_weight": mha.in_proj_weight.grad,
         "grad.out_proj.weight": mha.out_proj.weight.grad}
    if c.bias:
        r["grad.in_proj_bias"] = mha.in_proj_bias.grad
        r["grad.out_proj.bias"] = mha.out_proj.bias.grad
    for name, x in r.items():
        assert x is not None and x.dtype == dtype, (c.name, name)
        assert torch.isfinite(x).all(), f"{c.name}: non-finite values in {name}"
    return r


def _reference(t: Dict[str, torch.Tensor], meta: Dict[str, str]):
    """Output and weights straight from the contract (float64), independent of nn.MHA."""
    H = int(meta["num_heads"])
    bf = meta.get("batch_first", "false") == "true"
    causal = meta.get("is_causal", "false") == "true"
    avg = meta.get("average_attn_weights", "true") == "true"
    q, k, v = t["query"], t["key"], t["value"]
    unbatched = q.dim() == 2
    if unbatched:
        q, k, v = q[None], k[None], v[None]
    elif not bf:
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
    N, L, E = q.shape
    S = k.shape[1]
    d = E // H
    W, Wo = t["in_proj_weight"], t["out_proj.weight"]
    b = t.get("in_proj_bias", torch.zeros(3 * E, dtype=q.dtype))
    bo = t.get("out_proj.bias", torch.zeros(E, dtype=q.dtype))
    Q = q @ W[:E].T + b[:E]
    K = k @ W[E:2 * E].T + b[E:2 * E]
    V = v @ W[2 * E:].T + b[2 * E:]
    outs = torch.zeros(N, L, E, dtype=q.dtype)
    weights = torch.zeros(N, H, L, S, dtype=q.dtype)
    for n in range(N):
        for h in range(H):
            sl = slice(h * d, (h + 1) * d)
            s = Q[n, :, sl] @ K[n, :, sl].T / math.sqrt(d)
            m = t.get("attn_mask")
            if m is not None:
                mm = m if m.dim() == 2 else m[n * H + h]
                s = s.masked_fill(mm, -math.inf) if mm.dtype == torch.bool else s + mm
            if causal:
                s = s.masked_fill(torch.triu(torch.ones(L, S, dtype=torch.bool), 1), -math.inf)
            if "key_padding_mask" in t:
                s = s.masked_fill(t["key_padding_mask"][n][None, :], -math.inf)
            p = torch.softmax(s, dim=-1)
            weights[n, h] = p
            outs[n, :, sl] = p @ V[n, :, sl]
    outs = outs @ Wo.T + bo
    weights = weights.mean(dim=1) if avg else weights
    if unbatched:
        return outs[0], weights[0]
    return (outs if bf else outs.transpose(0, 1)), weights


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT, help="output folder (default: %(default)s)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    for f in os.listdir(args.out):  # drop stale fixtures from renamed or removed cases
        if f.endswith(".safetensors") or f == "cases.json":
            os.remove(os.path.join(args.out, f))

    names = [c.name for c in CASES]
    assert len(set(names)) == len(names)
    index = []
    total = 0
    print(f"torch {torch.__version__}; writing to {args.out}")
    for c in CASES:
        built = build_case(c)
        t64, meta, tmask = built["tensors"], built["meta"], built["torch_mask"]

        ref_out, ref_w = _reference(t64, meta)
        r64 = run_torch(c, t64, tmask, torch.float64)
        assert torch.allclose(r64["output"], ref_out, rtol=1e-12, atol=1e-12), c.name
        assert torch.allclose(r64["attn_weights"], ref_w, rtol=1e-12, atol=1e-12), c.name

        r32 = run_torch(c, t64, tmask, torch.float32)
        worst = max(((r32[n].double() - r64[n]).abs().max() /
                     (1 + r64[n].abs().max())).item() for n in r64)

        for tag, dtype, res in (("f64", torch.float64, r64), ("f32", torch.float32, r32)):
            case_t = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in t64.items()}
            stem = f"{c.name}_{tag}"
            case_file, exp_file = f"{stem}.case.safetensors", f"{stem}.expected.safetensors"
            n1 = safetensors_io.save_file(case_t, os.path.join(args.out, case_file), meta)
            n2 = safetensors_io.save_file(
                res, os.path.join(args.out, exp_file),
                {"case": stem, "generator": "tests/parity/make_mha_fixtures.py",
                 "torch_version": torch.__version__})
            total += n1 + n2
            index.append({
                "name": stem,
                "case": c.name,
                "dtype": "F64" if dtype == torch.float64 else "F32",
                "description": c.desc,
                "case_file": case_file,
                "expected_file": exp_file,
                "metadata": meta,
                "case_tensors": {k: {"dtype": safetensors_io.dtype_tag(v), "shape": list(v.shape)}
                                 for k, v in sorted(case_t.items())},
                "grad_output": "grad_output" in case_t,
                "result_tensors": sorted(res),
                "result_shapes": {k: list(v.shape) for k, v in sorted(res.items())},
            })
        print(f"  {c.name:28s} weights {str(list(r64['attn_weights'].shape)):16s} "
              f"grad_output={'yes' if c.grad_output else 'sum':3s} f32-vs-f64 {worst:.1e}")

    with open(os.path.join(args.out, "cases.json"), "w") as f:  # one case per line
        f.write('{"generator": "tests/parity/make_mha_fixtures.py",\n')
        f.write(f' "torch_version": {json.dumps(torch.__version__)},\n "cases": [\n')
        f.write(",\n".join("  " + json.dumps(e, separators=(",", ":")) for e in index))
        f.write("\n ]\n}\n")
    total += os.path.getsize(os.path.join(args.out, "cases.json"))
    print(f"{len(index)} cases ({2 * len(index)} safetensors files + cases.json), {total} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
