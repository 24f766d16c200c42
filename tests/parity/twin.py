#!/usr/bin/python3
"""A PyTorch twin of attograd's TransformerLM (models/transformer_lm.h), for parity checks and
for the PyTorch side of the benchmark.

The twin has the same architecture and the same parameter names as attograd, so an attograd
`model.safetensors` loads into it with `load_state_dict(strict=True)` and vice versa:

    x = tok_emb(idx) + pos_emb(0..T-1)
    for each block:  x = x + attn(ln1(x))       nn.MultiheadAttention, batch_first, causal mask
                     x = x + mlp(ln2(x))        fc: Linear(E, 4E) -> GELU (erf) -> proj: Linear(4E, E)
    logits = ln_f(x) @ tok_emb.weight^T         tied head, no bias, no separate state_dict key

Functions:
    load_attograd_checkpoint(path) -> (model, vocab)    model in eval mode, float32
    save_attograd_checkpoint(model, vocab, path)        the same file format attograd writes
    encode(text, vocab) / decode(ids, vocab)
    eval_loss(model, ids)                               `attograd eval`'s windows and mean
    train(text, cfg, ...)                               the `attograd train` loop

Command line (Debian's Python has torch 1.13 on this machine; the venv /work/torch2 has 2.x):
    /usr/bin/python3 tests/parity/twin.py eval --checkpoint RUN_OR_FILE --text-file FILE
    /usr/bin/python3 tests/parity/twin.py logits --checkpoint RUN_OR_FILE --text-file FILE [--out F]
    /usr/bin/python3 tests/parity/twin.py train --data FILE --out DIR [--iters N ...]

Works with torch 1.13 and 2.x. Needs numpy (for safetensors_io).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402


# ---- the model ----------------------------------------------------------------------------------


@dataclass
class GPTConfig:
    vocab_size: int = 65
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    block_size: int = 64
    dropout: float = 0.0

    def validate(self) -> None:
        for name in ("vocab_size", "n_layer", "n_head", "n_embd", "block_size"):
            if getattr(self, name) <= 0:
                raise ValueError(f"GPTConfig: {name} must be positive, got {getattr(self, name)}")
        if self.n_embd % self.n_head:
            raise ValueError(f"GPTConfig: n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")
        if not 0 <= self.dropout < 1:
            raise ValueError("GPTConfig: dropout must be in [0, 1)")


class MLP(nn.Module):
    def __init__(self, n_embd: int, dropout: float):
        super().__init__()
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.proj = nn.Linear(4 * n_embd, n_embd)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.proj(F.gelu(self.fc(x))))  # exact (erf) GELU


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.n_embd, eps=1e-5)
        self.attn = nn.MultiheadAttention(cfg.n_embd, cfg.n_head, dropout=cfg.dropout, bias=True, batch_first=True)
        self.ln2 = nn.LayerNorm(cfg.n_embd, eps=1e-5)
        self.mlp = MLP(cfg.n_embd, cfg.dropout)
        self.resid_drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, causal_mask: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        a = self.attn(h, h, h, attn_mask=causal_mask, need_weights=False)[0]
        x = x + self.resid_drop(a)
        return x + self.mlp(self.ln2(x))


class TransformerLM(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        cfg.validate()
        self.cfg = cfg
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos_emb = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd, eps=1e-5)
        # True above the diagonal = key j > query i may not be attended (MHA's bool convention).
        # Not persistent: it is not a parameter and must stay out of state_dict().
        mask = torch.triu(torch.ones(cfg.block_size, cfg.block_size), 1).bool()
        self.register_buffer("causal_mask", mask, persistent=False)
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self, generator: Optional[torch.Generator] = None) -> None:
        """nanoGPT's init: N(0, 0.02) for embeddings and matrices (in_proj_weight included),
        residual projections (attn.out_proj.weight, mlp.proj.weight) at 0.02/sqrt(2 n_layer),
        zero biases, LayerNorm weight 1 and bias 0."""
        resid_std = 0.02 / math.sqrt(2.0 * self.cfg.n_layer)
        for name, p in self.named_parameters():
            if ".ln1." in name or ".ln2." in name or name.startswith("ln_f."):
                if name.endswith("weight"):
                    p.fill_(1.0)
                else:
                    p.zero_()
            elif p.dim() >= 2:
                resid = name.endswith("attn.out_proj.weight") or name.endswith("mlp.proj.weight")
                p.normal_(0.0, resid_std if resid else 0.02, generator=generator)
            else:
                p.zero_()

    def forward(self, idx: torch.Tensor, targets: Optional[torch.Tensor] = None) -> torch.Tensor:
        """idx int64 (B, T) -> logits (B, T, V); with targets (B, T), the mean cross-entropy."""
        T = idx.shape[1]
        if T > self.cfg.block_size:
            raise ValueError(f"sequence of {T} positions exceeds block_size {self.cfg.block_size}")
        pos = torch.arange(T, device=idx.device)
        x = self.drop(self.tok_emb(idx) + self.pos_emb(pos))
        mask = self.causal_mask[:T, :T]
        for block in self.blocks:
            x = block(x, mask)
        logits = F.linear(self.ln_f(x), self.tok_emb.weight)  # tied head
        if targets is None:
            return logits
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


# ---- attograd's checkpoint format ---------------------------------------------------------------


def _checkpoint_file(path: str) -> str:
    return os.path.join(path, "model.safetensors") if os.path.isdir(path) else path


def load_attograd_checkpoint(path: str, dtype: torch.dtype = torch.float32) -> Tuple[TransformerLM, List[str]]:
    """Reads an attograd model.safetensors (or a run folder holding one). Returns the twin, in
    eval mode, with every parameter loaded strictly, and the vocabulary (characters in id order)."""
    tensors, meta = safetensors_io.load_file(_checkpoint_file(path))
    vocab = json.loads(meta["vocab"])
    if not isinstance(vocab, list) or not all(isinstance(c, str) and len(c) == 1 for c in vocab):
        raise ValueError(f"{path}: __metadata__ 'vocab' is not a JSON array of single characters")
    cfg = GPTConfig(vocab_size=len(vocab), n_layer=int(meta["n_layer"]), n_head=int(meta["n_head"]),
                    n_embd=int(meta["n_embd"]), block_size=int(meta["block_size"]))
    model = TransformerLM(cfg)
    model.load_state_dict({k: torch.from_numpy(v) for k, v in tensors.items()}, strict=True)
    model.to(dtype)
    model.eval()
    return model, vocab


def save_attograd_checkpoint(model: TransformerLM, vocab: Sequence[str], path: str) -> None:
    """Writes the file `attograd sample/eval` read: F32 tensors under the state_dict names and
    the config plus vocabulary in __metadata__."""
    c = model.cfg
    if len(vocab) != c.vocab_size:
        raise ValueError(f"vocab has {len(vocab)} characters but the model's vocab_size is {c.vocab_size}")
    meta = {"format": "attograd.TransformerLM", "n_layer": str(c.n_layer), "n_head": str(c.n_head),
            "n_embd": str(c.n_embd), "block_size": str(c.block_size),
            "vocab": json.dumps(list(vocab), ensure_ascii=False)}
    tensors = {k: v.detach().to(torch.float32).cpu() for k, v in model.state_dict().items()}
    safetensors_io.save_file(tensors, path, meta)


def make_vocab(text: str) -> List[str]:
    """attograd's CharTokenizer: the sorted distinct code points."""
    return sorted(set(text))


