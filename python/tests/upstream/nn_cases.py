"""pytorch/pytorch's nn tests in attograd's scope, written here: test/nn/test_embedding.py,
test/test_nn.py (LayerNorm), test/nn/test_multihead_attention.py, test/nn/test_load_state_dict.py
and test/nn/test_module_hooks.py (its state-dict hooks).

Each case is filed under the upstream test's name and keeps that test's inputs (random ones drawn
by common.Fixed) and what it compares, returned as observations; torch's are the expected values."""

import copy
import gc
import weakref

import numpy as np

from .common import Fixed, outcome, registry, values

CASES, upstream = registry()


def _rows_match(a, b, tol=1e-5):
    """a and b agree to tol where a is a number, and have NaN in the same places."""
    same_nans = bool((a.isnan() == b.isnan()).all())
    return same_nans and bool(((a - b).abs().masked_fill(a.isnan(), 0.0) <= tol).all())


# ---- Embedding -----------------------------------------------------------------------------------
@upstream("test_embedding_from_pretrained")
def embedding_made_from_a_table(T):
    """from_pretrained keeps the table as the weight (frozen by default) in its dtype, and looks up
    rows 0 and 1 as they are."""
    runs = []
    for dtype in (T.float32, T.float64):
        table = T.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=dtype)
        lookup = T.nn.Embedding.from_pretrained(table)
        rows = lookup(T.tensor([0, 1]))
        runs.append([values(lookup.weight.data), values(rows), lookup.weight.requires_grad,
                     str(rows.dtype).rsplit(".", 1)[-1]])
    return {"runs": runs}


@upstream("test_embedding_from_pretrained_padding_idx")
def pretrained_padding_row_is_kept(T):
    """from_pretrained with padding_idx keeps the table's row there (7s), not zeros."""
    table = Fixed(T).rand(4, 3, dtype=T.float32, requires_grad=True)
    with T.no_grad():
        table[2] = T.ones(3) * 7
    lookup = T.nn.Embedding.from_pretrained(table, padding_idx=2)
    return {"padding_row": values(lookup.weight[2]), "padding_idx": lookup.padding_idx}


@upstream("test_embedding_functional")
def module_and_functional_embedding_agree(T):
    """The module and F.embedding on one table give the same rows, with and without padding_idx
    (the module's made by from_pretrained called on an instance)."""
    ids = T.tensor([[1, 3, 2], [0, 2, 1]])
    table = Fixed(T).rand(4, 3, dtype=T.float32, requires_grad=True)
    module = T.nn.Embedding(4, 3)
    module.weight.data = table.data
    padded_module = T.nn.Embedding(4, 3).from_pretrained(table, padding_idx=2)
    F = T.nn.functional
    return {"plain": [values(module(ids)), values(F.embedding(ids, table))],
            "padded": [values(padded_module(ids)), values(F.embedding(ids, table, padding_idx=2))]}


@upstream("test_embedding_dense_grad")
def embedding_weight_gradient_checks(T):
    """gradcheck and gradgradcheck of F.embedding in its (20, 20) weight, ids repeating."""
    ids = T.tensor([[0, 1, 1, 2], [3, 5, 7, 11]])
    weight = Fixed(T).leaf(20, 20)
    lookup = lambda w: T.nn.functional.embedding(ids, w)  # noqa: E731
    return {"checks": [T.autograd.gradcheck(lookup, (weight,)), T.autograd.gradgradcheck(lookup, (weight,))]}


@upstream("test_embedding_scalar_weight_error")
def embedding_weight_must_be_a_matrix(T):
    """A 0-d or a 3-d weight is refused."""
    ids = T.tensor([[0, 0], [0, 0]])
    return {"errors": [outcome(lambda: T.nn.functional.embedding(ids, w))
                       for w in (T.tensor(1.0), T.tensor(1.0).reshape(1, 1, 1))]}


