"""nanoGPT's model (karpathy/nanoGPT, model.py) and its training step (train.py), restated in our
own words: a LayerNorm whose bias can be left out, through F.layer_norm; causal self-attention
with q, k and v split off one fused projection and viewed as heads (views of strided pieces),
through F.scaled_dot_product_attention when torch has it or written out with a registered causal
mask; a GELU MLP; the token embedding tied to the output layer; N(0, 0.02) init with the smaller
residual projections; the parameter count without the position table; shrinking the context of
a built model; AdamW over two parameter groups (matrices decayed, vectors not, and the `fused`
probe through inspect); the training loop's warmup-then-cosine learning rate, gradient
accumulation, clipping and zero_grad(set_to_none=True); and sampling with a temperature and a
top-k cut. Tiny: 2 layers, 2 heads, 16 wide, block 16."""

import inspect
import math
from dataclasses import dataclass

from . import (corpus, cut_to_top_k, masked_attention, merge_heads, normal_init, scale_residual_init, split_heads,
               vocabulary)


@dataclass
class Settings:
    context: int = 1024  # GPT-2's sizes by default
    vocab: int = 50304
    layers: int = 12
    heads: int = 12
    width: int = 768
    p_drop: float = 0.0
    bias: bool = True
    fast_attention: object = None  # None: whenever torch has scaled_dot_product_attention