def encode(text: str, vocab: Sequence[str]) -> List[int]:
    index = {c: i for i, c in enumerate(vocab)}
    out = []
    for pos, ch in enumerate(text):
        if ch not in index:
            raise ValueError(f"character {ch!r} (U+{ord(ch):04X}) at position {pos} is not in the vocabulary")
        out.append(index[ch])
    return out


def decode(ids: Sequence[int], vocab: Sequence[str]) -> str:
    return "".join(vocab[i] for i in ids)


# ---- evaluation ---------------------------------------------------------------------------------


def eval_windows(n_tokens: int, block: int) -> List[Tuple[int, int]]:
    """attograd's data::eval_windows: starts 0, block, 2 block, ...; length min(block, n-1-i)."""
    return [(i, min(block, n_tokens - 1 - i)) for i in range(0, max(n_tokens - 1, 0), block)]


@torch.no_grad()
def eval_loss(model: TransformerLM, ids: Sequence[int]) -> float:
    """Mean next-character cross-entropy over every predicted character, window by window as
    `attograd eval` does (each window's mean loss weighted by its length, summed in float64)."""
    if len(ids) < 2:
        raise ValueError("needs at least 2 tokens to predict one")
    was_training = model.training
    model.eval()
    t = torch.as_tensor(list(ids), dtype=torch.int64)
    total, count = 0.0, 0
    for start, length in eval_windows(len(t), model.cfg.block_size):
        x = t[start:start + length].unsqueeze(0)
        y = t[start + 1:start + length + 1].unsqueeze(0)
        total += float(model(x, y)) * length
        count += length
    model.train(was_training)
    return total / count


