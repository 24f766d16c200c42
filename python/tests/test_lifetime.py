"""Lifetimes across the boundary: graphs are freed by reference counting alone (the binding makes
no cycle), cycles that user code makes through hooks are collected, and hooks and Functions keep
working for as long as the graph that holds them."""

import gc

import pytest

import attograd
from attograd.autograd import Function

live = attograd._C._live_nodes


class Square(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        ctx.note = "attributes of ctx are fine"
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * g * x


@pytest.fixture
def gc_off():
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def test_graphs_are_freed_without_the_collector(gc_off):
    base = live()
    x = attograd.randn(3, requires_grad=True)
    for _ in range(5):
        y = Square.apply(x * 2).tanh()
        y.register_hook(lambda g: g * 2)
        x.register_hook(lambda g: g)
        n = y.grad_fn
        assert live() > base
        del y, n
    assert live() == base
    z = (Square.apply(x) * 3).sum()
    z.backward()
    del z
    assert live() == base


def test_cycles_through_hooks_are_collected():
    gc.collect()
    base = live()

    def make():
        x = attograd.ones(3, requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: g * y.detach())  # the hook refers to its own tensor
        x.register_hook(lambda g: g + x.detach())
        y.marker = y  # and an attribute closes another loop (through the instance dict)

    for _ in range(10):
        make()
    assert live() > base  # the cycles run through C++: reference counting alone cannot free them
    gc.collect()
    assert live() == base


def test_a_live_graph_keeps_the_hooks_it_will_call():
    calls = []

    def build():
        x = attograd.tensor([1.0, 2.0], requires_grad=True)
        mid = x * 3
        mid.register_hook(lambda g: calls.append("mid") or g * 10)
        return x, (mid * mid).sum()

    x, loss = build()  # `mid` is gone; its node and hook live in loss's graph
    gc.collect()
    loss.backward()
    assert calls == ["mid"] and x.grad.tolist() == [180.0, 360.0]


def test_hooks_outlive_the_code_that_registered_them():
    def register(t):
        scale = 5.0
        t.register_hook(lambda g: g * scale)

    x = attograd.tensor([1.0], requires_grad=True)
    register(x)
    gc.collect()
    (x * 1).sum().backward()
    assert x.grad.tolist() == [5.0]


def test_tensors_keep_their_python_object():
    x = attograd.ones(2, requires_grad=True)
    x.tag = "mine"
    y = x * 2
    (leaf, _), (constant, _) = y.grad_fn.next_functions  # torch's: the number is a constant input
    assert leaf.variable is x and leaf.variable.tag == "mine" and constant is None
    del leaf
    y.sum().backward()
    assert x.grad is x.grad
    import weakref

    r = weakref.ref(y)
    del y
    assert r() is None


def test_a_python_subclass_keeps_its_class_through_the_engine():
    class Parameter(attograd.Tensor):  # what attograd.nn.Parameter will be
        def __init__(self, data, requires_grad=True):
            super().__init__(data)
            self.requires_grad_(requires_grad)

        def __repr__(self):
            return "Parameter containing:\n" + super().__repr__()

    p = Parameter(attograd.tensor([1.0, 2.0]))
    assert p.is_leaf and p.requires_grad and str(p).startswith("Parameter containing:\ntensor([1., 2.]")
    y = p * 3
    (leaf, _), _ = y.grad_fn.next_functions
    assert leaf.variable is p
    y.sum().backward()
    assert p.grad.tolist() == [3.0, 3.0]
    with attograd.no_grad():
        p -= 0.5 * p.grad
    assert type(p) is Parameter and p.tolist() == [-0.5, 0.5]
