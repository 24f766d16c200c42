#!/usr/bin/env python3
"""The speedrun recipe (configs/speedrun.toml, docs/speedrun.md) in PyTorch: attograd's
`--model modern` (models/modern_lm.h) trained as `attograd train --config configs/speedrun.toml`
trains it, so that `make bench` can run both on the same cores for the same wall time.

    x = tok_emb(idx)                                        (B, T, E), no position table
    for each block:  x = x + attn(norm(x))                  q, k = rope(norm(q)), rope(norm(k)) per head
                     x = x + proj(relu(fc(norm(x)))²)
    logits = cap · tanh(lm_head(norm(x)) / cap)             untied head; cap 0: no soft-cap

and, when asked, modded-nanogpt's two parts as attograd's TransformerLM has them
(models/gpt_config.h): --value-embeds N, N more token tables whose lookup is mixed into the values
of the first N and the last N layers (table i in layers i and layers-N+i), v = lv·v + le·ve with
(lv, le) the row value_lambdas[r] (r the layer's rank among those layers; 0.5 at first); and
--unet-skips, the outputs of the first layers//2 blocks added in reverse order to the inputs of
the last layers//2, block layers-1-i getting skip_weights[layers//2-1-i]·(output of block i)
(the weights 1 at first; an odd count's middle block has none); and --x0-residual, each block's
input (after its skip) mixed with the embedding x0, x = x_lambda·x + x0_lambda·x0 (1 and 0 at first).

norm is RMSNorm without a gain (F.rms_norm, eps = the dtype's machine epsilon) or with one
(--norm-gain); attention out_proj, mlp.proj and lm_head start at zero. Matrices of the blocks
train with Muon (torch.optim.Muon's rule; its Newton-Schulz in the parameters' dtype, see
--muon), the embedding, the head and any gains with AdamW. --weight-decay (attograd's key, 0 by
default) decays as attograd's does: the Muon matrices, the head and the looked-up tables, each at
its own group's rate, W ← W·(1 − lr·weight_decay); gains and lambdas never. The learning rate
follows warmup-stable-decay: linear warmup, constant, linear decay to 0 over the last
--cooldown fraction of the steps. The global gradient norm is clipped to --grad-clip first, as
attograd does (its default 1).

The recipe's other schedules, each off by default, as attograd's (docs/speedrun.md):
--muon-momentum-warmup W: Muon's momentum (param_groups[i]["momentum"]) rises linearly from
--muon-momentum-start at step 0 to --muon-momentum at step W; --block-warmup W: the training
batches' sequence length rises from --block-start to --block at step W, in multiples of 8;
--batch-warmup W: the batch rises from --batch-start to --batch at step W. Evaluation is always
at --block.

--config configs/speedrun.toml takes the recipe from attograd's own file (flags after it win), so
that `make bench` (bench/compare.py) trains one recipe on both sides; a key of that file the twin
cannot follow is an error.

Evaluation: the whole validation split (the last 10% of the corpus) in windows of block_size,
in order, every target once (attograd's data::eval_windows); training batches are random
windows (nanoGPT's get_batch).

--time-budget SECONDS: plans the step count again after every step, from the steps timed (the
first, a warm-up, not; each per token, as a share of a full step under a warmup) and the final
evaluation's timing, so that training and the final
evaluation end at the budget less a 0.75% spare, the decay following the plan (attograd's
policy, train/time_budget.h); the result line carries the last plan. One JSON object per line:
{"step", "train_loss", "lr_scale", "elapsed_s", "cpu_s"} every --log-every steps, and
{"result": ..., "val_loss", "iters", "elapsed_s", "cpu_s", ...} at the end.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- the model ----------------------------------------------------------------------------------


def rope_tables(T: int, hd: int, base: float, offset: int = 0, dtype=torch.float32):
    """cos, sin (T, hd/2): angle (offset + t) · base^(-2i/hd) for pair i = (x[i], x[i + hd/2])."""
    inv_freq = base ** (-torch.arange(0, hd // 2, dtype=torch.float64) * 2.0 / hd)
    ang = torch.arange(offset, offset + T, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return ang.cos().to(dtype), ang.sin().to(dtype)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x (..., T, hd): (x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin), halves of the last dim."""
    h = x.shape[-1] // 2
    x1, x2 = x[..., :h], x[..., h:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, gain: bool):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim)) if gain else None
        self.dim = dim

    def forward(self, x):
        return F.rms_norm(x, (self.dim,), self.weight)


