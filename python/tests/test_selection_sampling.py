"""Selection and sampling names (topk, select, mv, repeat_interleave, random_, index_put, pow with
a tensor exponent, torch.tensor([])) and nn.Flatten, nn.Unflatten, nn.Buffer, against torch's
answers (fixtures/view_inplace.json). Their gradients are compared in test_views_inplace.py."""

import math

import pytest

import attograd
from view_inplace_cases import buffer_names

T = attograd


def _same(got, want):
    """Nested lists equal, NaN equal to NaN."""
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want))
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    return got == want and type(got) is type(want)


def test_topk_orders_as_torch(view_tables):
    assert len(view_tables["topk"]) >= 8
    for expr, values, indices, dtype in view_tables["topk"]:
        r = eval(expr, {"T": T})
        assert _same(r.values.tolist(), values) and r.indices.tolist() == indices, expr
        assert str(r.values.dtype) == "attograd." + dtype and r.indices.dtype == T.int64, expr
        v, i = r  # a named tuple, as torch.return_types.topk
        assert v is r.values and i is r.indices


def test_topk_errors_are_torchs(view_tables):
    for expr, kind, message in view_tables["topk_errors"]:
        with pytest.raises(Exception) as info:
            eval(expr, {"T": T})
        assert type(info.value).__name__ == kind and str(info.value) == message, expr


def test_selection_results_equal_torchs(view_tables):
    for expr, values, dtype, shape in view_tables["selection"]:
        r = eval(expr, {"T": T})
        assert r.tolist() == values and str(r.dtype) == "attograd." + dtype and list(r.shape) == shape, expr


def test_selection_errors_are_torchs(view_tables):
    for expr, kind, message in view_tables["selection_errors"]:
        if kind is None:  # torch computes it
            eval(expr, {"T": T})
            continue
        with pytest.raises(Exception) as info:
            eval(expr, {"T": T})
        assert type(info.value).__name__ == kind and str(info.value) == message, expr


def test_random_draws_torchs_ranges(view_tables):
    # The values are attograd's generator's (torch's stream is the torch-identical generator's
    # business); the range and the dtype are torch's.
    for expr, dtype, values in view_tables["random_ranges"]:
        T.manual_seed(0)
        r = eval(expr, {"T": T})
        assert str(r.dtype) == "attograd." + dtype and sorted(set(r.tolist())) == values, expr
    big = T.zeros(2000).random_()  # float32: integers 0 .. 2^24
    assert 0 <= big.min().item() and big.max().item() <= 2 ** 24 and big.max().item() > 2 ** 22
    assert all(v == int(v) for v in big.tolist())


def test_random_in_a_graph_is_recorded_with_a_zero_gradient():
    w = T.ones(3, requires_grad=True)
    y = w * 2
    y.random_(1, 2)  # every value 1
    assert y.tolist() == [1.0, 1.0, 1.0] and y.requires_grad
    (y * w).sum().backward()
    assert w.grad.tolist() == [1.0, 1.0, 1.0]  # only through the product: the drawn values are constants
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w.random_()


def test_nn_modules_of_this_round(view_tables):
    env = {"T": T, "buffers": lambda: buffer_names(T)}
    for expr, want in view_tables["modules"]:
        got = eval(expr, env)
        got = list(got) if isinstance(got, tuple) else got
        assert got == want, expr


def test_flatten_in_a_sequential_as_the_tutorial_uses_it():
    model = T.nn.Sequential(T.nn.Linear(3, 1), T.nn.Flatten(0, 1))
    out = model(T.ones(5, 3))
    assert tuple(out.shape) == (5,)
    out.sum().backward()
    assert model[0].weight.grad.tolist() == [[5.0, 5.0, 5.0]]
    with pytest.raises(TypeError, match="unflattened_size must be tuple of ints"):
        T.nn.Unflatten(1, (2, 2.5))


def test_pow_with_a_tensor_exponent_names_torchs_nodes():
    x = T.tensor([1.0, 2.0], requires_grad=True)
    assert (x ** T.tensor([1.0, 2.0])).grad_fn.name() == "PowBackward1"
    assert T.tensor([2, 3]).unsqueeze(-1).pow(T.tensor([1, 2])).tolist() == [[2, 4], [3, 9]]
    xx = T.linspace(-1, 1, 5).unsqueeze(-1).pow(T.tensor([1, 2, 3]))  # the tutorial's features
    assert tuple(xx.shape) == (5, 3) and xx.dtype == T.float32 and xx[0].tolist() == [-1.0, 1.0, -1.0]


def test_empty_list_makes_a_float_tensor():
    assert T.tensor([]).dtype == T.float32 and tuple(T.tensor([[], []]).shape) == (2, 0)
    T.set_default_dtype(T.float64)
    assert T.tensor([]).dtype == T.float64
