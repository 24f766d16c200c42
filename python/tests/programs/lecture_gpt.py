"""The GPT of the "build GPT from scratch" lecture (karpathy/ng-video-lecture, gpt.py), restated in
our own words: attention heads, each with its own key, query and value projections and a
registered lower-triangular mask that hides the future, their outputs concatenated and
projected; a ReLU feed-forward Sequential; pre-norm residual layers; token and position
embeddings; N(0, 0.02) initialisation through Module.apply; AdamW, the loss estimate, and
sampling that sees at most the block. Tiny: 2 layers of 2 heads, 16 wide, block 8, dropout 0
(dropout draws from torch's generator)."""

from . import lecture_data, lecture_estimate_loss, lecture_sample, lecture_train, normal_init


def program(torch, draw_ix, say, init_state=None, batch_size=4, block_size=8, max_iters=6, eval_interval=3,
            learning_rate=1e-3, eval_iters=2, n_embd=16, n_head=2, n_layer=2, dropout=0.0, sample_tokens=0,
            sample_seed=1337):
    nn, F = torch.nn, torch.nn.functional
    on_gpu = torch.cuda.is_available()
    device = "cuda" if on_gpu else "cpu"

    n_chars, decode, batch = lecture_data(torch, draw_ix, block_size, batch_size, device)
    mean_losses = lecture_estimate_loss(torch, batch, eval_iters)

    class MaskedHead(nn.Module):
        """One head: each position's query scored against the keys of itself and the positions
        before it, the scores softmaxed into weights of the values."""

        def __init__(self, width):
            super().__init__()
            self.to_k = nn.Linear(n_embd, width, bias=False)
            self.to_q = nn.Linear(n_embd, width, bias=False)
            self.to_v = nn.Linear(n_embd, width, bias=False)
            self.register_buffer("causal", torch.tril(torch.ones(block_size, block_size)))  # 1 where visible
            self.drop = nn.Dropout(dropout)

        def forward(self, x):
            t = x.shape[1]
            keys, queries = self.to_k(x), self.to_q(x)  # (B, T, width) each
            scale = keys.shape[-1] ** -0.5  # keeps the scores' variance near 1 before softmax
            scores = queries @ keys.transpose(-2, -1) * scale  # (B, T, T)
            future = self.causal[:t, :t] == 0
            weights = self.drop(F.softmax(scores.masked_fill(future, float("-inf")), dim=-1))
            return weights @ self.to_v(x)  # (B, T, width)

    class Heads(nn.Module):
        def __init__(self, count, width):
            super().__init__()
            self.each = nn.ModuleList([MaskedHead(width) for _ in range(count)])
            self.merge = nn.Linear(count * width, n_embd)
            self.drop = nn.Dropout(dropout)

        def forward(self, x):
            side_by_side = torch.cat([head(x) for head in self.each], dim=-1)  # (B, T, count width)
            return self.drop(self.merge(side_by_side))

    def feed_forward(width):
        return nn.Sequential(nn.Linear(width, 4 * width), nn.ReLU(), nn.Linear(4 * width, width), nn.Dropout(dropout))

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attend = Heads(n_head, n_embd // n_head)
            self.mlp = feed_forward(n_embd)
            self.norm_a = nn.LayerNorm(n_embd)
            self.norm_m = nn.LayerNorm(n_embd)

        def forward(self, x):
            x = x + self.attend(self.norm_a(x))  # each sub-block reads a normalised copy, adds to x
            return x + self.mlp(self.norm_m(x))

    class CharGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tokens = nn.Embedding(n_chars, n_embd)
            self.positions = nn.Embedding(block_size, n_embd)
            self.layers = nn.Sequential(*[Layer() for _ in range(n_layer)])
            self.norm = nn.LayerNorm(n_embd)
            self.unembed = nn.Linear(n_embd, n_chars)
            self.apply(lambda module: normal_init(torch, module))

        def forward(self, ids, targets=None):
            where = torch.arange(ids.shape[1], device=device)  # (T,)
            h = self.tokens(ids) + self.positions(where)  # (B, T, C) + (T, C)
            scores = self.unembed(self.norm(self.layers(h)))  # (B, T, n_chars)
            if targets is None:
                return scores, None
            b, t, n = scores.shape
            return scores, F.cross_entropy(scores.view(b * t, n), targets.view(b * t))

    model = CharGPT()
    if init_state is not None:
        model.load_state_dict(init_state)
    on_device = model.to(device)
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    say(sum(p.numel() for p in on_device.parameters()) / 1e6, "million parameters")
    losses, estimates = lecture_train(torch, model, batch, mean_losses, say, max_iters, eval_interval, learning_rate,
                                      eval_last=True)
    sample = lecture_sample(torch, on_device, decode, say, sample_tokens, sample_seed, device, window=block_size)
    return {"model": model, "initial": initial, "losses": losses, "estimates": estimates, "sample": sample}