class Attention(nn.Module):
    def __init__(self, E: int, H: int, qk_norm: bool, rope_base: float):
        super().__init__()
        self.H, self.hd, self.qk_norm, self.rope_base = H, E // H, qk_norm, rope_base
        self.in_proj_weight = nn.Parameter(torch.empty(3 * E, E))
        self.out_proj = nn.Linear(E, E, bias=False)

    def forward(self, x, ve=None, lambdas=None):
        B, T, E = x.shape
        qkv = F.linear(x, self.in_proj_weight).view(B, T, 3, self.H, self.hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]  # (B, H, T, hd)
        if ve is not None:  # value embedding (B, T, E), mixed in per head
            v = v * lambdas[0] + ve.view(B, T, self.H, self.hd).transpose(1, 2) * lambdas[1]
        if self.qk_norm:
            q, k = F.rms_norm(q, (self.hd,)), F.rms_norm(k, (self.hd,))
        cos, sin = rope_tables(T, self.hd, self.rope_base, dtype=x.dtype)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out_proj(y.transpose(1, 2).reshape(B, T, E))


class MLP(nn.Module):
    def __init__(self, E: int, hidden: int):
        super().__init__()
        self.fc = nn.Linear(E, hidden, bias=False)
        self.proj = nn.Linear(hidden, E, bias=False)

    def forward(self, x):
        return self.proj(F.relu(self.fc(x)).square())


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln1 = RMSNorm(c.embd, c.norm_gain)
        self.attn = Attention(c.embd, c.heads, c.qk_norm, c.rope_base)
        self.ln2 = RMSNorm(c.embd, c.norm_gain)
        self.mlp = MLP(c.embd, c.mlp_ratio * c.embd)
        if getattr(c, "x0_residual", False):
            self.x_lambda = nn.Parameter(torch.ones(1))
            self.x0_lambda = nn.Parameter(torch.zeros(1))

    def forward(self, x, ve=None, lambdas=None):
        x = x + self.attn(self.ln1(x), ve, lambdas)
        return x + self.mlp(self.ln2(x))


class ModernLM(nn.Module):
    def __init__(self, c, vocab: int):
        super().__init__()
        self.c = c
        self.tok_emb = nn.Embedding(vocab, c.embd)
        self.blocks = nn.ModuleList([Block(c) for _ in range(c.layers)])
        self.ln_f = RMSNorm(c.embd, c.norm_gain)
        self.lm_head = nn.Linear(c.embd, vocab, bias=False)
        self.n_ve = getattr(c, "value_embeds", 0)
        self.n_skips = c.layers // 2 if getattr(c, "unet_skips", False) else 0
        if not 0 <= self.n_ve <= c.layers // 2:
            raise ValueError(f"value_embeds must be in [0, layers//2] = [0, {c.layers // 2}], got {self.n_ve}")
        if getattr(c, "unet_skips", False) and c.layers < 2:
            raise ValueError("unet_skips needs at least 2 layers")
        if self.n_ve:
            self.value_embeds = nn.ModuleList([nn.Embedding(vocab, c.embd) for _ in range(self.n_ve)])  # N(0, 1)
            self.value_lambdas = nn.Parameter(torch.full((2 * self.n_ve, 2), 0.5))
        if self.n_skips:
            self.skip_weights = nn.Parameter(torch.ones(self.n_skips))
        with torch.no_grad():
            nn.init.normal_(self.tok_emb.weight, 0.0, 1.0)  # as nn.Embedding; normalised before use
            for b in self.blocks:
                bound = math.sqrt(3.0 / c.embd)  # uniform with variance 1/fan_in
                b.attn.in_proj_weight.uniform_(-bound, bound)
                b.mlp.fc.weight.uniform_(-bound, bound)
                b.attn.out_proj.weight.zero_()
                b.mlp.proj.weight.zero_()
            self.lm_head.weight.zero_()

    def value_table_of(self, layer: int) -> int:
        L, N = len(self.blocks), self.n_ve
        return layer if layer < N else layer - (L - N) if layer >= L - N else -1

    def forward(self, idx, targets=None):
        x = self.tok_emb(idx)
        ve = [e(idx) for e in self.value_embeds] if self.n_ve else []
        L, h, N = len(self.blocks), self.n_skips, self.n_ve
        kept, x0 = [], x
        for i, b in enumerate(self.blocks):
            if i >= L - h:
                x = x + kept[L - 1 - i] * self.skip_weights[i - (L - h)]
            if getattr(self.c, "x0_residual", False):
                x = x * b.x_lambda + x0 * b.x0_lambda
            k = self.value_table_of(i)
            x = b(x, ve[k], self.value_lambdas[i if i < N else N + k]) if k >= 0 else b(x)
            if i < h:
                kept.append(x)
        logits = self.lm_head(self.ln_f(x))
        if self.c.softcap > 0:
            logits = self.c.softcap * torch.tanh(logits / self.c.softcap)
        if targets is None:
            return logits
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


