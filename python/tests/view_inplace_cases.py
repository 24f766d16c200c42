"""Cases for torch's view rules, in-place ops recorded in a graph, and the selection and sampling
names (topk, mv, select, repeat_interleave, pow with a tensor exponent), written once against a
module ``T`` (torch in make_fixtures.py, attograd in the tests) as torch_cases.py's are: values,
gradients and second-order gradients in float64, compared by test_parity.py's run_case.

An in-place op cannot write into an input (a leaf that requires grad), so each case writes into a
copy or an intermediate first, as a program would."""

from torch_cases import Case


def _views(add):
    # nanoGPT's attention: q, k, v split off one projection, each viewed as heads (a view of a
    # strided piece: no copy in torch), transposed, multiplied.
    def qkv_heads(T, a):
        q, k, v = a.split(4, dim=2)
        q = q.view(2, 3, 2, 2).transpose(1, 2)
        k = k.view(2, 3, 2, 2).transpose(1, 2)
        v = v.view(2, 3, 2, 2).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)).softmax(-1)
        return (att @ v).transpose(1, 2).contiguous().view(2, 3, 4)

    add(Case("view_split_heads", [(2, 3, 12)], qkv_heads))
    add(Case("view_chunk_narrow", [(3, 8)], lambda T, a: a.chunk(2, dim=1)[1].view(3, 2, 2).sum(-1)
             * a.narrow(1, 2, 4).view(3, 2, 2)[:, 1, :].sum(-1, keepdim=True)))
    add(Case("view_transpose_legal", [(2, 3, 4)], lambda T, a: a.transpose(0, 1).view(3, 2, 2, 2)
             * 2 + a.permute(1, 0, 2).view(3, 2, 4, 1).squeeze(-1).unsqueeze(0)[0].view(3, 2, 2, 2)))
    add(Case("reshape_view_or_copy", [(4, 6)], lambda T, a: a[:, 1:5].reshape(8, 2).sum(1)
             + a.t().reshape(-1)[:8] + a[::2].flatten()[:8] + a.unflatten(1, (2, 3))[1:3].reshape(-1)[2:10]))


def _inplace(add):
    def arithmetic(T, a, c):
        b = a.clone()
        b.mul_(c)
        b.add_(a, alpha=2.0)
        b.sub_(0.5)
        b.div_(c * c + 1.0)
        return b * a

    def operators(T, a, c):
        b = a * 1.0
        b += c
        b *= c
        b -= 1.5
        b /= c.abs() + 1.0
        b **= 2
        return b

    def through_views(T, a, c):
        b = a * 1.0
        b[1:3].mul_(2.0)
        b[:, 0] = c[:, 0] * 3.0
        b[0].add_(c[1])
        b.t()[2].fill_(0.25)
        return b * b

    def masked(T, a, s):
        b = a * 1.0
        b.masked_fill_(a > 0.5, 0.0)
        b.masked_fill_(a < -0.5, s)  # a 0-d tensor value: it gets the filled places' gradient
        return b * a + a.masked_fill(a > 0.0, s)

    def index_put(T, a, v, w):
        b = a.clone()
        b[T.tensor([0, 2])] = v
        b.index_put_((T.tensor([1, 1, 3]),), w, accumulate=True)
        b[b > 1.0] = 1.0
        return b * a

    def copies(T, a, c):
        b = a.clone()
        b[0].copy_(c[0])
        b[1].fill_(2.0)
        b[2].zero_()
        b.clamp_(-0.7, 0.9)
        return b * c

    def pow_in_place(T, a, e):
        b = a * 1.0
        b.pow_(e)  # saves its result (torch): written again, its backward would refuse
        d = a * 1.0
        d.pow_(2)
        return b * 2.0 + d

    add(Case("inplace_arithmetic", [(3, 4), (4,)], arithmetic))
    add(Case("inplace_operators", [(3, 4), (3, 4)], operators))
    add(Case("inplace_through_views", [(4, 3), (4, 3)], through_views))
    add(Case("inplace_masked_fill", [(3, 4), ()], masked))
    add(Case("inplace_index_put", [(4, 3), (2, 3), (3, 3)], index_put))
    add(Case("inplace_copy_fill_zero_clamp", [(3, 4), (3, 4)], copies))
    add(Case("inplace_pow", [(2, 3), (2, 3)], pow_in_place, positive=[0, 1]))


def _selection(add):
    add(Case("topk", [(4, 5)], lambda T, a: T.topk(a, 2, dim=1).values * 2 + a.topk(3, dim=0, largest=False)[0].sum()
             + a.topk(1).values.sum() + a.t().topk(2, sorted=True)[0].sum(0, keepdim=True).t()[:1]))
    add(Case("mv", [(3, 4), (4,)], lambda T, m, v: m.mv(v) * T.mv(m, v.tanh())))
    add(Case("select", [(3, 4, 2)], lambda T, a: a.select(1, -1) * T.select(a, 0, 2).sum() + a.select(2, 0)[:, :2]))
    add(Case("repeat_interleave", [(3, 2)], lambda T, a: a.repeat_interleave(2, dim=0).sum(1)
             + a.repeat_interleave(T.tensor([1, 0, 3]), dim=0)[:, 1].repeat_interleave(T.tensor(2)).sum()
             + T.repeat_interleave(a, 3)[:6]))
    add(Case("pow_tensor_exponent", [(3, 4), (4,)], lambda T, a, b: a ** b + T.pow(a, b * 0.5) + 2.0 ** b
             + T.pow(3, b) + a.pow(b - 1.0), positive=[0]))


def _cases():
    c = []
    _views(c.append)
    _inplace(c.append)
    _selection(c.append)
    return c


CASES = _cases()


def buffer_names(T):
    """nn.Buffer registered on assignment (persistent or not), a plain tensor attribute not: the
    state_dict's keys, the buffers' names, whether the plain one is a buffer."""

    class M(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.kept = T.nn.Buffer(T.ones(2))
            self.scratch = T.nn.Buffer(T.zeros(1), persistent=False)
            self.plain = T.zeros(3)

    m = M()
    return [sorted(m.state_dict()), sorted(n for n, _ in m.named_buffers()), "plain" in dict(m.named_buffers())]
