"""autograd.Function subclassed in Python: ctx, saved tensors, needs_input_grad, several outputs,
double backward, gradcheck, and the errors torch raises."""

import gc

import pytest

import attograd
from attograd.autograd import Function, gradcheck, gradgradcheck


class MulConstant(Function):
    @staticmethod
    def forward(ctx, tensor, constant):
        ctx.constant = constant
        return tensor * constant

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.constant, None


class Cube(Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x ** 2  # made of ops: double backward works


class SplitSum(Function):
    """Two outputs, one of them integer (not differentiable)."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        count = attograd.tensor(a.numel())
        ctx.mark_non_differentiable(count)
        return a + b, a * b, count

    @staticmethod
    def backward(ctx, g_sum, g_prod, g_count):
        a, b = ctx.saved_tensors
        assert g_count is None or g_count.dtype == attograd.int64
        return g_sum + g_prod * b, g_sum + g_prod * a


def test_forward_and_backward():
    x = attograd.tensor([1.0, 2.0], requires_grad=True)
    y = MulConstant.apply(x, 4.0)
    assert y.grad_fn.name() == "MulConstantBackward" and y.tolist() == [4.0, 8.0]
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 4.0]


def test_needs_input_grad():
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, a, b, k):
            seen.append(ctx.needs_input_grad)
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, g, None

    a = attograd.ones(2, requires_grad=True)
    Probe.apply(a, attograd.ones(2), 3)
    with attograd.no_grad():
        Probe.apply(a, attograd.ones(2), 3)
    assert seen == [(True, False, False), (False, False, False)]


def test_several_outputs():
    a = attograd.tensor([1.0, 2.0], requires_grad=True)
    b = attograd.tensor([3.0, 5.0], requires_grad=True)
    s, p, n = SplitSum.apply(a, b)
    assert not n.requires_grad and n.item() == 2
    (s.sum() + 2 * p.sum()).backward()
    assert a.grad.tolist() == [7.0, 11.0] and b.grad.tolist() == [3.0, 5.0]


def test_double_backward_and_gradchecks():
    x = attograd.tensor([0.5, -1.5, 2.0], dtype=attograd.float64, requires_grad=True)
    (g,) = attograd.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (gg,) = attograd.autograd.grad(g.sum(), x)
    assert gg.tolist() == pytest.approx([3.0, -9.0, 12.0])
    assert gradcheck(Cube.apply, (x,))
    assert gradgradcheck(Cube.apply, (x,))
    assert gradcheck(lambda a, b: SplitSum.apply(a, b)[:2], (x, x.detach().clone().requires_grad_()))


def test_gradcheck_catches_a_wrong_backward():
    class Wrong(Function):
        @staticmethod
        def forward(ctx, x):
            return x * x

        @staticmethod
        def backward(ctx, g):
            return g * 3

    x = attograd.tensor([1.0, 2.0], dtype=attograd.float64, requires_grad=True)
    with pytest.raises(attograd.autograd.GradcheckError, match="Gradcheck failed"):
        gradcheck(Wrong.apply, (x,))
    assert gradcheck(Wrong.apply, (x,), raise_exception=False) is False


def test_errors():
    class TooMany(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g, g

    x = attograd.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        TooMany.apply(x).sum().backward()

    class Raises(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            raise ValueError("backward said no")

    with pytest.raises(ValueError, match="backward said no"):
        Raises.apply(x).sum().backward()
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        legacy = MulConstant()
    with pytest.raises(RuntimeError, match="Legacy autograd function"):
        legacy(x)

    class Dirty(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.mark_dirty(x)
            return x

    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad has been used in an in-place"):
        Dirty.apply(attograd.ones(1, requires_grad=True))
    y = attograd.ones(1)
    assert Dirty.apply(y) is y  # not recorded (nothing requires grad): the input, as it is


def test_saved_tensor_modified_in_place_is_caught():
    x = attograd.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = Cube.apply(h)
    with attograd.no_grad():
        h.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_function_keeps_working_when_the_graph_outlives_its_class():
    def build():
        class Local(Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * g * x

        x = attograd.tensor([3.0], requires_grad=True)
        return x, Local.apply(x).sum()

    x, loss = build()
    gc.collect()  # only the graph holds Local now
    loss.backward()
    assert x.grad.tolist() == [6.0]