# ---- training -----------------------------------------------------------------------------------


def cosine_lr(it: int, max_lr: float, min_lr: float, warmup: int, decay_iters: int) -> float:
    """attograd's cosine schedule (train/schedules/cosine.cpp) at the peak max_lr: linear warmup
    (it+1)/(warmup+1), cosine to min_lr at decay_iters."""
    if it < warmup:
        return max_lr * (it + 1) / (warmup + 1)
    if it > decay_iters or decay_iters <= warmup:
        return min_lr
    ratio = (it - warmup) / (decay_iters - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (max_lr - min_lr)


def make_optimizer(model: nn.Module, lr: float, betas=(0.9, 0.99), weight_decay: float = 0.1,
                   eps: float = 1e-8) -> torch.optim.AdamW:
    """AdamW with decoupled weight decay on parameters with >= 2 dims only."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=eps)


def get_batch(ids: torch.Tensor, batch: int, block: int, gen: torch.Generator) -> Tuple[torch.Tensor, torch.Tensor]:
    """Random windows: each row starts uniformly in [0, len - block)."""
    starts = torch.randint(0, len(ids) - block, (batch,), generator=gen)
    x = torch.stack([ids[i:i + block] for i in starts.tolist()])
    y = torch.stack([ids[i + 1:i + block + 1] for i in starts.tolist()])
    return x, y


@dataclass
class TrainArgs:
    batch_size: int = 12
    iters: int = 2000
    lr: float = 1e-3
    min_lr: float = 1e-4
    warmup: int = 100
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.99
    grad_clip: float = 1.0  # 0 disables clipping
    eval_every: int = 250
    eval_iters: int = 20
    log_every: int = 10
    seed: int = 1337


@dataclass
class TrainResult:
    model: TransformerLM
    vocab: List[str]
    history: List[Dict[str, float]] = field(default_factory=list)  # metrics.jsonl-like records
    seconds: float = 0.0


@torch.no_grad()
def estimate_loss(model: TransformerLM, ids: torch.Tensor, batch: int, n: int, gen: torch.Generator) -> float:
    model.eval()
    total = sum(float(model(*get_batch(ids, batch, model.cfg.block_size, gen))) for _ in range(n))
    model.train()
    return total / n


def train(text: str, cfg: GPTConfig, args: TrainArgs = TrainArgs(), log: Callable[[str], None] = print) -> TrainResult:
    """The `attograd train` loop in PyTorch: 90/10 split, random-window batches, AdamW
    (decay on matrices only), warmup + cosine schedule, global-norm clipping. Evaluates (mean
    loss over eval_iters batches of each split) at every eval_every iterations and at the end;
    makes exactly `iters` updates. Random streams differ from attograd's, so losses agree only
    statistically."""
    vocab = make_vocab(text)
    cfg = GPTConfig(**{**cfg.__dict__, "vocab_size": len(vocab)})
    ids = torch.tensor(encode(text, vocab), dtype=torch.int64)
    n_train = int(0.9 * len(ids))
    train_ids, val_ids = ids[:n_train], ids[n_train:]
    if min(len(train_ids), len(val_ids)) < cfg.block_size + 1:
        raise ValueError(f"each split needs at least block_size + 1 = {cfg.block_size + 1} characters")

    torch.manual_seed(args.seed)
    model = TransformerLM(cfg)
    model.train()
    opt = make_optimizer(model, args.lr, (args.beta1, args.beta2), args.weight_decay)
    batch_gen = torch.Generator().manual_seed(args.seed + 1)
    eval_gen = torch.Generator().manual_seed(args.seed + 2)
    result = TrainResult(model, vocab)
    t0 = time.perf_counter()
    for it in range(args.iters + 1):
        lr = cosine_lr(min(it, args.iters), args.lr, args.min_lr, args.warmup, args.iters)
        if it % args.eval_every == 0 or it == args.iters:
            tl = estimate_loss(model, train_ids, args.batch_size, args.eval_iters, eval_gen)
            vl = estimate_loss(model, val_ids, args.batch_size, args.eval_iters, eval_gen)
            result.history.append({"iter": it, "train_loss": tl, "val_loss": vl, "lr": lr,
                                   "elapsed_s": time.perf_counter() - t0})
            log(f"eval  iter {it:5d}  train {tl:.4f}  val {vl:.4f}")
        if it == args.iters:
            break
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = get_batch(train_ids, args.batch_size, cfg.block_size, batch_gen)
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if args.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.grad_clip)
        opt.step()
        if (it + 1) % args.log_every == 0 or it + 1 == args.iters:
            log(f"iter {it + 1:5d}/{args.iters}  loss {loss.item():.4f}  lr {lr:.3e}")
    result.seconds = time.perf_counter() - t0
    model.eval()
    return result


# ---- command line -------------------------------------------------------------------------------


def _read_text(path: str) -> str:
    with open(path, "rb") as f:
        return f.read().decode("utf-8")


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("eval", help="mean next-character loss of a text under an attograd checkpoint")
    e.add_argument("--checkpoint", required=True)
    e.add_argument("--text-file", required=True)
    e.add_argument("--float64", action="store_true", help="evaluate the twin in float64")
    lg = sub.add_parser("logits", help="logits of the first block of a text; optionally saved as safetensors")
    lg.add_argument("--checkpoint", required=True)
    lg.add_argument("--text-file", required=True)
    lg.add_argument("--out")
    t = sub.add_parser("train", help="train the twin like `attograd train`; writes DIR/model.safetensors")
    t.add_argument("--data", required=True)
    t.add_argument("--out", required=True)
    d, ta = GPTConfig(), TrainArgs()
    t.add_argument("--layers", type=int, default=d.n_layer)
    t.add_argument("--heads", type=int, default=d.n_head)
    t.add_argument("--embd", type=int, default=d.n_embd)
    t.add_argument("--block", type=int, default=d.block_size)
    t.add_argument("--dropout", type=float, default=d.dropout)
    t.add_argument("--batch", dest="batch_size", type=int, default=ta.batch_size)
    for name in ("iters", "warmup", "eval_every", "eval_iters", "log_every", "seed"):
        t.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(ta, name))
    for name in ("lr", "min_lr", "weight_decay", "beta1", "beta2", "grad_clip"):
        t.add_argument("--" + name.replace("_", "-"), type=float, default=getattr(ta, name))
    t.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    a = ap.parse_args(argv)

    if a.cmd == "eval":
        model, vocab = load_attograd_checkpoint(a.checkpoint, torch.float64 if a.float64 else torch.float32)
        ids = encode(_read_text(a.text_file), vocab)
        loss = eval_loss(model, ids)
        print(f"loss {loss:.6f}")
        print(f"loss_repr {loss!r}")
        print(f"bits per character {loss / math.log(2):.6f} ({len(ids) - 1} characters predicted)")
    elif a.cmd == "logits":
        model, vocab = load_attograd_checkpoint(a.checkpoint)
        ids = encode(_read_text(a.text_file), vocab)[:model.cfg.block_size]
        with torch.no_grad():
            logits = model(torch.tensor([ids]))
        print(f"logits {tuple(logits.shape)}  first row {logits[0, 0, :5].tolist()}")
        if a.out:
            safetensors_io.save_file({"ids": torch.tensor([ids]), "logits": logits}, a.out)
    else:
        if a.threads > 0:
            torch.set_num_threads(a.threads)
        cfg = GPTConfig(n_layer=a.layers, n_head=a.heads, n_embd=a.embd, block_size=a.block, dropout=a.dropout)
        targs = TrainArgs(**{k: getattr(a, k) for k in TrainArgs.__dataclass_fields__})
        res = train(_read_text(a.data), cfg, targs)
        os.makedirs(a.out, exist_ok=True)
        save_attograd_checkpoint(res.model, res.vocab, os.path.join(a.out, "model.safetensors"))
        with open(os.path.join(a.out, "metrics.jsonl"), "w") as f:
            for rec in res.history:
                f.write(json.dumps(rec) + "\n")
        print(f"done: {targs.iters} iters in {res.seconds:.1f}s, val loss {res.history[-1]['val_loss']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