@upstream("test_embedding_padding_idx")
def padding_row_is_zero_and_gets_no_gradient(T):
    """The padding row (given as 0, or as −2 counted from the end) looks up zeros; set by hand it
    looks up what was set; out of [−10, 10) it is refused; and neither backward nor a backward
    through grad moves it, however often it occurs among the ids."""
    seen = {}
    lookup = T.nn.Embedding(10, 20, padding_idx=0)
    rows = lookup(T.tensor([[0, 2, 4, 5], [4, 3, 0, 9]]))
    seen["zero_rows"] = [rows[0][0].sum().item(), rows[1][2].sum().item()]
    lookup = T.nn.Embedding(10, 20, padding_idx=-2)
    rows = lookup(T.tensor([[0, 2, 8, 5], [4, 8, 0, 9]]))
    seen["from_the_end"] = [rows[0][2].sum().item(), rows[1][1].sum().item(), lookup.padding_idx]
    lookup = T.nn.Embedding(10, 20, padding_idx=2)
    with T.no_grad():
        lookup.weight[2] = T.ones(20)
    seen["set_by_hand"] = values(lookup(T.tensor([0, 2]))[1])
    seen["out_of_range"] = [outcome(lambda: T.nn.Embedding(num_embeddings=10, embedding_dim=20, padding_idx=k))
                            for k in (25, -25)]

    lookup = T.nn.Embedding(5, 2, padding_idx=0).double()
    with T.no_grad():
        lookup.weight.copy_(Fixed(T).randn(5, 2))
    unmoved = []

    def padding_row_after(loss_of):
        before = lookup.weight[0].clone()
        loss_of().backward()
        after = (lookup.weight + lookup.weight.grad)[0]
        lookup.zero_grad()
        unmoved.append(bool(T.equal(after, before)))

    def through_grad(ids):
        total = lookup(ids).sum()
        (g,) = T.autograd.grad(outputs=total, inputs=list(lookup.parameters()), retain_graph=True)
        return g.sum() + total

    for repeats in (1, 2, 1000):
        for others in ([], [1, 3], [2]):
            ids = T.tensor(others + [0] * repeats)
            padding_row_after(lambda: lookup(ids).sum())
            padding_row_after(lambda: through_grad(ids))
    seen["padding_row_unmoved"] = unmoved
    return seen


@upstream("test_embedding_padding_idx_gradient")
def padding_row_gradient_to_second_order(T):
    """(Ours, beside the padding_idx tests.) The weight's gradient with a padding row (zero there)
    and a second-order gradient through it."""
    draw = Fixed(T)
    weight = draw.leaf(6, 3)
    rows = T.nn.functional.embedding(T.tensor([[0, 2, 5, 2], [5, 1, 2, 0]]), weight, padding_idx=2)
    (g,) = T.autograd.grad(rows, weight, draw.randn(2, 4, 3), create_graph=True)
    (gg,) = T.autograd.grad((g * g).sum() + (rows * rows).sum(), weight)
    return {"rows": values(rows), "grad": values(g), "second": values(gg)}


# ---- LayerNorm -----------------------------------------------------------------------------------
# Upstream draws each input's shape as torch.randint(3, 6, (ndim,)) for ndim = 2..5; these are such draws.
_LAYER_NORM_SHAPES = [[3, 5], [4, 3, 5], [5, 4, 3, 3], [3, 4, 5, 3, 4]]


@upstream("test_LayerNorm_general")
def layer_norm_over_trailing_dims(T):
    """LayerNorm (eps 0) over the last 1..ndim−1 dims of inputs scaled by 10: with weight 1 and bias
    0 each normalized group has mean 0 and variance 1; with weight 1.5 and bias 0.75, mean 0.75
    and variance 1.5²; an input whose trailing dims do not match normalized_shape is refused."""
    draw = Fixed(T)
    runs = []
    for k, shape in enumerate(_LAYER_NORM_SHAPES):
        x = draw.rand(*shape, dtype=T.float32) * 10
        ndim = 1 + k % (len(shape) - 1) if len(shape) > 2 else 1
        normalized, batch = shape[-ndim:], shape[:-ndim]
        norm = T.nn.LayerNorm(normalized, eps=0)
        moments = []
        for scale, shift in ((1, 0), (1.5, 0.75)):
            norm.weight.data.fill_(scale)
            norm.bias.data.fill_(shift)
            groups = norm(x).reshape(*(batch + [-1]))
            moments += [groups.mean(-1).abs().mean().item(), groups.var(-1, unbiased=False).abs().mean().item()]
        runs.append([normalized, list(norm.normalized_shape), moments])
    refused = []
    for normalized, input_shape in [((), ()), ((2, 3), (3,)), ((2,), (1, 2, 3)), ((10,), (2, 3)), (10, (2, 3))]:
        norm = T.nn.LayerNorm(normalized)
        refused.append(outcome(lambda: norm(draw.rand(*input_shape, dtype=T.float32)))["error"])
    return {"runs": runs, "mismatched": refused}


