"""minGPT's model (karpathy/minGPT, mingpt/model.py) and its Trainer's loop (mingpt/trainer.py),
restated in our own words: a settings bag, the tanh approximation of GELU written with torch.pow,
causal self-attention over q, k, v split off one fused projection (viewed as heads) with a
registered mask, layers whose MLP is a ModuleDict called through a lambda, an init that also
resets the LayerNorms, an AdamW whose decay and no-decay groups are sorted out by module type
(named_modules × named_parameters), the Trainer's step with clipping and a callback, and
continuation greedy (topk with k=1) or sampled (multinomial after a top-k cut). Tiny: 2 layers,
2 heads, 16 wide, block 16, no dropout (dropout draws from torch's generator)."""

import math

from . import (choose_next, corpus, masked_attention, merge_heads, normal_init, scale_residual_init, split_heads,
               vocabulary)


class Options:
    """Named settings, as attributes; `merge` overwrites some from a dict."""

    def __init__(self, **settings):
        self.__dict__.update(settings)

    def merge(self, settings):
        self.__dict__.update(settings)

    def as_dict(self):
        return {k: v.as_dict() if isinstance(v, Options) else v for k, v in self.__dict__.items()}


PRESETS = {  # minGPT's model types, by name
    "gpt-mini": dict(layers=6, heads=6, width=192),
    "gpt-micro": dict(layers=4, heads=4, width=128),
    "gpt-nano": dict(layers=3, heads=3, width=48),
}


def definitions(torch):
    nn = torch.nn
    F = torch.nn.functional

    class TanhGELU(nn.Module):
        """GELU by its tanh approximation (as BERT and OpenAI's GPT compute it), the cube through
        torch.pow."""

        def forward(self, x):
            inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))
            return 0.5 * x * (1.0 + torch.tanh(inner))

    class Attention(nn.Module):
        def __init__(self, o):
            super().__init__()
            assert o.width % o.heads == 0, "the width must split evenly into heads"
            self.qkv = nn.Linear(o.width, 3 * o.width)
            self.to_residual = nn.Linear(o.width, o.width)
            self.drop_weights = nn.Dropout(o.p_attn)
            self.drop_out = nn.Dropout(o.p_resid)
            n = o.context
            self.register_buffer("mask", torch.tril(torch.ones(n, n)).view(1, 1, n, n))
            self.heads, self.width = o.heads, o.width

        def forward(self, x):
            q, k, v = split_heads(self.qkv(x), self.width, self.heads)
            mixed = masked_attention(torch, q, k, v, self.mask, self.drop_weights)  # (B, heads, T, hs)
            return self.drop_out(self.to_residual(merge_heads(mixed)))

    class Layer(nn.Module):
        def __init__(self, o):
            super().__init__()
            self.norm_a = nn.LayerNorm(o.width)
            self.attend = Attention(o)
            self.norm_m = nn.LayerNorm(o.width)
            self.mlp = nn.ModuleDict(dict(
                widen=nn.Linear(o.width, 4 * o.width),
                to_residual=nn.Linear(4 * o.width, o.width),
                act=TanhGELU(),
                drop=nn.Dropout(o.p_resid),
            ))
            parts = self.mlp  # the MLP's order of application lives in this closure, not in a module
            self.run_mlp = lambda x: parts.drop(parts.to_residual(parts.act(parts.widen(x))))

        def forward(self, x):
            x = x + self.attend(self.norm_a(x))
            return x + self.run_mlp(self.norm_m(x))

    class CharGPT(nn.Module):
        @staticmethod
        def defaults():
            return Options(preset="gpt", layers=None, heads=None, width=None, vocab=None, context=None,
                           p_embd=0.1, p_resid=0.1, p_attn=0.1)

        def __init__(self, o, say=print):
            super().__init__()
            assert o.vocab is not None and o.context is not None
            self.context = o.context
            by_preset = o.preset is not None
            by_sizes = None not in (o.layers, o.heads, o.width)
            assert by_preset != by_sizes, "give a preset or the three sizes, not both"
            if by_preset:
                o.merge(PRESETS[o.preset])
            self.body = nn.ModuleDict(dict(
                embed_tokens=nn.Embedding(o.vocab, o.width),
                embed_positions=nn.Embedding(o.context, o.width),
                dropout=nn.Dropout(o.p_embd),
                layers=nn.ModuleList([Layer(o) for _ in range(o.layers)]),
                final_norm=nn.LayerNorm(o.width),
            ))
            self.readout = nn.Linear(o.width, o.vocab, bias=False)
            self.apply(self._reset)
            scale_residual_init(torch, self, o.layers)
            say(f"{sum(p.numel() for p in self.body.parameters()) / 1e6:.2f}M parameters in the body")

        @staticmethod
        def _reset(module):
            normal_init(torch, module)
            if isinstance(module, nn.LayerNorm):
                nn.init.zeros_(module.bias)
                nn.init.ones_(module.weight)

        def make_optimizer(self, t):
            decayed, undecayed = set(), set()
            for module_name, module in self.named_modules():
                for name, _ in module.named_parameters():  # a module's own and its children's
                    full = f"{module_name}.{name}" if module_name else name
                    if name.endswith("bias") or (name.endswith("weight")
                                                 and isinstance(module, (nn.LayerNorm, nn.Embedding))):
                        undecayed.add(full)
                    elif name.endswith("weight") and isinstance(module, nn.Linear):
                        decayed.add(full)
            by_name = dict(self.named_parameters())
            assert not decayed & undecayed, f"in both groups: {decayed & undecayed}"
            assert not by_name.keys() - (decayed | undecayed), f"in no group: {by_name.keys() - (decayed | undecayed)}"
            groups = [{"params": [by_name[n] for n in sorted(decayed)], "weight_decay": t.weight_decay},
                      {"params": [by_name[n] for n in sorted(undecayed)], "weight_decay": 0.0}]
            return torch.optim.AdamW(groups, lr=t.lr, betas=t.betas)

        def forward(self, ids, targets=None):
            b, t = ids.size()
            assert t <= self.context, f"{t} ids do not fit the context of {self.context}"
            where = torch.arange(0, t, dtype=torch.long, device=ids.device).unsqueeze(0)  # (1, t)
            body = self.body
            h = body.dropout(body.embed_tokens(ids) + body.embed_positions(where))  # (b, t, C)
            for layer in body.layers:
                h = layer(h)
            scores = self.readout(body.final_norm(h))  # (b, t, vocab)
            if targets is None:
                return scores, None
            return scores, F.cross_entropy(scores.view(-1, scores.size(-1)), targets.view(-1), ignore_index=-1)

        @torch.no_grad()
        def continue_ids(self, ids, n_new, temperature=1.0, sample=False, top_k=None):
            for _ in range(n_new):
                seen = ids if ids.size(1) <= self.context else ids[:, -self.context:]
                scores, _ = self(seen)
                chosen = choose_next(torch, scores[:, -1, :], temperature, top_k, sample)  # (B, 1)
                ids = torch.cat((ids, chosen), dim=1)
            return ids

    return CharGPT


