"""The cases that PyTorch computed for the fixtures and attograd recomputes in the tests.

Each case is written once, against a module ``T`` that is either ``torch`` (make_fixtures.py, run
with PyTorch installed) or ``attograd`` (the tests): the same source then runs on both, which is
what "a PyTorch program runs with the import changed" means. Inputs are float64, drawn from a
seeded NumPy generator and stored with the results, so no test needs torch.
"""

from dataclasses import dataclass, field


@dataclass
class Case:
    name: str
    shapes: list  # one shape per float64 input, each requiring grad
    fn: object  # fn(T, *inputs) -> Tensor
    second_order: bool = True  # also the gradient of <grad, v> (double backward)
    positive: list = field(default_factory=list)  # inputs drawn in [0.5, 2) instead of N(0, 1)


def _cases():
    c = []
    add = c.append
    # ---- arithmetic, with Python numbers on either side, and broadcasting ----------------------
    add(Case("add_sub_mul_div", [(3, 4), (4,)], lambda T, a, b: (a + b) * (a - 2.5) / (b * b + 1.0)))
    add(Case("scalar_left", [(3, 4)], lambda T, a: 2.0 - a + 3 * a - 1.5 / (a * a + 1)))
    add(Case("pow_and_rpow", [(5,)], lambda T, a: a ** 3 + 2.0 ** a + a.pow(2) * 0.5, positive=[0]))
    add(Case("neg_abs_square", [(2, 3)], lambda T, a: -a + abs(a) * 0.3 + T.square(a)))
    add(Case("broadcast_3d", [(2, 1, 4), (3, 1)], lambda T, a, b: a * b + a / (b.abs() + 1)))
    add(Case("maximum_minimum", [(4, 3), (3,)], lambda T, a, b: T.maximum(a, b) + T.minimum(a, b * 2)))
    add(Case("unary", [(3, 5)], lambda T, a: T.exp(a * 0.5) + T.tanh(a) + T.sigmoid(a) + T.sin(a) * T.cos(a)
             + T.relu(a)))
    add(Case("log_sqrt_rsqrt", [(4, 2)], lambda T, a: T.log(a) + T.sqrt(a) + a.rsqrt() + a.reciprocal(),
             positive=[0]))
    add(Case("clamp", [(6,)], lambda T, a: a.clamp(-0.5, 0.7) + T.clamp(a, min=0.1) + a.clip(max=0.2)))
    add(Case("where_masked_fill", [(3, 4)], lambda T, a: T.where(a > 0, a * 2, -a) + a.masked_fill(a < -0.5, 3.0)
             + T.where(a > 0.3, a, 0.0)))
    # ---- reductions ---------------------------------------------------------------------------
    add(Case("sum_mean_dims", [(2, 3, 4)], lambda T, a: a.sum(1) * a.mean((0, 2), keepdim=True).sum()
             + T.sum(a, dim=-1, keepdim=True).mean()))
    add(Case("max_min_dim", [(3, 5)], lambda T, a: a.max(1).values + a.min(dim=0, keepdim=True)[0].sum()
             + a.max() - T.min(a)))
    add(Case("amax_amin", [(4, 3)], lambda T, a: a.amax(0) * a.amin(dim=1).sum()))
    add(Case("norm_var_std", [(3, 4)], lambda T, a: a.norm() + a.norm(dim=1).sum() + a.var(0).sum()
             + a.var(1, correction=0).sum() + a.std() + T.var(a, unbiased=False)))
    add(Case("logsumexp_softmax", [(2, 5)], lambda T, a: T.logsumexp(a, 1) + T.softmax(a, 1)[:, 0]
             + a.log_softmax(-1).sum(-1) + a.softmax(dim=0)[1].sum()))
    # ---- matrix products ------------------------------------------------------------------------
    add(Case("matmul_2d", [(3, 4), (4, 2)], lambda T, a, b: T.tanh(a @ b)))
    add(Case("matmul_batched", [(2, 3, 4), (4, 5)], lambda T, a, b: T.matmul(a, b).sum(0)))
    add(Case("matmul_vector", [(4,), (4, 3), (4,)], lambda T, v, m, w: (v @ m) * (v @ w) + (m.t() @ v).sum()))
    add(Case("mm_bmm_transposed", [(2, 3, 4), (2, 3, 5)], lambda T, a, b: T.bmm(a.transpose(1, 2), b).mean(-1)))
    # ---- shapes and views ----------------------------------------------------------------------
    add(Case("reshape_view_permute", [(2, 3, 4)], lambda T, a: a.reshape(6, 4).t().reshape(-1)[:10]
             * a.permute(2, 0, 1).reshape(24)[5:15] + a.view(4, 6).sum(0)[0]))
    add(Case("unsqueeze_squeeze_flatten", [(3, 1, 4)], lambda T, a: a.squeeze(1).unsqueeze(0).flatten()
             * a.squeeze().flatten() + a.flatten(1).sum(0).unsqueeze(-1).squeeze(-1).sum()))
    add(Case("expand_flip", [(3, 1)], lambda T, a: a.expand(3, 4) * a.expand(-1, 4).flip(0)))
    add(Case("chunk_split_unbind", [(4, 6)], lambda T, a: a.chunk(2, 1)[1] * a.split(3, dim=1)[0]
             + T.stack(a.unbind(1)[:3], 1) - a.split([2, 4], 1)[1][:, :3]))
    add(Case("cat_stack_narrow", [(2, 3), (2, 3)], lambda T, a, b: T.cat([a, b * 2], 0).narrow(0, 1, 2)
             + T.stack([a, b], 0).sum(0)))
    add(Case("transpose_mT_T", [(2, 3, 4)], lambda T, a: a.transpose(0, 2).reshape(-1)[:6] + a.mT.reshape(-1)[:6]
             + a[0].T.reshape(-1)[:6]))
    # ---- indexing ------------------------------------------------------------------------------
    add(Case("index_basic", [(4, 5, 3)], lambda T, a: a[1] * a[-1] + a[2, :, 0:1] + a[..., 2][0:5:2].sum()))
    add(Case("index_steps_none", [(6, 5)], lambda T, a: a[::2, 1::3].sum(1) + a[None, 1:4:2, ..., None].sum()))
    add(Case("index_tensor_list", [(5, 3)], lambda T, a: a[T.tensor([0, 2, 2, 4])].sum(0) + a[[1, 3]][:, 1]
             .sum() + a[:, T.tensor([[0, 2], [1, 1]])].sum((0, 1)).sum()))
    add(Case("index_bool_mask", [(4, 3)], lambda T, a: a[a > 0].sum() + a[T.tensor([True, False, True, True])]
             .sum(0)))
    add(Case("gather_scatter_index_select", [(3, 4), (3, 2)], lambda T, a, s: a.gather(1, T.tensor(
        [[0, 3], [1, 1], [2, 0]])) * 2 + T.index_select(a, 0, T.tensor([2, 0]))[:, :2].t()[:, :1].t().sum()
        + a.scatter_add(1, T.tensor([[0, 3], [1, 1], [2, 0]]), s)[:, :2]))
    add(Case("tril_triu", [(4, 4)], lambda T, a: a.tril() * 2 + T.triu(a, 1) - a.tril(-1)))
    return c


CASES = _cases()


def make_function(T):
    """A Function subclassed in Python: x·exp(x) with its backward written by hand, double-backward
    capable (the backward is made of ops)."""

    class XExp(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale):
            y = x * T.exp(x) * scale
            ctx.save_for_backward(x)
            ctx.scale = scale
            return y

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (1 + x) * T.exp(x) * ctx.scale, None

    return XExp


def functional_fn(T):
    def f(x):
        return (T.tanh(x) * T.sin(x)).sum() + (x ** 3).sum()

    return f


def vector_fn(T):
    def f(x):
        return T.tanh(x) * x.sum()

    return f