@upstream("test_layer_norm_several_dims_gradients")
def layer_norm_two_dims_to_second_order(T):
    """(Ours, beside the LayerNorm tests.) F.layer_norm over two trailing dims with weight and bias:
    values, gradients, and gradients of the gradients' squares."""
    draw = Fixed(T)
    x, w, b = draw.leaf(3, 2, 4), draw.leaf(2, 4), draw.leaf(2, 4)
    y = T.nn.functional.layer_norm(x, (2, 4), w, b, 1e-5)
    grads = T.autograd.grad(y, (x, w, b), draw.randn(3, 2, 4), create_graph=True)
    second = T.autograd.grad(sum((g * g).sum() for g in grads), (x, w, b), allow_unused=True, materialize_grads=True)
    return {"y": values(y), "grads": [values(g) for g in grads], "second": [values(g) for g in second]}


# ---- MultiheadAttention and F.multi_head_attention_forward --------------------------------------
def _functional_attention(T, seed, padding_mask=False, bias_kv=False, zero_attn=False, static_kv=False,
                          shared_projection=False, average=True):
    """One query step of 3 sequences against 5 keys, 2 heads of 4 (model width 8), keys of width 6
    (8 with shared_projection, which uses one packed in-projection instead of three): the output and
    attention weights of F.multi_head_attention_forward with an additive mask hiding keys 1 and 4,
    and the options upstream's helper switches on."""
    draw = Fixed(T, seed)
    n_seq, n_keys, head, heads = 3, 5, 4, 2
    width = head * heads
    key_width = width if shared_projection else 6
    step = draw.rand(n_seq, width)
    keys = draw.rand(n_seq, n_keys, key_width)
    hide = np.array([[0.0, -np.inf, 0.0, 0.0, -np.inf]])
    additive_mask = T.tensor(hide, dtype=T.float64)
    padding = T.tensor(np.repeat(np.isinf(hide), n_seq, axis=0)) if padding_mask else None
    static_k = static_v = None
    if static_kv:
        static_k, static_v = draw.rand(n_seq * heads, n_keys, head), draw.rand(n_seq * heads, n_keys, head)
    bias_k = draw.randn(1, 1, width) if bias_kv else None
    bias_v = draw.randn(1, 1, width) if bias_kv else None
    in_bias = draw.randn(3 * width) * 0.1
    out_weight, out_bias = draw.randn(width, width) * 0.3, draw.randn(width) * 0.1
    if shared_projection:
        packed, separate = draw.randn(3 * width, width) * 0.3, {}
    else:
        packed = None
        separate = dict(use_separate_proj_weight=True, q_proj_weight=draw.randn(width, width) * 0.3,
                        k_proj_weight=draw.randn(width, key_width) * 0.3,
                        v_proj_weight=draw.randn(width, key_width) * 0.3)
    query = step.unsqueeze(0)          # (1, n_seq, width): sequence first
    kv = keys.transpose(0, 1)          # (n_keys, n_seq, key_width)
    out, weights = T.nn.functional.multi_head_attention_forward(
        query, kv, kv, width, heads, packed, in_bias, bias_k, bias_v, zero_attn, 0.0, out_weight, out_bias,
        training=True, key_padding_mask=padding, need_weights=True, attn_mask=additive_mask, static_k=static_k,
        static_v=static_v, average_attn_weights=average, is_causal=False, **separate)
    return [values(out), values(weights)]


# (upstream's sub-test of test_multihead_attention, the seed of its draws, the options it turns on)
_ATTENTION_VARIANTS = [
    ("add_zero_attn", 1, dict(zero_attn=True)),
    ("add_bias_kv", 2, dict(bias_kv=True)),
    ("no_masking", 3, {}),
    ("key_padding_mask", 4, dict(padding_mask=True)),
    ("saved_kv", 5, dict(static_kv=True)),
    ("add_bias_kv_zero_attn", 6, dict(padding_mask=True, bias_kv=True, zero_attn=True)),
    ("all_arguments1", 7, dict(padding_mask=True, zero_attn=True, static_kv=True)),
    ("all_arguments3", 9, dict(padding_mask=True, zero_attn=True, static_kv=True, shared_projection=True)),
]