# ---- Muon ---------------------------------------------------------------------------------------


def zeropower_ns(G: torch.Tensor, steps: int = 5, eps: float = 1e-7) -> torch.Tensor:
    """torch.optim.Muon's Newton-Schulz, in G's dtype (torch's casts to bfloat16 first)."""
    a, b, c = 3.4445, -4.7750, 2.0315
    X = G.clone()
    if G.size(0) > G.size(1):
        X = X.T
    X = X / X.norm().clamp(min=eps)
    for _ in range(steps):
        A = X @ X.T
        Bm = torch.addmm(A, A, A, beta=b, alpha=c)
        X = torch.addmm(X, Bm, X, beta=a)
    return X.T if G.size(0) > G.size(1) else X


class Muon32(torch.optim.Optimizer):
    """torch.optim.Muon (torch 2.9+) with its Newton-Schulz in the parameters' dtype."""

    def __init__(self, params, lr=0.02, weight_decay=0.0, momentum=0.95, nesterov=True):
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov))

    @torch.no_grad()
    def step(self):
        for g in self.param_groups:
            for p in g["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if "momentum_buffer" not in st:
                    st["momentum_buffer"] = torch.zeros_like(p.grad)
                buf = st["momentum_buffer"]
                buf.lerp_(p.grad, 1 - g["momentum"])
                u = p.grad.lerp(buf, g["momentum"]) if g["nesterov"] else buf
                u = zeropower_ns(u)
                A, Bc = p.shape
                p.mul_(1 - g["lr"] * g["weight_decay"])
                p.add_(u, alpha=-g["lr"] * math.sqrt(max(1.0, A / Bc)))


# ---- data, schedule, evaluation -----------------------------------------------------------------


def load_corpus(path: str):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    vocab = sorted(set(text))
    index = {ch: i for i, ch in enumerate(vocab)}
    ids = torch.tensor([index[ch] for ch in text], dtype=torch.int64)
    n = int(0.9 * len(ids))
    return ids[:n], ids[n:], len(vocab)


def get_batch(ids, batch, block, gen):
    starts = torch.randint(0, len(ids) - block, (batch,), generator=gen)
    offs = torch.arange(block + 1)
    w = ids[starts[:, None] + offs[None, :]]
    return w[:, :-1], w[:, 1:]


BUDGET_SPARE = 0.0075  # the share of the budget left unplanned, as attograd's TimeBudget::kSpare (train/time_budget.h)
RECENT_STEPS = 16  # steps weigh 1/n into the step estimate up to n = 16, then 1/16 (TimeBudget::kRecentSteps)


class TimeBudget:
    """attograd's policy (train/time_budget.h): after each step, the steps done plus the nearest
    number of steps of the estimate that fits in what the budget less its spare leaves after the
    final evaluation, whose timing scales with the steps' time; at most the cap. The estimate is
    a full step's (per token): step it of share(it) of a full step's tokens counts as its time
    over its share, and is expected to take share(it) times the estimate (share is 1 from step
    full_from on)."""

    def __init__(self, budget_s: float, cap: int, full_from: int = 0, share=None):
        self.budget_s, self.cap, self.planned = budget_s, cap, cap
        self.timed, self.step_s, self.eval_s, self.eval_step_s = 0, 0.0, -1.0, 0.0
        self.full_from, self._share = full_from, share

    def share(self, it: int) -> float:
        return self._share(it) if it < self.full_from and self._share else 1.0

    def steps_that_fit(self, done: int, left: float) -> int:
        it = done
        while it < self.full_from and it < self.cap:
            d = self.step_s * self.share(it)
            if 0.5 * d > left:
                return it - done
            left -= d
            it += 1
        full = math.floor(left / self.step_s + 0.5) if left > 0 else 0
        return it - done + min(full, self.cap - it)

    def eval_estimate(self) -> float:
        if self.eval_s < 0:
            return 0.0
        return self.eval_s * (self.step_s / self.eval_step_s) if self.eval_step_s > 0 else self.eval_s

    def after_step(self, done: int, elapsed_s: float, step_s: float) -> int:
        if step_s >= 0:
            self.timed += 1
            full_step_s = step_s / self.share(done - 1) if done - 1 < self.full_from else step_s
            self.step_s += (full_step_s - self.step_s) / min(self.timed, RECENT_STEPS)
        if self.timed == 0 or self.step_s <= 0:
            self.planned = max(min(self.planned, self.cap), done)
            return self.planned
        left = self.budget_s * (1 - BUDGET_SPARE) - elapsed_s - self.eval_estimate()
        if done < self.full_from:  # steps of several sizes to come
            self.planned = min(self.cap, done + (self.steps_that_fit(done, left) if left > 0 else 0))
            return self.planned
        more = math.floor(left / self.step_s + 0.5) if left > 0 else 0
        self.planned = min(self.cap, max(done, done + more))
        return self.planned

    def set_eval_time(self, eval_s: float):
        self.eval_s, self.eval_step_s = max(0.0, eval_s), self.step_s


def decay_steps(cooldown: float, iters: int) -> int:
    """round(cooldown · iters), halves away from zero (attograd's llround; Python's round goes to even)."""
    return int(math.floor(cooldown * iters + 0.5))


def wsd(it: int, iters: int, warmup: int, cooldown: float, final: float = 0.0) -> float:
    """lr scale at step it: (it+1)/(warmup+1) during warmup, 1, then linear to `final` over the
    last round(cooldown·iters) steps (attograd's WarmupStableDecay)."""
    decay = decay_steps(cooldown, iters)
    if it < warmup:
        return (it + 1) / (warmup + 1)
    if it < iters - decay:
        return 1.0
    frac = (iters - it) / max(decay, 1)  # 1 -> 1/decay
    return final + (1.0 - final) * frac


def ramp(start: int, full: int, warmup: int, unit: int, it: int) -> int:
    """From start at step 0 to full at step warmup, linearly, rounded down to a multiple of unit,
    within [start, full] (attograd's train/step_shape.cpp)."""
    if warmup <= 0 or it >= warmup or start >= full:
        return full
    linear = start + (full - start) * it // warmup
    return min(max(linear - linear % unit, start), full)


def step_shape(it: int, a) -> tuple[int, int]:
    """(batch, block) of step it: --batch-warmup and --block-warmup (one process, no accumulation)."""
    return (ramp(a.batch_start, a.batch, a.batch_warmup, 1, it), ramp(a.block_start, a.block, a.block_warmup, 8, it))


def muon_momentum(it: int, a) -> float:
    """Muon's momentum at step it: start + (end - start) * min(it / W, 1) (modded-nanogpt's rule)."""
    if a.muon_momentum_warmup <= 0:
        return a.muon_momentum
    frac = min(it / a.muon_momentum_warmup, 1.0)
    return (1.0 - frac) * a.muon_momentum_start + frac * a.muon_momentum


def make_optimizers(model, a):
    """attograd's muon row: Muon for the blocks' matrices; AdamW for the tables only looked up
    (tok_emb, value_embeds.*) at the embedding's rate and the head at --lr, both decayed by
    --weight-decay, and the rest (gains, value_lambdas, skip_weights, the x0 lambdas) at --lr
    without decay. Returns (the Muon part, both optimizers), each group's base_lr kept for the
    schedules."""
    mats = [p_ for n, p_ in model.named_parameters() if n.startswith("blocks.") and p_.dim() == 2]
    opt_m = (Muon32 if a.muon == "float32" else torch.optim.Muon)(mats, lr=a.muon_lr, weight_decay=a.weight_decay,
                                                                  momentum=muon_momentum(0, a), nesterov=True)
    tables = [p_ for n, p_ in model.named_parameters() if n == "tok_emb.weight" or n.startswith("value_embeds.")]
    groups = [dict(params=tables, lr=a.emb_lr, weight_decay=a.weight_decay),
              dict(params=[model.lm_head.weight], lr=a.adam_lr, weight_decay=a.weight_decay)]
    taken = {id(p_) for p_ in mats + tables + [model.lm_head.weight]}
    rest = [p_ for p_ in model.parameters() if id(p_) not in taken]
    if rest:
        groups.append(dict(params=rest, lr=a.adam_lr, weight_decay=0.0))
    opt_a = torch.optim.AdamW(groups, betas=(a.beta1, a.beta2), eps=1e-8)  # attograd's eps
    opts = [opt_m, opt_a]
    for o in opts:
        for g in o.param_groups:
            g["base_lr"] = g["lr"]
    return opt_m, opts


def set_schedules(opt_m, opts, it: int, total: int, a) -> float:
    """Before step it of total: every group's lr at its base_lr times the WSD factor, and Muon's
    momentum as the warmup has it (as a scheduler sets param_groups). Returns the factor."""
    s = wsd(it, total, a.warmup, a.cooldown)
    for o in opts:
        for g in o.param_groups:
            g["lr"] = g["base_lr"] * s
    for g in opt_m.param_groups:
        g["momentum"] = muon_momentum(it, a)
    return s


def train_step(run, model, opts, x, y, grad_clip: float) -> float:
    """One update on (x, y): forward, backward, the global norm clipped, every optimizer stepped."""
    loss = run(x, y)
    loss.backward()
    if grad_clip > 0:
        torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    for o in opts:
        o.step()
    model.zero_grad(set_to_none=True)
    return float(loss.detach())


@torch.no_grad()
def eval_all(model, val, block, batch):
    """Mean loss over every target of the split, windows 0, block, 2 block, ... in order."""
    model.eval()
    n = len(val)
    full = (n - 1) // block
    total, count = 0.0, 0
    for b0 in range(0, full, batch):
        rows = range(b0, min(full, b0 + batch))
        x = torch.stack([val[r * block:(r + 1) * block] for r in rows])
        y = torch.stack([val[r * block + 1:(r + 1) * block + 1] for r in rows])
        total += float(model(x, y)) * x.numel()
        count += x.numel()
    rest = n - 1 - full * block
    if rest > 0:
        s = full * block
        total += float(model(val[s:s + rest][None], val[s + 1:s + rest + 1][None])) * rest
        count += rest
    model.train()
    return total / count


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


# ---- the recipe from attograd's configuration file -----------------------------------------------

# attograd's key -> this script's flag; one learning rate for every AdamW group, as attograd has
TOML_TO_FLAG = {"layers": "layers", "heads": "heads", "embd": "embd", "block": "block", "softcap": "softcap",
                "batch": "batch", "iters": "iters", "warmup": "warmup", "cooldown": "cooldown",
                "muon-lr": "muon_lr", "lr": ("adam_lr", "emb_lr"), "muon-momentum": "muon_momentum",
                "muon-momentum-warmup": "muon_momentum_warmup", "muon-momentum-start": "muon_momentum_start",
                "block-warmup": "block_warmup", "block-start": "block_start", "batch-warmup": "batch_warmup",
                "batch-start": "batch_start", "beta1": "beta1", "beta2": "beta2", "weight-decay": "weight_decay",
                "seed": "seed", "log-every": "log_every", "grad-clip": "grad_clip",
                "value-embeds": "value_embeds", "unet-skips": "unet_skips", "x0-residual": "x0_residual"}
# keys that must hold this value, because the twin implements only that (anything else: an error)
TOML_FIXED = {"model": "modern", "optimizer": "muon", "schedule": "wsd", "min-lr": 0.0, "dropout": 0.0}
# keys about attograd's own logging and evaluation cadence, which do not change the recipe
TOML_IGNORED = {"eval-iters", "eval-every", "sample-tokens", "time-budget", "threads", "out", "data"}


def recipe_from_toml(path: str) -> dict:
    """The twin's defaults from attograd's flat TOML (keys are attograd train's flags), so that both
    sides train the recipe of one file; a key the twin cannot follow is an error, never ignored."""
    import tomllib
    with open(path, "rb") as f:
        cfg = tomllib.load(f)
    out: dict = {}
    for key, value in cfg.items():
        if key == "embed-lr":
            continue  # below: it overrides what "lr" gives the embedding
        if key in TOML_FIXED:
            if value != TOML_FIXED[key]:
                raise ValueError(f"{key} = {value!r}: the PyTorch twin implements only {TOML_FIXED[key]!r}")
        elif key in TOML_TO_FLAG:
            dests = TOML_TO_FLAG[key]
            for d in dests if isinstance(dests, tuple) else (dests,):
                out[d] = value
        elif key not in TOML_IGNORED:
            raise ValueError(f"'{key}' is not a key the PyTorch twin knows")
    if cfg.get("embed-lr", 0) > 0:  # the embedding's own rate (0: lr's)
        out["emb_lr"] = cfg["embed-lr"]
    return out


# ---- training -----------------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--embd", type=int, default=128)
    p.add_argument("--block", type=int, default=64)
    p.add_argument("--mlp-ratio", type=int, default=4)
    p.add_argument("--no-qk-norm", dest="qk_norm", action="store_false")
    p.add_argument("--norm-gain", action="store_true")
    p.add_argument("--rope-base", type=float, default=10000.0)
    p.add_argument("--softcap", type=float, default=30.0)
    p.add_argument("--value-embeds", type=int, default=0,
                   help="value embeddings of the first and last N layers (attograd's --value-embeds; 0: off)")
    p.add_argument("--unet-skips", action="store_true", help="U-net skips between the blocks (attograd's --unet-skips)")
    p.add_argument("--x0-residual", action="store_true",
                   help="each block's input mixed with the embedding (attograd's --x0-residual)")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--iters", type=int, default=1000)
    p.add_argument("--time-budget", type=float, default=0.0)
    p.add_argument("--warmup", type=int, default=0)
    p.add_argument("--cooldown", type=float, default=0.4)
    p.add_argument("--muon-lr", type=float, default=0.02)
    p.add_argument("--weight-decay", type=float, default=0.0,
                   help="decoupled weight decay of the Muon matrices, the head and the tables "
                        "(attograd's --weight-decay)")
    p.add_argument("--muon-momentum", type=float, default=0.95)
    p.add_argument("--muon-momentum-warmup", type=float, default=0.0,
                   help="Muon's momentum rises linearly from --muon-momentum-start to --muon-momentum over this many steps (0: off)")
    p.add_argument("--muon-momentum-start", type=float, default=0.85)
    p.add_argument("--block-warmup", type=int, default=0,
                   help="the training sequence length rises from --block-start to --block over this many steps, in multiples of 8 (0: off)")
    p.add_argument("--block-start", type=int, default=32)
    p.add_argument("--batch-warmup", type=int, default=0,
                   help="the training batch rises from --batch-start to --batch over this many steps (0: off)")
    p.add_argument("--batch-start", type=int, default=4)
    p.add_argument("--adam-lr", type=float, default=0.008, help="the head's")
    p.add_argument("--emb-lr", type=float, default=0.05)
    p.add_argument("--beta1", type=float, default=0.9)
    p.add_argument("--beta2", type=float, default=0.95)
    p.add_argument("--grad-clip", type=float, default=1.0,
                   help="clip the global gradient norm to this before the update (0: off); attograd's default")
    p.add_argument("--muon", choices=["float32", "torch"], default="float32",
                   help="float32: torch.optim.Muon's rule with Newton-Schulz in float32; torch: torch.optim.Muon (bfloat16)")
    p.add_argument("--eval-every", type=int, default=0, help="also evaluate every N steps (0: at the end only)")
    p.add_argument("--eval-batch", type=int, default=64)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=1337)
    p.add_argument("--compile", action="store_true")
    p.add_argument("--config", default=None,
                   help="take the recipe from attograd's TOML (configs/speedrun.toml); flags given after it win")
    pre, _ = p.parse_known_args(argv)
    if pre.config:
        try:
            p.set_defaults(**recipe_from_toml(pre.config))
        except (OSError, ValueError) as e:
            p.error(f"--config {pre.config}: {e}")
    a = p.parse_args(argv)
    if a.block_warmup > 0 and a.block_start > a.block:
        p.error(f"--block-start {a.block_start} must be at most --block {a.block}")
    if a.batch_warmup > 0 and a.batch_start > a.batch:
        p.error(f"--batch-start {a.batch_start} must be at most --batch {a.batch}")
    t0, c0 = time.perf_counter(), cpu_s()
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    train_ids, val_ids, vocab = load_corpus(a.data)
    model = ModernLM(a, vocab)
    opt_m, opts = make_optimizers(model, a)
    run = torch.compile(model) if a.compile else model
    gen = torch.Generator().manual_seed(a.seed)
    iters = a.iters
    n_evals = 0
    steps_s = 0.0  # the training steps' own time (data, forward, backward, update)

    def step(it, total):
        nonlocal steps_s
        t_step = time.perf_counter()
        s = set_schedules(opt_m, opts, it, total, a)
        x, y = get_batch(train_ids, *step_shape(it, a), gen)
        loss = train_step(run, model, opts, x, y, a.grad_clip)
        steps_s += time.perf_counter() - t_step
        return loss, s

    def share(it):  # step it's tokens over a full step's
        b, t = step_shape(it, a)
        return (b * t) / (a.batch * a.block)

    it = 0
    budget = (TimeBudget(a.time_budget, a.iters, max(a.block_warmup, a.batch_warmup), share)
              if a.time_budget > 0 else None)
    mark = time.perf_counter()
    while it < iters:
        loss, s = step(it, iters)
        it += 1
        if budget:
            now = time.perf_counter()
            iters = budget.after_step(it, now - t0, now - mark if it > 1 else -1.0)
            if budget.timed > 0 and budget.eval_s < 0:
                # the final evaluation timed once, on an eighth of the split, scaled
                t_eval0 = time.perf_counter()
                eval_all(model, val_ids[: len(val_ids) // 8], a.block, a.eval_batch)
                budget.set_eval_time(8 * (time.perf_counter() - t_eval0))
                iters = budget.after_step(it, time.perf_counter() - t0, -1.0)
                print(json.dumps({"step_ms": round(1e3 * budget.step_s, 2), "eval_s": round(budget.eval_s, 2),
                                  "iters": iters}), flush=True)
            mark = time.perf_counter()
        if a.log_every and (it % a.log_every == 0 or it == iters):
            print(json.dumps({"step": it, "train_loss": round(loss, 4), "lr_scale": round(s, 4),
                              "elapsed_s": round(time.perf_counter() - t0, 2), "cpu_s": round(cpu_s() - c0, 2)}),
                  flush=True)
        if a.eval_every and it % a.eval_every == 0 and it < iters:
            v = eval_all(model, val_ids, a.block, a.eval_batch)
            n_evals += 1
            # train_s: the steps' own time, no start-up or evaluation (bench/time_to_loss.py)
            print(json.dumps({"step": it, "val_loss": round(v, 4), "elapsed_s": round(time.perf_counter() - t0, 2),
                              "train_s": round(steps_s, 3)}), flush=True)
            mark = time.perf_counter()  # an evaluation is not a step's time
    v = eval_all(model, val_ids, a.block, a.eval_batch)
    print(json.dumps({"result": "torch_speedrun", "torch": torch.__version__, "val_loss": round(v, 4), "iters": iters,
                      "train_s": round(steps_s, 3),
                      "params": sum(p_.numel() for p_ in model.parameters()),
                      "elapsed_s": round(time.perf_counter() - t0, 2), "cpu_s": round(cpu_s() - c0, 2),
                      "config": {k: v_ for k, v_ in vars(a).items() if k != "data"}}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
