"""autograd from Python: backward and grad with torch's keywords, grad mode, hooks, retain_grad,
the graph as grad_fn shows it, higher order."""

import pytest

import attograd
from attograd import autograd


def test_backward_and_grad():
    x = attograd.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    (g,) = autograd.grad(y, x, retain_graph=True)
    assert g.tolist() == [2.0, 4.0] and x.grad is None
    y.backward()
    assert x.grad.tolist() == [2.0, 4.0]
    assert x.grad is x.grad  # one Python object per tensor
    (x * 3).sum().backward()
    assert x.grad.tolist() == [5.0, 7.0]  # accumulated
    x.grad = None
    autograd.backward([(x * 2).sum()], inputs=[x])
    assert x.grad.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (x * 2).sum().backward(inputs=[])


def test_grad_options():
    x = attograd.tensor([1.0, 2.0], requires_grad=True)
    z = attograd.tensor([3.0], requires_grad=True)
    y = (x ** 3).sum()
    (g,) = autograd.grad(y, x, create_graph=True)
    (gg,) = autograd.grad(g.sum(), x)
    assert gg.tolist() == [6.0, 12.0]
    with pytest.raises(RuntimeError):
        autograd.grad((x * 2).sum(), [x, z])
    gx, gz = autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
    assert gz is None
    gx, gz = autograd.grad((x * 2).sum(), [x, z], materialize_grads=True)
    assert gz.tolist() == [0.0]
    out = x * 2
    (g,) = autograd.grad(out, x, grad_outputs=attograd.tensor([1.0, 10.0]))
    assert g.tolist() == [2.0, 20.0]


def test_second_backward_through_freed_graph_raises():
    x = attograd.tensor([1.0], requires_grad=True)
    y = (x.exp() * 2).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_grad_mode():
    x = attograd.ones(2, requires_grad=True)
    with attograd.no_grad():
        assert not attograd.is_grad_enabled()
        assert not (x * 2).requires_grad
        with attograd.enable_grad():
            assert (x * 2).requires_grad
    assert attograd.is_grad_enabled()

    @attograd.no_grad()
    def f():
        return x * 2

    assert not f().requires_grad

    @attograd.no_grad
    def g():
        return x * 2

    assert not g().requires_grad and g.__name__ == "g"
    attograd.set_grad_enabled(False)
    assert not attograd.is_grad_enabled()
    attograd.set_grad_enabled(True)
    with attograd.set_grad_enabled(False):
        assert not (x + 1).requires_grad
    assert attograd.is_grad_enabled()
    with attograd.inference_mode():
        assert not (x + 1).requires_grad


def test_graph_as_torch_shows_it():
    x = attograd.tensor([1.0, 2.0], requires_grad=True)
    w = attograd.tensor([3.0, 4.0], requires_grad=True)
    y = (x * w).tanh()
    assert y.grad_fn.name() == "TanhBackward0" and not y.is_leaf and x.is_leaf
    (mul, _), = y.grad_fn.next_functions
    assert mul.name() == "MulBackward0" and y.grad_fn is y.grad_fn
    leaves = mul.next_functions
    assert [n.name() for n, _ in leaves] == ["torch::autograd::AccumulateGrad"] * 2
    assert leaves[0][0].variable is x and leaves[1][0].variable is w
    assert x.grad_fn is None and repr(y.grad_fn).startswith("<TanhBackward0 object at 0x")


def test_hooks():
    x = attograd.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    h = x.register_hook(lambda g: seen.append(g.tolist()))
    y = x * 3
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert seen == [[30.0, 30.0]] and x.grad.tolist() == [30.0, 30.0]
    h.remove()
    (x * 1).sum().backward()
    assert len(seen) == 1
    done = []
    x.register_post_accumulate_grad_hook(lambda t: done.append(t.grad.tolist()))
    (x * 1).sum().backward()
    assert done == [[32.0, 32.0]]
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        attograd.ones(1).register_hook(lambda g: g)
    with pytest.raises(TypeError, match="must return a Tensor or None"):
        z = x * 2
        z.register_hook(lambda g: 1.0)
        z.sum().backward()


def test_hook_errors_propagate():
    x = attograd.tensor([1.0], requires_grad=True)
    y = x * 2

    def bad(g):
        raise KeyError("from the hook")

    y.register_hook(bad)
    with pytest.raises(KeyError, match="from the hook"):
        y.sum().backward()


def test_retain_grad_and_detach():
    x = attograd.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    assert y.retains_grad
    (y * y).sum().backward()
    assert y.grad.tolist() == [4.0, 8.0]
    d = y.detach()
    assert not d.requires_grad and d.is_leaf
    with attograd.no_grad():
        d[0] = 7.0
    assert y.tolist() == [7.0, 4.0]  # detach shares memory
    x.grad = attograd.zeros(2)
    assert x.grad.tolist() == [0.0, 0.0]
    with pytest.raises(RuntimeError, match="different type"):
        x.grad = attograd.zeros(2, dtype=attograd.float64)


def test_version_counter_guards_saved_tensors():
    x = attograd.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y.sin()  # saves its input y
    with attograd.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