@upstream("test_multihead_attention")
def functional_attention_variants(T):
    """Each variant's output and weights, averaged over heads and per head; bias_kv together with
    static keys and values (all_arguments2) is refused."""
    seen = {}
    for average in (True, False):
        for name, seed, options in _ATTENTION_VARIANTS:
            seen[f"{name}/{average}"] = _functional_attention(T, seed, average=average, **options)
    seen["all_arguments2"] = outcome(lambda: _functional_attention(
        T, 8, padding_mask=True, bias_kv=True, zero_attn=True, static_kv=True))
    return seen


@upstream("test_multihead_attention_gradients")
def functional_attention_gradients(T):
    """(Ours, beside the attention tests.) Gradients of every input of F.multi_head_attention_forward
    with bias_kv, zero attention, a key padding mask and a boolean attention mask."""
    draw = Fixed(T, 11)
    E, H, L, S, N = 6, 2, 3, 4, 2
    q, k = draw.leaf(L, N, E), draw.leaf(S, N, E)
    w, b = draw.leaf(3 * E, E), draw.leaf(3 * E)
    ow, ob = draw.leaf(E, E), draw.leaf(E)
    bk, bv = draw.leaf(1, 1, E), draw.leaf(1, 1, E)
    padding = T.tensor([[False, False, True, False], [False, True, False, False]])
    mask = T.tensor([[False, True, False, False], [False, False, False, True], [True, False, False, False]])
    out, weights = T.nn.functional.multi_head_attention_forward(q, k, k, E, H, w, b, bk, bv, True, 0.0, ow, ob,
                                                                 key_padding_mask=padding, attn_mask=mask)
    loss = (out * draw.randn(L, N, E)).sum() + (weights * weights).sum()
    return {"out": values(out), "weights": values(weights),
            "grads": [values(g) for g in T.autograd.grad(loss, (q, k, w, b, ow, ob, bk, bv))]}


@upstream("test_multihead_attn_3d_attn_mask")
def per_sequence_masks_match_one_at_a_time(T):
    """A (batch·heads, tgt, src) mask, each sequence's (tgt, src) mask repeated per head, gives each
    sequence the output it gets alone with its own 2-D mask (NaN where a row hides every key)."""
    draw = Fixed(T)
    width, heads, n_seq, n_keys, n_queries = 8, 4, 8, 3, 2
    queries = draw.rand(n_seq, n_queries, width, dtype=T.float32)
    keys = draw.rand(n_seq, n_keys, width, dtype=T.float32)
    hidden = draw.rng.integers(0, 2, (n_seq, n_queries, n_keys)) == 0
    masks = T.tensor(np.where(hidden, -np.inf, 0.0), dtype=T.float32)
    attention = T.nn.MultiheadAttention(width, heads)
    per_head = masks.unsqueeze(1).expand(n_seq, heads, n_queries, n_keys).reshape(n_seq * heads, n_queries, n_keys)
    seq_first = lambda t: t.transpose(0, 1)  # noqa: E731
    together = seq_first(attention(seq_first(queries), seq_first(keys), seq_first(keys), attn_mask=per_head)[0])
    matches = []
    for s in range(n_seq):
        q, k = seq_first(queries[s].unsqueeze(0)), seq_first(keys[s].unsqueeze(0))
        alone = attention(q, k, k, attn_mask=masks[s])[0]
        matches.append(_rows_match(seq_first(together[s].unsqueeze(0)), alone))
    return {"matches": matches}


@upstream("test_multihead_attn_no_bias")
def attention_without_biases(T):
    """bias=False leaves both the in-projection and the out-projection without a bias."""
    attention = T.nn.MultiheadAttention(8, 4, bias=False)
    return {"no_bias": [attention.in_proj_bias is None, attention.out_proj.bias is None]}


