"""The nn and optim cases that PyTorch computed for the fixtures (make_fixtures.py) and attograd
recomputes in test_nn_parity.py / test_optim_parity.py: each written once against a module ``T``
that is ``torch`` or ``attograd``, as torch_cases.py's.

Module cases: torch builds the model (its own initialisation), the fixture keeps its
state_dict, an input and an upstream gradient; attograd builds the same model from the same
source, loads that state_dict (strict) and must give the same names, outputs and gradients.
Optimizer cases: a few steps of each optimizer and scheduler on a small float64 problem, every
parameter and lr after each step."""


# ---- modules ---------------------------------------------------------------------------------
def make_mixed(T):
    """A Python Module holding C++ layers in Sequential and ModuleDict, and a Parameter of its own."""

    class Mixed(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = T.nn.Sequential(T.nn.Linear(3, 5), T.nn.GELU(approximate="tanh"), T.nn.Linear(5, 4),
                                        T.nn.Tanh())
            self.norm = T.nn.LayerNorm(4)
            self.heads = T.nn.ModuleDict({"a": T.nn.Linear(4, 2), "b": T.nn.Linear(4, 2, bias=False)})
            self.scale = T.nn.Parameter(T.ones(2) * 1.5)

        def forward(self, x):
            h = self.norm(self.body(x))
            return (self.heads["a"](h) + T.nn.functional.silu(self.heads["b"](h))) * self.scale

    return Mixed()


def make_tokens(T):
    """Embedding, RMSNorm, Dropout (in eval mode: the identity), a ModuleList of Linears."""

    class Tokens(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = T.nn.Embedding(7, 4)
            self.norm = T.nn.RMSNorm(4, eps=1e-6)
            self.drop = T.nn.Dropout(0.3)
            self.layers = T.nn.ModuleList([T.nn.Linear(4, 4), T.nn.Linear(4, 3)])

        def forward(self, ids):
            h = self.drop(self.norm(self.emb(ids)))
            for layer in self.layers:
                h = T.nn.functional.relu(layer(h)) + h[..., : layer.out_features]
            return h

    return Tokens()


def make_attention(T):
    """MultiheadAttention, batch first, with a causal bool mask and a key padding mask."""

    class Attend(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = T.nn.MultiheadAttention(6, 2, batch_first=True)

        def forward(self, x):
            L = x.shape[1]
            causal = T.triu(T.ones(L, L, dtype=T.bool), diagonal=1)
            padding = T.zeros(x.shape[0], L, dtype=T.bool)
            padding[1, L - 1] = True
            out, w = self.attn(x, x, x, key_padding_mask=padding, attn_mask=causal, average_attn_weights=False)
            return out * 2 + w.sum(1)[..., :1]  # the weights reach the loss too

    return Attend()


MODULE_CASES = [
    # name, make(T), input: ("float", shape) or ("ids", shape, vocab)
    ("mixed", make_mixed, ("float", (2, 3, 3))),
    ("tokens", make_tokens, ("ids", (2, 5), 7)),
    ("attention", make_attention, ("float", (2, 4, 6))),
]


# ---- losses --------------------------------------------------------------------------------------
# name, fn(T, F, x, t, p, w) -> a loss or an op's result; inputs: logits x (N, C), int targets t,
# probabilities p (N, C), positive weights w (C). torch refuses a class weight that requires grad
# (attograd would differentiate it): those cases detach w.
def _loss_cases():
    return [
        ("ce_mean", lambda T, F, x, t, p, w: F.cross_entropy(x, t)),
        ("ce_weight_ignore_smooth", lambda T, F, x, t, p, w: F.cross_entropy(
            x, t, weight=w.detach(), ignore_index=2, label_smoothing=0.1)),
        ("ce_sum_probs", lambda T, F, x, t, p, w: F.cross_entropy(x, p, reduction="sum")),
        ("ce_none", lambda T, F, x, t, p, w: F.cross_entropy(x, t, reduction="none", label_smoothing=0.2)),
        ("nll_weight", lambda T, F, x, t, p, w: F.nll_loss(F.log_softmax(x, dim=1), t, weight=w.detach())),
        ("mse_sum", lambda T, F, x, t, p, w: F.mse_loss(x, p, reduction="sum")),
        ("l1_none", lambda T, F, x, t, p, w: F.l1_loss(x, p, reduction="none")),
        ("bce_logits", lambda T, F, x, t, p, w: F.binary_cross_entropy_with_logits(x, p, pos_weight=w.detach())),
        ("bce_logits_weight_sum", lambda T, F, x, t, p, w: F.binary_cross_entropy_with_logits(
            x, p, weight=w.detach(), reduction="sum")),
        ("loss_modules", lambda T, F, x, t, p, w: T.nn.CrossEntropyLoss(label_smoothing=0.05)(x, t)
         + T.nn.MSELoss()(x, p) + T.nn.BCEWithLogitsLoss()(x, p)),
        ("layer_norm_fn", lambda T, F, x, t, p, w: F.layer_norm(x, (x.shape[1],), w, w * 0.5, eps=1e-3)),
        ("rms_norm_fn", lambda T, F, x, t, p, w: F.rms_norm(x, (x.shape[1],), w, eps=1e-4)),
        ("gelu_silu_softmax", lambda T, F, x, t, p, w: F.gelu(x) + F.gelu(x, approximate="tanh") * F.silu(x)
         + F.softmax(x, dim=1) + F.log_softmax(x, dim=0)),
        ("linear_fn", lambda T, F, x, t, p, w: F.linear(x, p.t() @ p, w)),
        ("sdpa_causal", lambda T, F, x, t, p, w: F.scaled_dot_product_attention(
            x.reshape(1, 4, 5), p.reshape(1, 4, 5), x.reshape(1, 4, 5) * 2, is_causal=True)),
        ("sdpa_float_mask", lambda T, F, x, t, p, w: F.scaled_dot_product_attention(
            x.reshape(1, 4, 5), p.reshape(1, 4, 5), p.reshape(1, 4, 5), attn_mask=p[:, :4] * 3, scale=0.3)),
    ]


LOSS_CASES = _loss_cases()
LOSS_SHAPE = (4, 5)  # x, target logits; w is (5); t holds class ids in [0, 5) with a 2 among them


# ---- optimizers ------------------------------------------------------------------------------------------
def loss_fn(T, params, X, C):
    """The problem every optimizer case steps on: W (3, 4), b (4), M (4, 2)."""
    W, b, M = params
    return ((T.tanh(X @ W + b) @ M) * C).sum() + 0.1 * (W * W).sum()


def _optimizer_cases():
    def sgd_nesterov(T, W, b, M):
        opt = T.optim.SGD([{"params": [W, M]}, {"params": [b], "lr": 0.05, "momentum": 0.0, "nesterov": False}], lr=0.1, momentum=0.9,
                          nesterov=True, weight_decay=0.01)
        return opt, T.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

    def sgd_dampening(T, W, b, M):
        opt = T.optim.SGD([W, b, M], lr=0.1, momentum=0.5, dampening=0.3)
        return opt, T.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (1 + e))

    def adam_amsgrad(T, W, b, M):
        opt = T.optim.Adam([W, b, M], lr=0.05, betas=(0.8, 0.9), eps=1e-6, weight_decay=0.1, amsgrad=True)
        return opt, T.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.001)

    def adamw_groups(T, W, b, M):
        opt = T.optim.AdamW([{"params": [W, M], "weight_decay": 0.1}, {"params": [b], "weight_decay": 0.0}], lr=0.03)
        warm = T.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, end_factor=1.0, total_iters=2)
        decay = T.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=1e-3)
        return opt, T.optim.lr_scheduler.SequentialLR(opt, [warm, decay], milestones=[2])

    def muon(T, W, b, M):
        opt = T.optim.Muon([W, M], lr=0.02, weight_decay=0.1, adjust_lr_fn="match_rms_adamw")
        return opt, T.optim.lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=3)

    return [("sgd_nesterov", sgd_nesterov), ("sgd_dampening", sgd_dampening), ("adam_amsgrad", adam_amsgrad),
            ("adamw_groups", adamw_groups), ("muon", muon)]


OPTIMIZER_CASES = _optimizer_cases()
OPTIMIZER_STEPS = 6


def run_optimizer(T, make, W, b, M, X, C, steps=OPTIMIZER_STEPS):
    """Steps the case; returns [[W, b, M after step s] for s], [lrs after step s]."""
    params = [W, b, M]
    opt, sched = make(T, W, b, M)
    trajectory, lrs = [], []
    for _ in range(steps):
        opt.zero_grad()
        loss_fn(T, params, X, C).backward()
        opt.step()
        sched.step()
        trajectory.append([p.detach().clone() for p in params])
        lrs.append([g["lr"] for g in opt.param_groups])
    return trajectory, lrs
