#!/usr/bin/env python3
"""Generate the second-order parity fixtures (tests/parity/fixtures/hvp/) for
tests/nn/test_second_order.cpp: Hessian-vector products of a MultiheadAttention loss and of a tiny
TransformerLM loss, in float64, from torch.autograd.grad(..., create_graph=True).

    /work/venv-torch/bin/python tests/parity/make_hvp_fixtures.py [--out DIR]

For a scalar loss L(θ) of the differentiated tensors θ_i and random directions u_i, each file
holds param.<name> (θ), u.<name>, grad.<name> = dL/dθ and hvp.<name> = (H u) = d<dL/dθ, u>/dθ,
plus `loss` (0-d) and the case's fixed tensors; __metadata__ has `case` and `torch_version`.

Cases:
  mha_float_mask_padding  MHA (E 8, H 2, L 4, S 5, N 2, batch_first=False), key_padding_mask and
                          a float attn_mask that is itself differentiated (a learned bias);
                          loss = <output, w_out> + <averaged weights, w_attn>
  mha_causal_per_head     self-attention (query = key = value, one tensor), causal bool mask,
                          per-head weights; loss = <output, w_out> + <weights, w_attn>
  lm_tiny                 twin.TransformerLM (vocab 7, 1 layer, 2 heads, width 8, block 6) on a
                          (2, 5) batch; loss = its mean next-token cross-entropy; θ = every parameter.
                          The weights are drawn with std 0.5 (not nanoGPT's 0.02), and the LayerNorm
                          and bias parameters are random too, so that no second derivative is tiny.
Each case is seeded from a CRC32 of its name.
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
import zlib

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import safetensors_io  # noqa: E402
import twin  # noqa: E402

DEFAULT_OUT = os.path.join(HERE, "fixtures", "hvp")
F64 = torch.float64


def hvp_tensors(loss_fn, params: dict, g: torch.Generator) -> dict:
    names = sorted(params)
    theta = [params[n] for n in names]
    loss = loss_fn()
    grads = torch.autograd.grad(loss, theta, create_graph=True)
    u = [torch.randn(p.shape, generator=g, dtype=F64) for p in theta]
    # A gradient that does not depend on θ (e.g. of a bias the loss is linear in) adds nothing.
    live = [(gi, ui) for gi, ui in zip(grads, u) if gi.requires_grad]
    hvp = torch.autograd.grad([gi for gi, _ in live], theta, [ui for _, ui in live], allow_unused=True)
    hvp = [torch.zeros_like(p) if h is None else h for p, h in zip(theta, hvp)]
    out = {"loss": loss.detach()}
    for n, p, gi, ui, hi in zip(names, theta, grads, u, hvp):
        out[f"param.{n}"] = p.detach().clone()
        out[f"u.{n}"] = ui
        out[f"grad.{n}"] = gi.detach()
        out[f"hvp.{n}"] = hi.detach()
    return out


def mha_case(name: str, self_attention: bool) -> dict:
    g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    E, H, L, S, N = 8, 2, 4, 5, 2
    if self_attention:
        S = L
    mha = torch.nn.MultiheadAttention(E, H, bias=True, batch_first=False, dtype=F64)
    params = {}
    with torch.no_grad():
        for pname, p in mha.named_parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=F64) * 0.5)
    for pname, p in mha.named_parameters():
        params[pname] = p
    q = torch.randn(L, N, E, generator=g, dtype=F64).requires_grad_()
    params["query"] = q
    if self_attention:
        k = v = q
    else:
        k = torch.randn(S, N, E, generator=g, dtype=F64).requires_grad_()
        v = torch.randn(S, N, E, generator=g, dtype=F64).requires_grad_()
        params["key"], params["value"] = k, v
    fixed = {}
    if self_attention:
        attn_mask = torch.triu(torch.ones(L, S), 1).bool()
        kpm = None
        average = False
    else:
        attn_mask = torch.randn(L, S, generator=g, dtype=F64).requires_grad_()
        params["attn_mask"] = attn_mask
        kpm = torch.zeros(N, S, dtype=torch.bool)
        kpm[0, S - 1] = True
        kpm[1, S - 2:] = True
        fixed["key_padding_mask"] = kpm
        average = True
    out_shape = (L, N, E)
    w_shape = (N, L, S) if average else (N, H, L, S)
    w_out = torch.randn(out_shape, generator=g, dtype=F64)
    w_attn = torch.randn(w_shape, generator=g, dtype=F64)
    fixed.update({"w_out": w_out, "w_attn": w_attn})

    def loss_fn():
        # torch wants both masks of one type: the bool padding mask as a float one (−inf = ignore)
        kpm_t = None if kpm is None else torch.zeros(kpm.shape, dtype=F64).masked_fill(kpm, float("-inf"))
        o, w = mha(q, k, v, key_padding_mask=kpm_t, need_weights=True, attn_mask=attn_mask,
                   average_attn_weights=average)
        return (o * w_out).sum() + (w * w_attn).sum()

    out = hvp_tensors(loss_fn, params, g)
    out.update(fixed)
    return out


def lm_case(name: str) -> dict:
    g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
    cfg = twin.GPTConfig(vocab_size=7, n_layer=1, n_head=2, n_embd=8, block_size=6, dropout=0.0)
    model = twin.TransformerLM(cfg).to(F64)
    model.train()  # dropout 0; keeps MultiheadAttention off its inference fast path
    with torch.no_grad():
        for pname, p in model.named_parameters():
            base = 1.0 if (pname.endswith("weight") and (".ln" in pname or pname.startswith("ln_f"))) else 0.0
            p.copy_(base + 0.5 * torch.randn(p.shape, generator=g, dtype=F64))
    ids = torch.randint(0, cfg.vocab_size, (2, 5), generator=g)
    targets = torch.randint(0, cfg.vocab_size, (2, 5), generator=g)
    params = dict(model.named_parameters())
    # The twin asks MHA for no weights, so torch would take its fused attention kernel, which
    # has no double backward: the plain math kernel computes the same function.
    from torch.nn.attention import SDPBackend, sdpa_kernel
    with sdpa_kernel(SDPBackend.MATH):
        out = hvp_tensors(lambda: model(ids, targets), params, g)
    out.update({"ids": ids, "targets": targets})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=DEFAULT_OUT)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for old in glob.glob(os.path.join(args.out, "*.safetensors")):
        os.remove(old)
    cases = {
        "mha_float_mask_padding": lambda n: mha_case(n, self_attention=False),
        "mha_causal_per_head": lambda n: mha_case(n, self_attention=True),
        "lm_tiny": lm_case,
    }
    for name, make in cases.items():
        tensors = make(name)
        for k, val in tensors.items():
            if val.is_floating_point():
                assert torch.isfinite(val).all(), (name, k)
        safetensors_io.save_file(tensors, os.path.join(args.out, f"{name}.safetensors"),
                                 {"case": name, "torch_version": torch.__version__})
        print(f"{name}: loss {tensors['loss'].item():.17g}")


if __name__ == "__main__":
    main()