def _bad_shape_calls(T, attention, need_weights=True):
    """What each of upstream's mis-shaped calls raises: batched (3-D) query with 2-D key or value,
    a 1-D key padding mask or attention mask; unbatched (2-D) query with 3-D key or value, a 2-D
    key padding mask, a 1-D mask, a 3-D mask of the wrong batch."""
    draw = Fixed(T)
    q3, k3, v3 = (draw.randn(4, 4, 4, dtype=T.float32) for _ in range(3))
    q2, k2, v2 = (draw.randn(4, 4, dtype=T.float32) for _ in range(3))
    flags = T.tensor([False, False, True, True])
    calls = [
        lambda: attention(q3, draw.randn(4, 4, dtype=T.float32), v3, need_weights=need_weights),
        lambda: attention(q3, k3, draw.randn(4, 4, dtype=T.float32), need_weights=need_weights),
        lambda: attention(q3, k3, v3, key_padding_mask=flags, need_weights=need_weights),
        lambda: attention(q3, k3, v3, attn_mask=flags, need_weights=need_weights),
        lambda: attention(q2, draw.randn(4, 4, 4, dtype=T.float32), v2),
        lambda: attention(q2, k2, draw.randn(4, 4, 4, dtype=T.float32)),
        lambda: attention(q2, k2, v2, key_padding_mask=T.tensor([[False, False, True, True] * 2])),
        lambda: attention(q2, k2, v2, attn_mask=flags),
        lambda: attention(q2, k2, v2, attn_mask=T.zeros(5, 4, 4, dtype=T.bool)),
    ]
    return [outcome(call) for call in calls]


@upstream("test_multihead_attn_invalid_shape")
def attention_refuses_mismatched_shapes(T):
    """The mis-shaped calls, in training mode and then in eval mode without grad."""
    attention = T.nn.MultiheadAttention(4, 4)
    raised = _bad_shape_calls(T, attention)
    with T.no_grad():
        raised += _bad_shape_calls(T, attention.eval())
    return {"raised": raised}


@upstream("test_multihead_attn_fast_path_invalid_shape")
def fast_path_refuses_mismatched_shapes(T):
    """The mis-shaped calls on a batch-first module in eval mode without grad (torch's fast path),
    weights not asked for."""
    with T.no_grad():
        attention = T.nn.MultiheadAttention(4, 4, batch_first=True).eval()
        return {"raised": _bad_shape_calls(T, attention, need_weights=False)}


@upstream("test_multihead_self_attn_two_masks_fast_path")
def module_with_two_masks_matches_functional(T):
    """Self-attention in eval mode with both an attention mask and a key padding mask equals the
    functional form with the module's parameters, except on query rows whose keys are all hidden
    (left out of the comparison)."""
    draw = Fixed(T)
    with T.no_grad():
        width, heads, n_seq, length = 14, 7, 8, 5
        x = draw.rand(n_seq, length, width, dtype=T.float32)
        attn_mask = T.tensor(draw.rng.integers(0, 2, (length, length)).astype(bool))
        padding = T.tensor(draw.rng.integers(0, 2, (n_seq, length)).astype(bool))
        hidden = attn_mask.reshape(1, length, length).expand(n_seq, length, length) | \
            padding.reshape(n_seq, 1, length).expand(n_seq, length, length)
        attention = T.nn.MultiheadAttention(width, heads, batch_first=True)
        attention.eval()
        by_module, _ = attention(x, x, x, attn_mask=attn_mask, key_padding_mask=padding)
        xs = x.transpose(0, 1)
        by_function, _ = T.nn.functional.multi_head_attention_forward(
            xs, xs, xs, width, heads, attention.in_proj_weight, attention.in_proj_bias, attention.bias_k,
            attention.bias_v, attention.add_zero_attn, attention.dropout, attention.out_proj.weight,
            attention.out_proj.bias, training=attention.training, key_padding_mask=padding, need_weights=False,
            attn_mask=attn_mask, use_separate_proj_weight=False, q_proj_weight=attention.q_proj_weight,
            k_proj_weight=attention.k_proj_weight, v_proj_weight=attention.v_proj_weight, average_attn_weights=False)
        all_hidden = (hidden.sum(-1, keepdim=True) == length).expand(n_seq, length, width)
        a = by_module.masked_fill(all_hidden, 0)
        b = by_function.transpose(0, 1).masked_fill(all_hidden, 0)
        return {"match": bool(((a - b).abs() <= 1e-5).all())}