def definitions(torch):
    nn = torch.nn
    F = torch.nn.functional

    class Norm(nn.Module):
        """Layer normalisation with a gain and an optional shift (nn.LayerNorm's bias cannot be
        left out in older torch)."""

        def __init__(self, n, bias):
            super().__init__()
            self.gain = nn.Parameter(torch.ones(n))
            self.shift = nn.Parameter(torch.zeros(n)) if bias else None

        def forward(self, x):
            return F.layer_norm(x, self.gain.shape, self.gain, self.shift, 1e-5)

    class FusedAttention(nn.Module):
        def __init__(self, s):
            super().__init__()
            assert s.width % s.heads == 0, "the width must split evenly into heads"
            self.qkv = nn.Linear(s.width, 3 * s.width, bias=s.bias)  # every head's q, k and v at once
            self.to_residual = nn.Linear(s.width, s.width, bias=s.bias)
            self.drop_weights = nn.Dropout(s.p_drop)
            self.drop_out = nn.Dropout(s.p_drop)
            self.heads, self.width, self.p_drop = s.heads, s.width, s.p_drop
            self.fast = hasattr(F, "scaled_dot_product_attention")
            if s.fast_attention is not None:
                self.fast = self.fast and s.fast_attention
            if not self.fast:  # the written-out attention needs the mask as a buffer
                n = s.context
                self.register_buffer("mask", torch.tril(torch.ones(n, n)).view(1, 1, n, n))

        def forward(self, x):
            q, k, v = split_heads(self.qkv(x), self.width, self.heads)  # (B, heads, T, hs) each
            if self.fast:
                p = self.p_drop if self.training else 0
                mixed = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=p, is_causal=True)
            else:
                mixed = masked_attention(torch, q, k, v, self.mask, self.drop_weights)
            return self.drop_out(self.to_residual(merge_heads(mixed)))  # (B, T, C)

    class GeluMLP(nn.Module):
        def __init__(self, s):
            super().__init__()
            self.widen = nn.Linear(s.width, 4 * s.width, bias=s.bias)
            self.act = nn.GELU()
            self.to_residual = nn.Linear(4 * s.width, s.width, bias=s.bias)
            self.drop = nn.Dropout(s.p_drop)

        def forward(self, x):
            return self.drop(self.to_residual(self.act(self.widen(x))))

    class Layer(nn.Module):
        def __init__(self, s):
            super().__init__()
            self.norm_a = Norm(s.width, s.bias)
            self.attend = FusedAttention(s)
            self.norm_m = Norm(s.width, s.bias)
            self.mlp = GeluMLP(s)

        def forward(self, x):
            x = x + self.attend(self.norm_a(x))
            return x + self.mlp(self.norm_m(x))

    class TiedGPT(nn.Module):
        def __init__(self, s, say=print):
            super().__init__()
            assert s.vocab is not None and s.context is not None
            self.settings = s
            self.body = nn.ModuleDict(dict(
                embed_tokens=nn.Embedding(s.vocab, s.width),
                embed_positions=nn.Embedding(s.context, s.width),
                dropout=nn.Dropout(s.p_drop),
                layers=nn.ModuleList([Layer(s) for _ in range(s.layers)]),
                final_norm=Norm(s.width, s.bias),
            ))
            self.readout = nn.Linear(s.width, s.vocab, bias=False)
            # one matrix embeds the tokens and scores them (GPT-2's weight tying)
            self.body.embed_tokens.weight = self.readout.weight
            self.apply(lambda module: normal_init(torch, module))
            scale_residual_init(torch, self, s.layers)
            say(f"{self.count_weights() / 1e6:.2f}M parameters")

        def count_weights(self, without_positions=True):
            n = sum(p.numel() for p in self.parameters())  # the tied matrix once
            return n - self.body.embed_positions.weight.numel() if without_positions else n

        def forward(self, ids, targets=None):
            b, t = ids.size()
            assert t <= self.settings.context, f"{t} ids do not fit the context of {self.settings.context}"
            where = torch.arange(0, t, dtype=torch.long, device=ids.device)  # (t,)
            body = self.body
            h = body.dropout(body.embed_tokens(ids) + body.embed_positions(where))  # (b, t, C)
            for layer in body.layers:
                h = layer(h)
            h = body.final_norm(h)
            if targets is None:
                # sampling needs the last position's scores only; [-1] as a list keeps the time dim
                return self.readout(h[:, [-1], :]), None
            scores = self.readout(h)  # (b, t, vocab)
            return scores, F.cross_entropy(scores.view(-1, scores.size(-1)), targets.view(-1), ignore_index=-1)

        def shrink_context(self, n):
            """Use a built model with a shorter context: the position table and the masks cut."""
            assert n <= self.settings.context
            self.settings.context = n
            table = self.body.embed_positions
            table.weight = nn.Parameter(table.weight[:n])
            for layer in self.body.layers:
                if hasattr(layer.attend, "mask"):
                    layer.attend.mask = layer.attend.mask[:, :, :n, :n]

        def make_optimizer(self, weight_decay, lr, betas, device_type, say=print):
            trainable = [p for p in self.parameters() if p.requires_grad]
            matrices = [p for p in trainable if p.dim() >= 2]  # matmul and embedding weights: decayed
            vectors = [p for p in trainable if p.dim() < 2]  # biases and norm gains: not
            for label, group in (("decayed", matrices), ("not decayed", vectors)):
                say(f"{label}: {len(group)} tensors, {sum(p.numel() for p in group):,} numbers")
            groups = [{"params": matrices, "weight_decay": weight_decay}, {"params": vectors, "weight_decay": 0.0}]
            fused = "fused" in inspect.signature(torch.optim.AdamW).parameters and device_type == "cuda"
            opt = torch.optim.AdamW(groups, lr=lr, betas=betas, **({"fused": True} if fused else {}))
            say(f"fused AdamW: {fused}")
            return opt

        def flops_fraction(self, seqs_per_step, seconds):
            """The fraction of an A100's bfloat16 peak (312 TFLOPS) a step of seqs_per_step
            sequences in `seconds` would use: 6 flops per weight and token, plus attention's."""
            s = self.settings
            per_token = 6 * self.count_weights() + 12 * s.layers * s.heads * (s.width // s.heads) * s.context
            return per_token * s.context * seqs_per_step / seconds / 312e12

        @torch.no_grad()
        def continue_ids(self, ids, n_new, temperature=1.0, top_k=None):
            context = self.settings.context
            for _ in range(n_new):
                seen = ids if ids.size(1) <= context else ids[:, -context:]
                scores, _ = self(seen)
                scores = scores[:, -1, :] / temperature  # (B, vocab)
                if top_k is not None:
                    cut_to_top_k(torch, scores, min(top_k, scores.size(-1)))
                drawn = torch.multinomial(F.softmax(scores, dim=-1), num_samples=1)  # (B, 1)
                ids = torch.cat((ids, drawn), dim=1)
            return ids

    return TiedGPT


def program(torch, draw_ix, say, init_state=None, fast_attention=None, bias=True, batch_size=4, block_size=16,
            steps=6, micro_steps=2, lr=1e-3, min_lr=1e-4, warmup=2, decay_until=6, clip=1.0, sample_tokens=0,
            top_k=None, sample_seed=1337):
    """The model built and trained for a few steps as nanoGPT's train.py does (on the CPU, float32)."""
    TiedGPT = definitions(torch)
    text = corpus()
    alphabet, index_of, _ = vocabulary(text)
    ids = torch.tensor([index_of[ch] for ch in text], dtype=torch.long)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    device_type = "cuda" if "cuda" in device else "cpu"

    def next_batch():
        starts = draw_ix(torch, len(ids) - block_size, batch_size)
        inputs = torch.stack([ids[s:s + block_size] for s in starts])
        targets = torch.stack([ids[s + 1:s + 1 + block_size] for s in starts])
        return inputs.to(device), targets.to(device)

    def lr_at(step):
        if step < warmup:  # rising linearly
            return lr * (step + 1) / (warmup + 1)
        if step > decay_until:
            return min_lr
        progress = (step - warmup) / (decay_until - warmup)  # 0 -> 1 over the decay
        return min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (lr - min_lr)

    settings = Settings(context=block_size, vocab=len(alphabet), layers=2, heads=2, width=16, p_drop=0.0, bias=bias,
                        fast_attention=fast_attention)
    model = TiedGPT(settings, say)
    if init_state is not None:
        model.load_state_dict(init_state)
    model.to(device)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    opt = model.make_optimizer(0.1, lr, (0.9, 0.99), device_type, say)
    losses, norms, lrs = [], [], []
    inputs, targets = next_batch()
    for step in range(steps):
        rate = lr_at(step)
        for group in opt.param_groups:
            group["lr"] = rate
        for _ in range(micro_steps):  # the gradients of micro_steps batches add up to one step's
            _, loss = model(inputs, targets)
            loss = loss / micro_steps
            inputs, targets = next_batch()  # drawn before backward, as nanoGPT overlaps the two
            loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), clip)))
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item() * micro_steps)
        lrs.append(rate)
    model.eval()
    with torch.no_grad():
        last_logits, _ = model(inputs)
    out = {"model": model, "initial": initial, "losses": losses, "norms": norms, "lrs": lrs,
           "last_logits": last_logits, "num_params": model.count_weights(), "mfu": model.flops_fraction(batch_size, 1.0)}
    if sample_tokens:
        torch.manual_seed(sample_seed)
        out["sample"] = model.continue_ids(inputs[:1, :4], sample_tokens, temperature=0.8, top_k=top_k)[0].tolist()
    model.shrink_context(8)
    with torch.no_grad():
        out["cropped_logits"], _ = model(inputs[:, :8])
    return out