def program(torch, draw_ix, say, init_state=None, batch_size=4, block_size=16, max_iters=6, greedy_tokens=14,
            sample_tokens=0, top_k=3, sample_seed=1337):
    """A character GPT trained by minGPT's Trainer loop (its chargpt project's setup, smaller)."""
    CharGPT = definitions(torch)
    text = corpus()
    alphabet, index_of, _ = vocabulary(text)
    ids = [index_of[ch] for ch in text]

    class Windows:
        """Item i: the block_size ids from i, and the block_size ids from i + 1."""

        def __len__(self):
            return len(ids) - block_size

        def __getitem__(self, i):
            span = ids[i:i + block_size + 1]
            return torch.tensor(span[:-1], dtype=torch.long), torch.tensor(span[1:], dtype=torch.long)

    windows = Windows()

    def next_batch():  # as the Trainer's DataLoader over a RandomSampler would hand them out
        pairs = [windows[int(i)] for i in draw_ix(torch, len(windows), batch_size)]
        return torch.stack([x for x, _ in pairs]), torch.stack([y for _, y in pairs])

    options = CharGPT.defaults()
    options.merge(dict(preset=None, layers=2, heads=2, width=16, vocab=len(alphabet), context=block_size,
                       p_embd=0.0, p_resid=0.0, p_attn=0.0))
    model = CharGPT(options, say)
    if init_state is not None:
        model.load_state_dict(init_state)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    training = Options(max_iters=max_iters, batch_size=batch_size, lr=5e-4, betas=(0.9, 0.95), weight_decay=0.1,
                       clip=1.0)

    # what the Trainer's run() does
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = model.to(device)
    say("training on", device)
    opt = model.make_optimizer(training)
    losses = []
    after_step = [lambda state: losses.append(state["loss"].item())]  # the Trainer's callbacks
    model.train()
    step = 0
    while training.max_iters is None or step < training.max_iters:
        inputs, targets = (t.to(device) for t in next_batch())
        _, loss = model(inputs, targets)
        model.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), training.clip)
        opt.step()
        for callback in after_step:
            callback({"loss": loss, "step": step})
        step += 1

    model.eval()
    start = torch.tensor([[index_of[ch] for ch in "THE "]], dtype=torch.long)
    out = {"model": model, "initial": initial, "losses": losses,
           "greedy": model.continue_ids(start, greedy_tokens)[0].tolist(),
           "decay_groups": [len(g["params"]) for g in opt.param_groups]}
    if sample_tokens:
        torch.manual_seed(sample_seed)
        out["sample"] = model.continue_ids(start, sample_tokens, sample=True, top_k=top_k)[0].tolist()
    nano = CharGPT.defaults()
    nano.merge(dict(preset="gpt-nano", vocab=len(alphabet), context=block_size))
    CharGPT(nano, say)  # built from a preset: it prints its parameter count
    return out