@upstream("test_multihead_attn_fast_path_small_test")
def fast_path_output_shapes(T):
    """Batch-first float64 self-attention in eval mode: output (4, 4, 4), weights (4, 4, 4)."""
    attention = T.nn.MultiheadAttention(4, 4, batch_first=True, dtype=T.float64).eval()
    x = Fixed(T).randn(4, 4, 4)
    with T.no_grad():
        out, weights = attention(x, x, x)
    return {"shapes": [list(out.shape), list(weights.shape)]}


@upstream("test_multihead_attn_in_proj_bias_none")
def attention_without_in_projection_bias_runs(T):
    """bias=False: the module still runs (output (2, 2, 2))."""
    attention = T.nn.MultiheadAttention(2, 2, bias=False, dtype=T.float64)
    x = Fixed(T).rand(2, 2, 2)
    with T.no_grad():
        out, _ = attention(x, x, x)
    return {"shape": list(out.shape)}


# ---- load_state_dict and its hooks ---------------------------------------------------------------
@upstream("test_load_state_dict_invalid")
def state_values_must_be_tensors(T):
    """A NumPy array or nested tuples as a state's value: refused."""
    layer = T.nn.Linear(2, 2, bias=False)
    return {"numpy": outcome(lambda: layer.load_state_dict({"weight": np.zeros((2, 2))})),
            "tuple": outcome(lambda: layer.load_state_dict({"weight": ((1.0, 1.0), (2.0, 2.0))}))}


@upstream("test_load_state_dict_type")
def state_dict_must_be_a_mapping(T):
    """A string or an int instead of a mapping: refused."""
    module = T.nn.Module()
    return {"str": outcome(lambda: module.load_state_dict("")), "int": outcome(lambda: module.load_state_dict(2))}


@upstream("test_load_state_dict_child")
def pre_hook_of_a_deeply_nested_child(T):
    """A load pre-hook on one Linear inside three levels of ten-wide Sequentials runs once, seeing
    its own two entries under its dotted prefix (and the whole state dict)."""
    model = T.nn.Linear(1, 1)
    for _ in range(3):
        model = T.nn.Sequential(*[copy.deepcopy(model) for _ in range(10)])
    calls = []

    def pre_hook(module, state_dict, prefix, *_rest):
        calls.append([len(module.state_dict()), len(state_dict), prefix])

    model[0][0].register_load_state_dict_pre_hook(pre_hook)
    model.load_state_dict(model.state_dict(), strict=True)
    return {"calls": calls}


@upstream("test_load_state_dict_custom")
def overridden_save_and_load(T):
    """A module that saves its own parameter shifted by one under a key of its choosing
    (_save_to_state_dict) and shifts it back when loading (_load_from_state_dict), inside a
    Sequential: its child Linear is still saved and loaded the usual way."""

    class StoredShifted(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.level = T.nn.Parameter(T.ones(1))
            self.child = T.nn.Linear(5, 5)

        def _save_to_state_dict(self, destination, prefix, keep_vars):
            destination[f"{prefix}level_plus_one"] = self.level.detach() + 1

        def _load_from_state_dict(self, state_dict, prefix, *_rest):
            with T.no_grad():
                self.level.copy_(state_dict[f"{prefix}level_plus_one"] - 1)

    saved = T.nn.Sequential(StoredShifted())
    with T.no_grad():
        saved[0].level[0] = 10
        saved[0].child.weight[0, 0] = 555
    state = saved.state_dict()
    loaded = T.nn.Sequential(StoredShifted())
    before = loaded[0].level[0].item()
    loaded.load_state_dict(state)
    return {"keys": sorted(state), "stored": state["0.level_plus_one"].item(), "before": before,
            "after": [loaded[0].level[0].item(), loaded[0].child.weight[0, 0].item()]}


@upstream("test_load_state_dict_with_unexpected_key")
def extra_keys_below_a_child(T):
    """An extra key under a child's prefix, and under one of its parameters' names: strict loading
    refuses it, naming it unexpected; strict=False reports it."""

    class OneLayer(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = T.nn.Linear(5, 10)

    model = OneLayer()
    runs = []
    for extra in ("proj.not_a_parameter", "proj.weight.not_a_parameter"):
        state = model.state_dict()
        state[extra] = T.zeros(5, 10)
        strict = outcome(lambda: model.load_state_dict(state))
        runs.append([strict["error"], strict["error"] is None or "Unexpected key" in strict.get("message", ""),
                     model.load_state_dict(state, strict=False).unexpected_keys])
    return {"runs": runs}


@upstream("test_load_state_dict_pre_hook")
def private_pre_hook_with_and_without_module(T):
    """_register_load_state_dict_pre_hook: a hook called without the module, then one registered
    with with_module=True, called with it first; both see the state dict being loaded."""
    source = T.nn.Linear(10, 10)
    state = source.state_dict()
    target = T.nn.Linear(10, 10)
    calls = []

    def without_module(state_dict, prefix, local_metadata, strict, *_rest):
        calls.append(["without", sorted(state_dict) == sorted(state), prefix, strict])

    def with_module(module, state_dict, *_rest):
        calls.append(["with", module is target, sorted(state_dict) == sorted(state)])

    target._register_load_state_dict_pre_hook(without_module)
    target.load_state_dict(state)
    target._register_load_state_dict_pre_hook(with_module, True)
    target.load_state_dict(state)
    return {"calls": calls, "loaded": bool(T.equal(target.weight, source.weight))}


@upstream("test_load_state_dict_module_pre_hook")
def bound_method_pre_hooks(T):
    """Pre-hooks that are a module's own bound methods, on the module loaded directly and inside a
    container: each runs once per load, seeing the lists it may fill and strict; the with_module
    one gets the module itself and its prefix."""
    calls = []

    class Holder(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.vector = T.nn.Parameter(T.zeros(10))

        def plain_hook(self, state_dict, prefix, local_metadata, strict, missing, unexpected, errors):
            calls.append([errors, unexpected, missing, strict])

        def module_hook(self, module, state_dict, prefix, *_rest):
            calls.append([self is module, prefix])

    class Wrapper(T.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.mod = inner

    counts = []
    for wrap in (Wrapper, lambda inner: inner):
        model = wrap(Holder())
        state = model.state_dict()
        holder = model.mod if isinstance(model, Wrapper) else model
        calls.clear()
        holder._register_load_state_dict_pre_hook(holder.plain_hook)
        model.load_state_dict(state)
        first = len(calls)
        holder._register_load_state_dict_pre_hook(holder.module_hook, True)
        model.load_state_dict(state)
        counts.append([first, len(calls) - first, list(calls)])
    return {"counts": counts}


@upstream("test_load_state_dict_post_hook")
def post_hook_edits_the_incompatible_keys(T):
    """A load post-hook that adds a missing and an unexpected key: strict=False returns them,
    strict=True raises for them; removed, nothing is added; a post-hook that clears the lists lets
    a strict load with an extra entry pass."""
    calls = [0]

    class Holder(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.vector = T.nn.Parameter(T.zeros(10))

        def add_keys(self, module, incompatible):
            assert module is self
            incompatible.missing_keys.append("said_missing")
            incompatible.unexpected_keys.append("said_unexpected")
            calls[0] += 1

    inner = Holder()
    outer = T.nn.ModuleList([inner])
    handle = inner.register_load_state_dict_post_hook(inner.add_keys)
    loose = outer.load_state_dict(outer.state_dict(), strict=False)
    seen = {"loose": [calls[0], loose.missing_keys, loose.unexpected_keys]}
    seen["strict"] = [outcome(lambda: outer.load_state_dict(outer.state_dict(), strict=True))["error"], calls[0]]
    handle.remove()
    loose = outer.load_state_dict(outer.state_dict(), strict=False)
    seen["removed"] = [loose.missing_keys, loose.unexpected_keys, calls[0]]

    def clear_keys(module, incompatible):
        incompatible.missing_keys.clear()
        incompatible.unexpected_keys.clear()

    inner.register_load_state_dict_post_hook(clear_keys)
    state = outer.state_dict()
    state["extra"] = T.ones(1)
    cleared = outer.load_state_dict(state, strict=True)
    seen["cleared"] = [cleared.missing_keys, cleared.unexpected_keys]
    return seen


@upstream("test_no_extra_ref_to_module")
def with_module_pre_hook_does_not_keep_the_module(T):
    """A with_module pre-hook holds no strong reference: the module dies with its last name."""
    gc.disable()
    try:
        layer = T.nn.Linear(10, 10)
        layer._register_load_state_dict_pre_hook(lambda *_: None, True)
        watch = weakref.ref(layer)
        del layer
        return {"freed": watch() is None}
    finally:
        gc.enable()
