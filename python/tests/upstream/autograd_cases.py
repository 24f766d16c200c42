"""pytorch/pytorch test/test_autograd.py, the cases in attograd's scope, written here.

Each case is filed under the upstream test's name and keeps what that test feeds in (the same
expressions, shapes and constants; random tensors drawn by common.Fixed so that torch and attograd
see the same numbers) and what it compares, which the case returns as its observations. torch's
observations, recorded by make_upstream_fixtures.py, are the expected values."""

import gc
import weakref

from .common import Fixed, outcome, registry, values, warned

CASES, upstream = registry()


def _grads(*tensors):
    """The .grad of each tensor, as values (None where there is none)."""
    return [values(t.grad) for t in tensors]


def _both_checks(T, fn, inputs):
    """gradcheck and gradgradcheck of fn at inputs."""
    return [T.autograd.gradcheck(fn, inputs), T.autograd.gradgradcheck(fn, inputs)]


def _zero_grads(T, *tensors):
    with T.no_grad():
        for t in tensors:
            t.grad.zero_()


# ---- Functions several cases share ---------------------------------------------------------------
def _product_plus_scaled(T, once=False, grad_mode_log=None):
    """f(a, scale, b) = a + scale·b + a·b, scale a Python number; backward by hand:
    df/da = 1 + b, df/db = scale + a. once=True: a once_differentiable backward; grad_mode_log, if
    given, collects whether grad mode is on while backward runs."""

    def backward(ctx, g):
        if grad_mode_log is not None:
            grad_mode_log.append(T.is_grad_enabled())
        a, b = ctx.saved_tensors
        return g * (b + 1), None, g * (a + ctx.scale)

    class ProductPlusScaled(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, scale, b):
            ctx.scale = scale
            ctx.save_for_backward(a, b)
            return a + scale * b + a * b

    ProductPlusScaled.backward = staticmethod(T.autograd.function.once_differentiable(backward) if once else backward)
    return ProductPlusScaled


def _failing_clone(T):
    """A copy whose backward raises: the error must come out of whatever backward pass reaches it."""

    class CloneThatCannotBackward(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t.clone()

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, g):
            raise Exception("CloneThatCannotBackward: this backward fails on purpose")

    return CloneThatCannotBackward


def _pass_through(T):
    """forward returns its argument unchanged; backward passes the gradient on."""

    class PassThrough(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t

        @staticmethod
        def backward(ctx, g):
            return g

    return PassThrough


def _doubler(T, as_function):
    """t ↦ 2t, as a custom Function (its own node) or as the built-in multiplication."""
    if not as_function:
        return lambda t: t * 2

    class Doubled(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return Doubled.apply


# ---- custom Functions ----------------------------------------------------------------------------
@upstream("test_function")
def hand_written_backward_differentiated_again(T):
    """The Function's backward, run with create_graph, gives 1 + b and 2 + a, and those gradients
    have a history of their own (backward was recorded)."""
    draw = Fixed(T)
    a, b = draw.leaves(2, 5, 5)
    total = _product_plus_scaled(T).apply(a, 2, b).sum()
    total.backward(T.ones((), dtype=T.float64, requires_grad=True), create_graph=True)
    return {"grads": _grads(a, b), "recorded": [a.grad.grad_fn is not None, b.grad.grad_fn is not None]}


@upstream("test_once_differentiable")
def once_differentiable_backward_runs_without_grad(T):
    """With once_differentiable, backward sees grad mode off, and the gradients are still right."""
    modes = []
    draw = Fixed(T)
    a, b = draw.leaves(2, 5, 5)
    _product_plus_scaled(T, once=True, grad_mode_log=modes).apply(a, 2, b).sum().backward()
    return {"grad_mode_in_backward": modes, "grads": _grads(a, b)}


@upstream("test_function_returns_input")
def forward_may_return_its_argument(T):
    """A forward that returns its argument object still puts the Function on the graph (its
    backward doubles the gradient), for a leaf and for a clone, 1-D and 0-D."""

    class SameObjectDoubleGrad(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t

        @staticmethod
        def backward(ctx, g):
            return 2 * g

    grads = []
    for shape in ((1,), ()):  # 1-D and 0-D
        leaf = T.ones(shape, requires_grad=True)
        for feed in (lambda t: t, lambda t: t.clone()):
            if leaf.grad is not None:
                _zero_grads(T, leaf)
            SameObjectDoubleGrad.apply(feed(leaf)).backward()
            grads.append(values(leaf.grad))
    return {"grads": grads}


@upstream("test_function_returns_undefined_tensor")
def backward_returning_none_leaves_no_grad(T):
    """backward returning None for the only input: the leaf gets no .grad, whether the output is
    used directly, summed or fed from x², and grad(allow_unused=True) answers None."""

    class TwiceNoGradient(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return 2 * t

        @staticmethod
        def backward(ctx, g):
            return None

    x = T.ones(1, requires_grad=True)
    no_grad_after = []
    for run in (lambda: TwiceNoGradient.apply(x).backward(), lambda: TwiceNoGradient.apply(x ** 2).backward(),
                lambda: TwiceNoGradient.apply(x).sum().backward()):
        run()
        no_grad_after.append(x.grad is None)
    (gx,) = T.autograd.grad(TwiceNoGradient.apply(x), x, allow_unused=True)
    return {"no_grad_after": no_grad_after, "grad_is_none": gx is None}


@upstream("test_dont_materialize_grads")
def set_materialize_grads_false_gives_none(T):
    """An output nobody uses reaches backward as zeros by default and as None after
    ctx.set_materialize_grads(False). (Upstream makes the undefined gradient with an internal node;
    here the second output of a Function simply goes unused.)"""
    got_none = []

    class TwoCopies(T.autograd.Function):
        @staticmethod
        def forward(ctx, t, materialize):
            ctx.set_materialize_grads(materialize)
            return t.clone(), t.clone()

        @staticmethod
        def backward(ctx, g_first, g_second):
            got_none.append(g_second is None)
            return (g_first if g_second is None else g_first + g_second), None

    for materialize in (True, False):
        TwoCopies.apply(T.ones(1, requires_grad=True), materialize)[0].backward()
    return {"second_gradient_is_none": got_none}


@upstream("test_unused_grad_requires_grad_with_materialize")
def materialized_zero_grad_follows_create_graph(T):
    """grad(materialize_grads=True) fills an unused input's gradient with zeros; without
    create_graph neither gradient requires grad."""
    x, y = T.ones(10, requires_grad=True), T.ones(10, requires_grad=True)
    gx, gy = T.autograd.grad((x ** 2).sum(), (x, y), allow_unused=True, materialize_grads=True, create_graph=False)
    return {"requires_grad": [gx.requires_grad, gy.requires_grad], "unused": values(gy)}


@upstream("test_legacy_function_deprecation_exception")
def old_style_function_warns_then_raises(T):
    """A Function written the pre-1.3 way (instance methods): making one warns of the deprecation,
    calling it raises."""

    class InstanceMethods(T.autograd.Function):
        def forward(self, t):
            return t

        def backward(self, g):
            return g

    made = {}
    warnings_seen = warned(lambda: made.setdefault("fn", InstanceMethods()))
    return {"warnings": warnings_seen, "call": outcome(lambda: made["fn"](T.ones(3, 4)))}


@upstream("test_naughty_autograd_function_attribute_access")
def instantiating_a_function_warns(T):
    """Instantiating a static-method Function warns (DeprecationWarning) but makes an instance;
    calling the instance raises; apply names the node after the class."""
    PassThrough = _pass_through(T)
    made = {}
    category = warned(lambda: made.setdefault("fn", PassThrough()))[0][0]
    x = T.zeros(1, requires_grad=True)
    return {"warning": category, "is_instance": isinstance(made["fn"], PassThrough),
            "call": outcome(lambda: made["fn"](x)), "node": PassThrough.apply(x).grad_fn.name()}


@upstream("test_custom_function_exception")
def error_raised_in_backward_propagates(T):
    """An exception raised by a Function's backward comes out of backward() unchanged."""
    draw = Fixed(T)
    p, q = draw.rand(3, 3, requires_grad=True), draw.rand(3, 3, requires_grad=True)
    guarded = _failing_clone(T).apply((p + q) * (p + q))
    return {"backward": outcome(lambda: guarded.sum().backward())}


def _mixed_outputs(a, b, scale, c):
    """The forward both mixed-output Functions share: u = (a + b·c)·scale, v = (a·b + c)·scale,
    returned among non-tensors (and a itself): scale, u, None, True, v, a label, a."""
    u = a + b * c
    v = a * b + c
    u *= scale
    v *= scale
    return scale, u, None, True, v, "label", a


@upstream("test_custom_function_non_tensor_inputs_outputs")
def non_tensor_arguments_and_outputs(T):
    """Numbers, None, bools and strings pass through a Function; backward gets None for each
    non-tensor output and returns None for the number argument; a tensor argument that does not
    require grad gets none; the analytic gradients pass gradcheck."""
    none_pattern = []

    class MixedOutputs(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, scale, c):
            ctx.scale = scale
            ctx.save_for_backward(a, b, c)
            return _mixed_outputs(a, b, scale, c)

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, *g):
            none_pattern.append([x is None for x in g])
            a, b, c = ctx.saved_tensors
            s, g_u, g_v, g_a = ctx.scale, g[1], g[4], g[6]
            # du/da = s, du/db = c·s, du/dc = b·s; dv/da = b·s, dv/db = a·s, dv/dc = s; the last output is a
            return g_u * s + g_v * b * s + g_a, g_u * c * s + g_v * a * s, None, g_u * b * s + g_v * s

    draw = Fixed(T)
    a, b = draw.rand(10, requires_grad=True), draw.rand(10, requires_grad=True)
    c = draw.rand(10)
    out = MixedOutputs.apply(a, b, 7, c)
    T.autograd.backward([out[1].sum(), out[4].sum(), out[6].sum()])
    seen_by_backward = list(none_pattern)  # (gradcheck below calls backward again, as often as it likes)

    def tensor_outputs(a, b, c):
        o = MixedOutputs.apply(a, b, 7, c)
        return o[1], o[4], o[6]

    return {"non_tensors": [out[0], out[2], out[3], out[5]], "tensors": [values(out[i]) for i in (1, 4, 6)],
            "grads": _grads(a, b), "c_has_no_grad": c.grad is None, "none_in_backward": seen_by_backward,
            "gradcheck": T.autograd.gradcheck(tensor_outputs, (a, b, c))}


@upstream("test_custom_function_no_tensors")
def function_of_numbers_only(T):
    """A Function called with numbers only just returns what forward computed."""

    class NumbersOnly(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, scale, c):
            return _mixed_outputs(a, b, scale, c)

        @staticmethod
        def backward(ctx, *g):
            return g[0], g[1], None, g[2]

    return {"outputs": list(NumbersOnly.apply(0.25, 0.5, 3, 0.75))}


@upstream("test_invalid_gradients")
def gradient_of_wrong_shape_is_refused(T):
    """backward returning a gradient of another shape than its input's: an error that names the
    expected shape."""

    class WrongShapeGrad(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return T.ones(10, dtype=T.float32)

    x = T.ones(5, 5, dtype=T.float32, requires_grad=True)
    got = outcome(lambda: WrongShapeGrad.apply(x).sum().backward())
    return {"error": got["error"], "names_expected_shape": "expected shape" in got.get("message", "")}


@upstream("test_unrelated_inputs")
def check_with_an_unused_input(T):
    """gradcheck and gradgradcheck pass when one input does not enter the output (x·x of (x, y))."""
    draw = Fixed(T)
    pair = (draw.rand(10, requires_grad=True), draw.rand(10, requires_grad=True))
    return {"checks": _both_checks(T, lambda x, _y: x * x, pair)}


# ---- torch 2's Functions: forward without ctx, setup_context -------------------------------------
@upstream("test_custom_function_setup_context_simple")
def setup_context_saves_the_input(T):
    """Square with setup_context saving x: y = x², dy/dx = 2x, node named after the class."""

    class SquareWithSetup(T.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = T.tensor(0.75, dtype=T.float64, requires_grad=True)
    y = SquareWithSetup.apply(x)
    return {"y": values(y), "dy_dx": values(T.autograd.grad(y, x)[0]), "node": y.grad_fn.name()}


@upstream("test_custom_function_setup_context_multi_output")
def setup_context_reads_a_non_tensor_output(T):
    """forward returns x² and the number 2x; setup_context keeps the number from the output, and
    backward (once_differentiable) multiplies by it."""

    class SquareAndTwiceValue(T.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 2, 2 * x.item()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.slope = output[1]

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, g, _g_number):
            return g * ctx.slope

    x = T.tensor(-1.25, dtype=T.float64, requires_grad=True)
    y, slope = SquareAndTwiceValue.apply(x)
    return {"number_output": slope, "dy_dx": values(T.autograd.grad(y, x)[0])}


@upstream("test_custom_function_setup_context_multi_input")
def setup_context_reads_non_tensor_inputs(T):
    """Reshape-and-scale with separate forward and backward factors, taken from the inputs by
    setup_context: the gradient is the backward factor, in the input's shape."""

    class ReshapeScaled(T.autograd.Function):
        @staticmethod
        def forward(x, shape, forward_factor, backward_factor):
            return x.reshape(shape) * forward_factor

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, _shape, _forward_factor, ctx.backward_factor = inputs
            ctx.input_shape = x.shape

        @staticmethod
        def backward(ctx, g):
            return g.reshape(ctx.input_shape) * ctx.backward_factor, None, None, None

    draw = Fixed(T)
    results = []
    for in_shape, out_shape, forward_factor, backward_factor in [((24,), (3, 8), 7, 11), ((2, 3, 4), (6, 4), -1, 2)]:
        x = draw.leaf(*in_shape)
        total = ReshapeScaled.apply(x, out_shape, forward_factor, backward_factor).sum()
        results.append([values(total), values(T.autograd.grad(total, x)[0])])
    return {"sum_and_grad": results}


@upstream("test_custom_function_vmap_defaults")
def vmap_rule_defaults(T):
    """A Function that says nothing of vmap: generate_vmap_rule is False, and a vmap staticmethod
    exists (the default one that raises)."""

    class SquareNoVmapWord(T.autograd.Function):
        @staticmethod
        def forward(x):
            return x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            return 2 * ctx.saved_tensors[0] * g

    return {"generate_vmap_rule": SquareNoVmapWord.generate_vmap_rule, "has_vmap": hasattr(SquareNoVmapWord, "vmap")}


# ---- gradients into leaves, grad() and its checks ------------------------------------------------
def _quadratic(x, y):
    """x² + x·y + y², whose gradients are 2x + y and x + 2y."""
    return x * x + x * y + y * y


@upstream("test_accumulate_grad")
def second_backward_accumulates_in_place_unless_recording(T):
    """Two backwards of x + 2 into one leaf: the second adds into the .grad tensor the first made
    (a reference held from before sees 2) unless create_graph asks for a new tensor (it still holds
    1); a clone taken in between holds 1 either way."""
    draw = Fixed(T)
    ones = T.ones(5, 5, dtype=T.float64)
    held = {}
    for create_graph in (False, True):
        x = draw.leaf(5, 5)
        shifted = x + 2
        shifted.backward(ones, retain_graph=True)
        reference, snapshot = x.grad, x.grad.clone()
        shifted.backward(ones, create_graph=create_graph)
        held["create_graph" if create_graph else "plain"] = [values(reference), values(snapshot)]
    return held


@upstream("test_accumulate_grad_with_zero_numel_grad")
def broadcast_with_an_empty_operand(T):
    """(4, 0) + (4, 1) is (4, 0): the empty leaf gets an empty gradient, the other zeros."""
    empty, column = T.zeros(4, 0, requires_grad=True), T.ones(4, 1, requires_grad=True)
    total = empty + column
    total.sum().backward()
    return {"shape": list(total.shape), "column_grad": values(column.grad), "empty_grad_shape": list(empty.grad.shape)}


@upstream("test_hessian_vector")
def hessian_vector_product_by_a_second_backward(T):
    """The quadratic's gradients with create_graph, then backward of 2·∂x + ∂y: each leaf's .grad
    becomes its first gradient plus the Hessian-vector product."""
    x, y = Fixed(T).leaves(2, 2, 2)
    ones = T.ones(2, 2, dtype=T.float64)
    _quadratic(x, y).backward(ones, create_graph=True)
    first = _grads(x, y)
    (2 * x.grad + y.grad).backward(ones)
    return {"first": first, "after_second": _grads(x, y)}


@upstream("test_grad")
def grad_of_a_recorded_gradient(T):
    """autograd.grad of 2·∂x + ∂y with respect to x (the Hessian-vector product) leaves x.grad as
    it was; a grad_output of the wrong shape is an error."""
    x, y = Fixed(T).leaves(2, 2, 2)
    ones = T.ones(2, 2, dtype=T.float64)
    _quadratic(x, y).backward(ones, create_graph=True)
    combined = 2 * x.grad + y.grad
    (hv,) = T.autograd.grad(outputs=[combined], grad_outputs=[ones], inputs=[x], create_graph=True)
    wrong = outcome(lambda: T.autograd.grad(outputs=[combined], grad_outputs=[T.ones(2, dtype=T.float64)],
                                            inputs=[x], create_graph=True))
    return {"hv": values(hv), "x_grad": values(x.grad), "wrong_grad_output": wrong}


@upstream("test_grad_nonleaf")
def gradient_steps_on_a_non_leaf(T):
    """Five gradient steps x ← x + 0.05·∂x taken with autograd.grad (create_graph) fill no .grad;
    a final backward of x reaches the start and y through every step."""
    start, y = Fixed(T).leaves(2, 2, 2)
    ones = T.ones(2, 2, dtype=T.float64)
    x, steps = start, []
    for _ in range(5):
        (g,) = T.autograd.grad(_quadratic(x, y), x, grad_outputs=ones, create_graph=True)
        steps.append(values(g))
        x = x + 0.05 * g
    untouched = [y.grad is None, x.grad is None]
    x.backward(ones)
    return {"steps": steps, "untouched": untouched, "final": _grads(y, start)}


@upstream("test_grad_nonleaf_many_outputs")
def grad_with_respect_to_chunks(T):
    """grad of top + 2·bottom with respect to the two chunks of x stops at the chunks: x's hook
    does not run and x.grad stays None."""
    draw = Fixed(T)
    x = draw.leaf(4, 2)
    top, bottom = x.chunk(2)
    leaf_hook_calls = []
    x.register_hook(lambda g: leaf_hook_calls.append(g))
    seed = draw.randn(2, 2)
    g_top, g_bottom = T.autograd.grad(top + 2 * bottom, [top, bottom], grad_outputs=seed, create_graph=True)
    return {"grads": [values(g_top), values(g_bottom)], "leaf_hook_ran": bool(leaf_hook_calls),
            "leaf_grad_is_none": x.grad is None}


@upstream("test_grad_nonleaf_register_hook")
def hook_on_one_unbound_piece(T):
    """Backward from each unbound piece of x in turn: the hook on piece 0 sees its gradient once
    and None for the other pieces' backwards; x.grad accumulates; the pieces keep no .grad."""
    x = Fixed(T).leaf(5)
    pieces = x.unbind()
    piece0_saw = []
    pieces[0].register_hook(lambda g: piece0_saw.append(None if g is None else values(g)))
    leaf_grads = []
    for piece in pieces:
        piece.backward()
        leaf_grads.append(values(x.grad))
    return {"piece0_hook": piece0_saw, "leaf_grads": leaf_grads,
            "pieces_without_grad": [p.grad is None for p in pieces]}


@upstream("test_grad_materialize_grads")
def materialized_higher_derivatives(T):
    """d(x·a)/dx = a does not depend on x: the next derivative is None with allow_unused, 0 when
    materialized (and the one after, too); materialize_grads with allow_unused=False is refused."""
    x, a = T.tensor(0.5, requires_grad=True), T.tensor(1.0, requires_grad=True)
    product = x * a
    first = T.autograd.grad(product, x, create_graph=True)
    unused = T.autograd.grad(first, x, create_graph=True, allow_unused=True)
    second = T.autograd.grad(first, x, create_graph=True, allow_unused=True, materialize_grads=True)
    third = T.autograd.grad(second, x, materialize_grads=True)
    return {"unused_is_none": unused[0] is None, "second": second[0].item(), "third": third[0].item(),
            "without_allow_unused": outcome(lambda: T.autograd.grad(product, x, allow_unused=False,
                                                                      materialize_grads=True))}


@upstream("test_sharded_grad")
def gradients_in_shards_then_backward(T):
    """The loss's gradient with respect to ten intermediates, taken two at a time, then fed to
    backward of the intermediates: the leaves get the chain rule's product."""
    leaves = [T.zeros(5, 5, dtype=T.float64, requires_grad=True) for _ in range(10)]
    middles = [k * leaf + leaf * leaf for k, leaf in enumerate(leaves)]
    loss = sum(k * m for k, m in enumerate(middles)).sum()
    d_middles = []
    for first in range(0, 10, 2):
        d_middles.extend(T.autograd.grad(loss, middles[first:first + 2]))
    T.autograd.backward(middles, d_middles)
    return {"leaf_grads": _grads(*leaves)}


@upstream("test_backward_badcalls")
def backward_of_a_constant(T):
    """backward of a tensor that does not require grad is an error."""
    return {"backward": outcome(lambda: T.ones(1).backward())}


@upstream("test_grad_badcalls")
def grad_needs_outputs_and_inputs_that_require_grad(T):
    """grad with a constant output, or with a constant input, says 'does not require grad'; with
    both requiring grad it answers 2x."""
    constant = T.ones(1)
    squared = constant ** 2
    refused = [outcome(lambda: T.autograd.grad(constant, squared)), outcome(lambda: T.autograd.grad(squared, constant))]
    x = T.ones(1, requires_grad=True)
    return {"errors": [r["error"] for r in refused],
            "say_why": ["does not require grad" in r["message"] for r in refused],
            "ok": values(T.autograd.grad(x ** 2, x)[0])}


@upstream("test_grad_empty_inputs")
def grad_with_no_inputs(T):
    """grad with an empty list of inputs is an error."""
    x = T.tensor([1.0], requires_grad=True)
    return {"grad": outcome(lambda: T.autograd.grad(2 * x, [], grad_outputs=T.tensor([1.0])))}


@upstream("test_grad_unreachable")
def grad_of_an_input_the_output_does_not_use(T):
    """An input the output does not depend on gets None under allow_unused (whether or not it has
    been used in another graph), and is an error naming allow_unused without it."""
    x, y = T.ones(1, requires_grad=True), T.ones(1, requires_grad=True)
    _elsewhere = (x * 2, y * 2)  # both leaves have been used, so their accumulators exist
    gx, gy = T.autograd.grad(x * 2, [x, y], allow_unused=True)
    fresh = T.ones(1, requires_grad=True)
    gx2, g_fresh = T.autograd.grad(x * 2, [x, fresh], allow_unused=True)
    refused = outcome(lambda: T.autograd.grad(x * 2, [x, y], allow_unused=False))
    return {"grads": [values(gx), gy is None, values(gx2), g_fresh is None], "error": refused["error"],
            "names_allow_unused": "Set allow_unused=True" in refused["message"]}


@upstream("test_grad_unreachable_discovery")
def unreachable_nodes_do_not_run(T):
    """grad or backward asked only for inputs the output does not reach runs no node of the graph
    (the Function's backward counts its calls)."""
    calls = []

    class CountingPassThrough(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t

        @staticmethod
        def backward(ctx, g):
            calls.append(1)
            return g

    draw = Fixed(T)
    out = CountingPassThrough.apply(draw.leaf(1) * 2)
    other = draw.leaf(1)
    (g_other,) = T.autograd.grad(out, (other,), allow_unused=True)
    out = CountingPassThrough.apply(draw.leaf(1) * 2)
    other, added = draw.leaf(1), draw.leaf(1)
    g_other2, g_added = T.autograd.grad(out + added, (other, added), allow_unused=True)
    out = CountingPassThrough.apply(draw.leaf(1) * 2)
    other = draw.leaf(1)
    T.autograd.backward(out, inputs=(other,))
    return {"none": [g_other is None, g_other2 is None, g_added is not None, other.grad is None],
            "backward_calls": len(calls)}


# ---- tensor hooks and node hooks -----------------------------------------------------------------
@upstream("test_hooks")
def tensor_hooks_added_removed_and_rewriting(T):
    """Hooks on x and z = x² + 2x + x·y + y: each backward calls every hook registered (a running
    total of their step sizes), removed ones no more; a hook's return value replaces the gradient,
    on the intermediate z and on the leaf y."""
    x = T.ones(5, 5, requires_grad=True)
    y = (T.ones(5, 5) * 4).requires_grad_(True)
    total, kinds = [0], []

    def counting(step):
        def hook(g):
            kinds.append(isinstance(g, T.Tensor))
            total[0] += step

        return hook

    z = x * x + 2 * x + x * y + y
    x.register_hook(counting(0))
    by_one = z.register_hook(counting(1))
    totals = []

    def run():
        z.backward(T.ones(5, 5), retain_graph=True)
        totals.append(total[0])

    run()
    by_two = z.register_hook(counting(2))
    run()
    by_two.remove()
    run()
    by_one.remove()
    z.register_hook(lambda g: g * 2)
    _zero_grads(T, y)
    z.backward(T.ones(5, 5), retain_graph=True)
    y_grads = [values(y.grad)]
    y.register_hook(lambda g: g * 2)
    _zero_grads(T, y)
    z.backward(T.ones(5, 5))
    y_grads.append(values(y.grad))
    return {"totals": totals, "all_tensors": all(kinds), "y_grads": y_grads}


@upstream("test_hook_with_no_name")
def hook_that_is_a_callable_object(T):
    """A hook may be any callable, one without a __name__ too."""

    class CopyGradient:
        def __call__(self, g):
            return g.clone()

    t = Fixed(T).leaf(5).clone()
    t.register_hook(CopyGradient())
    t.sum().backward()
    return {"ran": True}


@upstream("test_prehook_ordering")
def tensor_hooks_before_node_prehooks(T):
    """On b = a.clone() and on a's accumulator, tensor hooks (×3) run before node pre-hooks (×2)
    whatever order they were registered in, for backward, for grad, and for backward(inputs=b)."""
    order = []

    def tensor_hook(g):
        order.append("tensor")
        return g * 3

    def node_prehook(grads):
        order.append("node")
        return tuple(2 * g for g in grads)

    a = T.tensor(1.0, requires_grad=True)
    b = a.clone()
    accumulator = b.grad_fn.next_functions[0][0]
    for register, hook in [(b.grad_fn.register_prehook, node_prehook), (b.register_hook, tensor_hook),
                           (b.grad_fn.register_prehook, node_prehook), (a.register_hook, tensor_hook),
                           (accumulator.register_prehook, node_prehook), (a.register_hook, tensor_hook)]:
        register(hook)
    orders = []
    for run in (lambda: b.sum().backward(retain_graph=True),
                lambda: T.autograd.grad(b.sum(), inputs=(a,), retain_graph=True),
                lambda: b.sum().backward(inputs=(b,))):
        order.clear()
        run()
        orders.append(list(order))
    return {"orders": orders, "b_grad": b.grad.item(), "a_grad": a.grad.item()}


@upstream("test_retains_grad_can_always_observe_tensor_prehook")
def retained_grad_sees_every_tensor_hook(T):
    """retain_grad sees the gradient after all of the tensor's hooks (×2 each), those registered
    after it too."""
    retained = []
    for steps in (["hook", "retain", "hook"], ["retain", "hook"]):
        a = T.tensor(1.0, requires_grad=True)
        b = a.clone()
        for step in steps:
            if step == "hook":
                b.register_hook(lambda g: g * 2)
            else:
                b.retain_grad()
        b.clone().backward()
        retained.append(b.grad.item())
    return {"retained": retained}


@upstream("test_accumulate_grad_posthooks_can_observe_tensor_prehook")
def accumulator_hooks_see_the_hooked_gradient(T):
    """The accumulator node's pre- and post-hooks both see the gradient the leaf's tensor hook (×2)
    made; its post-hook gets no grad_inputs."""
    a = T.tensor(1.0, requires_grad=True)
    log = []
    b = a.clone()
    accumulator = b.grad_fn.next_functions[0][0]
    accumulator.register_hook(lambda g_in, g_out: log.append(["post", len(g_in), [values(g) for g in g_out]]))
    accumulator.register_prehook(lambda g_out: log.append(["pre", len(g_out), [values(g) for g in g_out]]))
    a.register_hook(lambda g: g * 2)
    b.backward()
    return {"log": log}


@upstream("test_accumulate_grad_posthooks_should_not_execute")
def hooks_off_the_requested_path_do_not_run(T):
    """backward(inputs=[b]) runs neither a's tensor hook nor the accumulator post-hook of a (both
    would raise) and fills b.grad."""

    def must_not_run(*_):
        raise RuntimeError

    a, b = T.tensor(1.0, requires_grad=True), T.tensor(1.0, requires_grad=True)
    a.register_hook(must_not_run)
    c = a.clone()
    c.grad_fn.next_functions[0][0].register_hook(must_not_run)
    total = a + b + c
    return {"backward": outcome(lambda: total.sum().backward(inputs=[b])), "b_grad": b.grad.item()}


@upstream("test_hook_edge_case_when_called_with_grad")
def which_hooks_run_for_grad_and_backward_inputs(T):
    """c = (2a)·2 with tensor hooks on a and b = 2a and node hooks on b's node and a's accumulator:
    how many tensor hooks, post-hooks and pre-hooks run for grad(c, b), grad(c, (a, b)),
    backward() and backward(inputs=(a, b))."""
    a = T.tensor(1.0, requires_grad=True)
    b = a * 2
    c = b * 2
    counts = {"tensor": 0, "post": 0, "pre": 0}

    def counter(kind):
        def hook(*_):
            counts[kind] += 1

        return hook

    accumulator = b.grad_fn.next_functions[0][0]
    a.register_hook(counter("tensor"))
    b.register_hook(counter("tensor"))
    for node in (accumulator, b.grad_fn):
        node.register_hook(counter("post"))
        node.register_prehook(counter("pre"))
    tallies = []
    for run in (lambda: T.autograd.grad(c, inputs=(b), retain_graph=True),
                lambda: T.autograd.grad(c, inputs=(a, b), retain_graph=True),
                lambda: c.backward(retain_graph=True),
                lambda: c.backward(inputs=(a, b), retain_graph=True)):
        counts.update(tensor=0, post=0, pre=0)
        run()
        tallies.append([counts["tensor"], counts["post"], counts["pre"]])
    return {"tensor_post_pre": tallies}


@upstream("test_grad_fn_prehooks")
def node_prehooks_rewrite_the_incoming_gradient(T):
    """On the node of 2a (a custom Function's, then the built-in op's): three pre-hooks that
    double the gradient and some that return None or their argument, two post-hooks that see the
    rewritten gradient and what backward made of it; a pre-hook returning None changes nothing."""
    runs = []
    for as_function in (True, False):
        double = _doubler(T, as_function)
        a = T.tensor([1.0], requires_grad=True)
        out = double(a)
        post_calls, pre_calls, post_saw = [0], [0], []

        def post(g_in, g_out):
            post_saw.append([pre_calls[0], values(g_out[0]), values(g_in[0])])
            post_calls[0] += 1
            return g_in

        def doubling_pre(g_out):
            pre_calls[0] += 1
            return (g_out[0] * 2,)

        node = out.grad_fn
        for kind, hook in [("post", post), ("post", post), ("pre", doubling_pre), ("pre", lambda g: None),
                           ("pre", doubling_pre), ("pre", doubling_pre), ("pre", lambda g: g), ("pre", lambda g: None)]:
            (node.register_hook if kind == "post" else node.register_prehook)(hook)
        out.sum().backward()

        def counting_pre(g_out):
            pre_calls[0] += 1

        b = T.ones(3, 3, requires_grad=True)
        out_b = double(b)
        out_b.grad_fn.register_prehook(counting_pre)
        out_b.sum().backward()
        runs.append([post_calls[0], pre_calls[0], post_saw, values(a.grad), values(b.grad)])
    return {"runs": runs}


@upstream("test_grad_fn_prehooks_multiple_outputs")
def node_prehook_of_a_three_output_function(T):
    """A Function (x, k, y) ↦ (2k·x, k, 2k·y) with k a number: one node for both tensor outputs;
    its pre-hook gets None for the number output and doubles the other two."""

    class ScaleBoth(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, k, y):
            ctx.k = k
            return 2 * k * x, k, 2 * k * y

        @staticmethod
        def backward(ctx, g_x, _g_k, g_y):
            return 2 * ctx.k * g_x, None, 2 * ctx.k * g_y

    calls, number_grad_none = [0], []

    def pre(g_out):
        g_x, g_k, g_y = g_out
        number_grad_none.append(g_k is None)
        calls[0] += 1
        return g_x * 2, None, g_y * 2

    x, y = Fixed(T).leaves(2, 3, 3)
    sx, _, sy = ScaleBoth.apply(x, 3, y)
    sx.grad_fn.register_prehook(pre)
    (sx + sy).sum().backward()
    return {"calls": calls[0], "number_grad_none": number_grad_none, "grads": _grads(x, y),
            "one_node": sx.grad_fn is sy.grad_fn}


@upstream("test_grad_fn_prehooks_remove_hooks")
def removing_node_prehooks(T):
    """A removed pre-hook does not run; a pre-hook that removes two others (one already removed)
    during the backward pass; the gradient is 2 throughout."""
    runs = []
    for as_function in (True, False):
        double = _doubler(T, as_function)
        a = T.ones(3, 3, requires_grad=True)
        out = double(a)
        calls = [0]

        def counting(g_out):
            calls[0] += 1

        removed = out.grad_fn.register_prehook(counting)
        out.grad_fn.register_prehook(counting)
        removed.remove()
        out.sum().backward()
        first = [values(a.grad), calls[0]]

        a = T.ones(3, 3, requires_grad=True)
        out = double(a)
        calls = [0]
        handles = []

        def remover(g_out):
            for h in handles:
                h.remove()

        def counting_again(g_out):
            calls[0] += 1

        out.grad_fn.register_prehook(remover)
        handles.extend(out.grad_fn.register_prehook(counting_again) for _ in range(2))
        handles[1].remove()
        out.sum().backward()
        runs.append([first, values(a.grad), calls[0]])
    return {"runs": runs}


@upstream("test_hook_none")
def hooks_on_outputs_with_and_without_gradient(T):
    """A Function passing (x, y) through, y not requiring grad (needs_input_grad says so): hooks on
    both outputs see a gradient; backward's None for y is accepted."""
    needs = []

    class PassBoth(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            needs.append(list(ctx.needs_input_grad))
            return x, y

        @staticmethod
        def backward(ctx, g_x, g_y):
            return g_x, None

    hook_saw_grad = []
    draw = Fixed(T)
    x, y = draw.leaf(5, 5), draw.randn(5, 5)
    out_x, out_y = PassBoth.apply(x, y)
    out_x.register_hook(lambda g: hook_saw_grad.append(g is not None))
    out_y.register_hook(lambda g: hook_saw_grad.append(g is not None))
    total = out_y
    for row in out_x:  # out_y plus every row of out_x, broadcast
        total = total + row
    total.sum().backward()
    return {"needs_input_grad": needs, "hooks_saw_grad": hook_saw_grad, "x_grad": values(x.grad)}


@upstream("test_retain_grad")
def retain_grad_on_intermediate_and_leaf(T):
    """retain_grad (twice: no double counting) on h = 3·input keeps h's gradient, accumulated over
    two backwards; on a leaf it changes nothing."""
    inp = Fixed(T).rand(1, 3, requires_grad=True)
    h = inp * 3
    out = (h * h).sum()
    h.retain_grad()
    h.retain_grad()
    h_grads = []
    for _ in range(2):
        out.backward(retain_graph=True)
        h_grads.append(values(h.grad))
    _zero_grads(T, inp)
    inp.retain_grad()
    inp.retain_grad()
    out.backward()
    return {"h_grads": h_grads, "input_grad": values(inp.grad), "retains": [h.retains_grad, inp.retains_grad]}


# ---- backward(): roots, gradients, inputs= ------------------------------------------------------
@upstream("test_backward")
def backward_of_a_rational_expression(T):
    """backward of a leaf itself, then of x + y·z + 4z²·x / y (y kept away from 0): every leaf gets
    its partial derivative times the same upstream gradient."""
    draw = Fixed(T)
    v, x = draw.leaves(2, 5, 5)
    y = (draw.rand(5, 5) + 0.1).requires_grad_(True)
    z = draw.leaf(5, 5)
    seed = draw.randn(5, 5)
    v.backward(seed)
    (x + y * z + 4 * z ** 2 * x / y).backward(seed)
    return {"grads": _grads(v, x, y, z)}


@upstream("test_multi_backward")
def backward_of_two_roots_sharing_a_node(T):
    """backward([x + y + 2q, a·b + 2q], [gz, gc]): q gets 2·(gz + gc)."""
    draw = Fixed(T)
    x, y, q, a, b = draw.leaves(5, 5, 5)
    twice_q = q * 2
    roots = [x + y + twice_q, a * b + twice_q]
    T.autograd.backward(roots, [draw.randn(5, 5), draw.randn(5, 5)])
    return {"grads": _grads(x, y, q, a, b)}


@upstream("test_multi_backward_no_grad")
def backward_with_a_root_that_needs_no_grad(T):
    """One of the roots does not require grad: an error."""
    draw = Fixed(T)
    x, y = draw.leaf(5, 5), draw.randn(5, 5)
    roots = [x + y, y * 2]
    return {"error": outcome(lambda: T.autograd.backward(roots, [T.ones(5, 5, dtype=T.float64)] * 2))["error"]}


@upstream("test_backward_with_inputs")
def backward_restricted_to_inputs(T):
    """backward(inputs=...) fills only the listed leaves' .grad (a list of both, of one, or one
    tensor alone); an empty list is an error saying it cannot be empty."""
    x, y = Fixed(T).leaves(2, 2, 2)
    ones = T.ones(2, 2, dtype=T.float64)
    grads = []
    for k, inputs in enumerate(([x, y], [x], [y], y)):
        if k:
            _zero_grads(T, x, y)
        T.autograd.backward(_quadratic(x, y), ones, inputs=inputs)
        grads.append(_grads(x, y))
    empty = outcome(lambda: T.autograd.backward(_quadratic(x, y), ones, inputs=[]))
    return {"grads": grads, "empty": empty["error"], "says_cannot_be_empty": "cannot be empty" in empty["message"]}


@upstream("test_backward_with_scalar_input")
def backward_inputs_may_be_one_scalar(T):
    """inputs= a 0-d tensor: d(x²)/dx = 2x."""
    x = T.tensor(-0.625, dtype=T.float64, requires_grad=True)
    (x ** 2).backward(inputs=x)
    return {"grad": values(x.grad)}


@upstream("test_backward_with_nonleaf_inputs")
def backward_into_a_non_leaf_input(T):
    """inputs= may name a non-leaf (x·1): it gets a .grad of its own, as do the leaves listed; a
    leaf the output does not use stays without."""
    draw = Fixed(T)
    x = draw.leaf(2, 2)
    x_times_one = x * 1
    y, unused = draw.leaves(2, 2, 2)
    out = _quadratic(x_times_one, y)
    ones = T.ones(2, 2, dtype=T.float64)
    out.backward(ones, create_graph=True, inputs=[x, y, x_times_one])
    grads = _grads(y, x, x_times_one)
    out.backward(ones, create_graph=True, inputs=[unused])
    return {"grads": grads, "unused_has_no_grad": unused.grad is None}


@upstream("test_dependent_backward")
def backward_of_a_root_and_its_function(T):
    """backward([y, z]) with y = x² and z = y³: x gets 2x·(gy + 3y²·gz)."""
    draw = Fixed(T)
    x = draw.leaf(10)
    y = x ** 2
    z = y ** 3
    T.autograd.backward([y, z], [draw.randn(10), draw.randn(10)])
    return {"grad": values(x.grad)}


@upstream("test_duplicate_backward_root")
def the_same_root_twice(T):
    """backward([x, x], [g, g]) counts the root twice: the leaves get 2g times the other factor."""
    draw = Fixed(T)
    a, b = draw.leaves(2, 5, 5)
    product = a * b
    seed = draw.randn(5, 5)
    T.autograd.backward([product, product], [seed, seed])
    return {"grads": _grads(a, b)}


@upstream("test_backward_no_grad")
def backward_of_a_non_scalar_without_gradient(T):
    """backward of a (5, 5) root with gradient None is an error."""
    shifted = T.ones(5, 5, requires_grad=True) + 2
    return {"error": outcome(lambda: T.autograd.backward([shifted], [None]))["error"]}


@upstream("test_backward_twice_without_saved_values")
def backward_twice_through_an_addition(T):
    """An addition saves nothing, so its graph can be walked twice without retain_graph."""
    b = T.tensor([0.5, -1.0, 2.0], dtype=T.float64, requires_grad=True)
    c = b + 1
    for _ in range(2):
        c.backward(T.tensor([1, 1, 1], dtype=T.float64))
    return {"grad": values(b.grad)}


@upstream("test_backward_copy")
def shared_subexpressions_reach_the_leaves(T):
    """(a + b) + c with a, c from x and b from y, then each doubled four times and added again:
    x gets 2 + 2·16, y gets 1 + 16."""
    x, y = T.ones(5, 5, requires_grad=True), T.ones(5, 5, requires_grad=True)
    a, b, c = x + 2, y + 2, x + 2
    early = (a + b) + c
    for _ in range(4):
        a, b, c = a * 2, b * 2, c * 2
    (early + (a + b + c)).backward(T.ones(5, 5))
    return {"grads": _grads(x, y)}


# ---- grad mode: no_grad, enable_grad, set_grad_enabled -------------------------------------------
@upstream("test_no_grad")
def no_grad_as_block_and_as_decorator(T):
    """Results computed under no_grad, in a block or in a function decorated by no_grad() or
    no_grad(fn), neither require grad nor have a node, and backward of them is an error; calling
    the decorated function inside no_grad leaves grad mode off after it."""
    x = T.ones(5, 5, requires_grad=True)
    y = T.ones(5, 5) * 4
    with T.no_grad():
        in_block = x + y

    def add(p, q):
        return p + q

    runs = []
    for decorated in (T.no_grad()(add), T.no_grad(add)):
        result = decorated(x, y)
        runs.append([in_block.requires_grad, in_block.grad_fn is None, result.requires_grad, result.grad_fn is None,
                     outcome(lambda: result.backward(T.ones(5, 5)))["error"]])
    with T.no_grad():
        before = T.is_grad_enabled()
        decorated(x, y)
        after = T.is_grad_enabled()
    return {"runs": runs, "modes_inside_block": [before, after]}


@upstream("test_enable_grad_decorator_no_paren")
def enable_grad_decorator_without_parentheses(T):
    """@enable_grad (the class itself, not an instance) turns grad mode on inside the function."""
    x = T.ones(1, requires_grad=True)

    @T.enable_grad
    def doubled(t):
        return t * 2

    with T.no_grad():
        out = doubled(x)
    return {"requires_grad": out.requires_grad}


@upstream("test_set_grad_generator_functions")
def decorated_generators_hold_their_mode_only_inside(T):
    """A generator decorated by no_grad() (enable_grad()) runs its body with grad off (on), and the
    caller's loop body, between its yields, keeps the caller's mode."""
    in_generator, in_caller = [], []

    def generator_in(mode):
        @mode()
        def numbers():
            for k in range(3):
                in_generator.append(T.is_grad_enabled())
                yield k

        return numbers

    for decorator, caller_mode in ((T.no_grad, T.enable_grad), (T.enable_grad, T.no_grad)):
        with caller_mode():
            for _ in generator_in(decorator)():
                in_caller.append(T.is_grad_enabled())
    return {"in_generator": in_generator, "in_caller": in_caller}


@upstream("test_set_grad_generator_functions_recursive")
def decorators_and_blocks_nested_recursively(T):
    """Functions decorated by enable_grad()/no_grad() calling each other four deep, then the same
    with with-blocks, under either outer mode: each level sees its own mode, restored after the
    call below it returns."""
    seen = []

    @T.enable_grad()
    def on_decorated(depth):
        seen.append(T.is_grad_enabled())
        if depth:
            off_decorated(depth - 1)
            seen.append(T.is_grad_enabled())

    @T.no_grad()
    def off_decorated(depth):
        seen.append(T.is_grad_enabled())
        if depth:
            on_decorated(depth - 1)
            seen.append(T.is_grad_enabled())

    def in_block(mode, other, depth):
        with mode():
            seen.append(T.is_grad_enabled())
            if depth:
                in_block(other, mode, depth - 1)
                seen.append(T.is_grad_enabled())

    for outer in (T.enable_grad, T.no_grad):
        with outer():
            on_decorated(4)
            seen.append(T.is_grad_enabled())
            in_block(T.enable_grad, T.no_grad, 4)
            seen.append(T.is_grad_enabled())
    return {"seen": seen}


@upstream("test_set_grad_coroutines")
def no_grad_coroutine_driven_by_send(T):
    """A no_grad() generator driven by send: its body runs with grad off at every resumption and
    sees what was sent; the sender keeps grad on."""
    seen = []

    @T.no_grad()
    def echo(n=4):
        seen.append(T.is_grad_enabled())
        for k in range(n):
            received = yield k
            seen.append([T.is_grad_enabled(), received])

    with T.enable_grad():
        coroutine, reply = echo(), None
        try:
            while True:
                reply = coroutine.send(reply)
                seen.append(["sender", T.is_grad_enabled()])
        except StopIteration:
            pass
    return {"seen": seen}


@upstream("test_set_grad_coroutines_benign_exceptions")
def no_grad_coroutine_catching_thrown_exceptions(T):
    """Exceptions thrown into a no_grad() generator and caught there: it keeps running with grad
    off (negating what it yields after the first), the thrower keeps grad on."""

    class Harmless(Exception):
        pass

    seen = []

    @T.no_grad()
    def tolerant(n=4):
        negate = False
        for k in range(n):
            try:
                seen.append(T.is_grad_enabled())
                yield -k if negate else k
            except Harmless:
                seen.append(["caught", T.is_grad_enabled()])
                negate = True

    with T.enable_grad():
        coroutine = tolerant()
        first = next(coroutine)
        yielded = []
        try:
            while True:
                yielded.append(coroutine.throw(Harmless))
                seen.append(["thrower", T.is_grad_enabled()])
        except StopIteration:
            pass
    return {"first": first, "yielded": yielded, "seen": seen}


@upstream("test_set_grad_coroutines_critical_exceptions")
def enable_grad_coroutine_raising_another_exception(T):
    """An exception thrown into an enable_grad() generator that raises another one: the handler in
    the generator runs with grad on, the caller's handler with grad off again."""

    class Fatal(Exception):
        pass

    class Follows(Exception):
        pass

    seen = []

    @T.enable_grad()
    def fragile(n=4):
        for k in range(n):
            try:
                yield k
            except Fatal:
                seen.append(T.is_grad_enabled())
                raise Follows from None

    with T.no_grad():
        coroutine = fragile()
        next(coroutine)
        try:
            coroutine.throw(Fatal)
        except Follows:
            seen.append(["caller", T.is_grad_enabled()])
    return {"seen": seen}


@upstream("test_set_grad_coroutines_exit")
def no_grad_coroutine_closed_early(T):
    """Closing a no_grad() generator after five values: its GeneratorExit handler runs with grad
    off, and the caller is back to grad on."""
    seen = []

    @T.no_grad()
    def counter():
        for k in range(10):
            try:
                yield k
            except GeneratorExit:
                seen.append(T.is_grad_enabled())
                raise

    with T.enable_grad():
        coroutine = counter()
        for _ in range(5):
            next(coroutine)
        coroutine.close()
        seen.append(T.is_grad_enabled())
    return {"seen": seen}


@upstream("test_no_grad_python_function")
def custom_function_under_no_grad(T):
    """A custom Function applied under no_grad gives a result that does not require grad."""

    class PlusOne(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t + 1

        @staticmethod
        def backward(ctx, g):
            return g

    with T.no_grad():
        out = PlusOne.apply(T.ones(5, 5, requires_grad=True))
    return {"requires_grad": out.requires_grad}


@upstream("test_grad_mode_class_decoration")
def decorating_a_class_with_no_grad(T):
    """no_grad() on a class warns that decorating classes is deprecated; the class is left as it
    was (its methods run in the caller's mode)."""
    modes = []

    def define_and_use():
        @T.no_grad()
        class Probe:
            def __init__(self):
                modes.append(T.is_grad_enabled())

            def look(self):
                modes.append(T.is_grad_enabled())

        Probe().look()

    got = warned(define_and_use)
    return {"categories": [w[0] for w in got],
            "say_deprecated": ["Decorating classes is deprecated" in w[1] for w in got],
            "modes": modes}


@upstream("test_set_grad_enabled")
def set_grad_enabled_as_block_and_call(T):
    """set_grad_enabled(False)/(True) as blocks, and set_grad_enabled(True) called as a function
    inside a False block (it takes effect at once)."""
    x = T.tensor([1.0], requires_grad=True)
    with T.set_grad_enabled(False):
        off = x * 2
    with T.set_grad_enabled(True):
        on = x * 2
    with T.set_grad_enabled(False):
        T.set_grad_enabled(True)
        switched = x * 2
    return {"requires_grad": [off.requires_grad, on.requires_grad, switched.requires_grad]}


@upstream("test_set_grad_enabled_wraps")
def set_grad_enabled_decorating_a_function(T):
    """set_grad_enabled(False) used as a decorator (applied at once, or made first and applied
    later) does not change the mode where it is made; the wrapped function runs with grad off."""
    runs = []

    def sine(t):
        return t.sin()

    for apply_at_once in (True, False):
        with T.enable_grad():
            if apply_at_once:
                wrapped = T.set_grad_enabled(False)(sine)
                mode_after = T.is_grad_enabled()
            else:
                decorator = T.set_grad_enabled(False)
                mode_after = T.is_grad_enabled()
                wrapped = decorator(sine)
            runs.append([mode_after, T.is_grad_enabled(), wrapped(T.zeros(1, requires_grad=True)).requires_grad])
    return {"runs": runs}


@upstream("test_requires_grad")
def requires_grad_propagates_through_ops(T):
    """A sum of constants does not require grad; adding a leaf that does makes the result require
    it, and the leaf gets ones."""
    draw = Fixed(T)
    x, y = draw.randn(5, 5), draw.randn(5, 5)
    z = draw.leaf(5, 5)
    constants = x + y
    total = constants + z
    total.backward(T.ones(5, 5, dtype=T.float64))
    return {"requires_grad": [constants.requires_grad, total.requires_grad], "z_grad": values(z.grad)}


@upstream("test_requires_grad_")
def requires_grad_in_place_switch(T):
    """requires_grad_() returns the tensor itself and switches the flag on leaves both ways; a
    non-leaf cannot be switched off."""
    draw = Fixed(T)
    x, y = draw.randn(5, 5), draw.leaf(5, 5)
    returned_self, flags = [], []

    def switch(t, *arg):
        returned_self.append(t.requires_grad_(*arg) is t)
        flags.append(t.requires_grad)

    switch(x)
    switch(y)
    switch(x, True)
    switch(y, True)
    product = x * y
    refused = outcome(lambda: product.requires_grad_(False))["error"]
    switch(product)
    switch(x, False)
    switch(y, False)
    return {"returned_self": returned_self, "flags": flags, "non_leaf_off": refused}


# ---- the graph: next_functions, non-differentiable and returned-twice outputs, mark_dirty ---------
@upstream("test_next_functions")
def next_functions_of_an_addition(T):
    """x + y of two leaves points at their two accumulators, each at output 0; (x + y) + 5 points
    at the sum's node and at nothing for the constant."""
    x, y = Fixed(T).leaves(2, 5, 5)
    total = x + y
    edges = total.grad_fn.next_functions
    shifted_edges = (total + 5).grad_fn.next_functions
    return {"sum": [len(edges)] + [[type(node).__name__, index] for node, index in edges],
            "shifted": [len(shifted_edges), shifted_edges[0][0] is total.grad_fn, shifted_edges[1][0] is None]}


@upstream("test_mark_non_differentiable")
def non_differentiable_mask(T):
    """A Function returning the mask x > 0, marked non-differentiable: the mask does not require
    grad, and masked_fill by it passes gradient 1 where x ≤ 0 and 0 elsewhere."""

    class PositiveMask(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            mask = t > 0
            ctx.mark_non_differentiable(mask)
            return mask

        @staticmethod
        def backward(ctx, g):
            return g.to(T.float64) * 0

    x = Fixed(T).leaf(5, 5)
    mask = PositiveMask.apply(x)
    x.masked_fill(mask, 0).sum().backward()
    return {"mask_requires_grad": mask.requires_grad, "grad": values(x.grad)}


@upstream("test_mark_non_differentiable_mixed")
def one_output_marked_non_differentiable(T):
    """Outputs x + 1 (marked non-differentiable) and x + 2: only the second requires grad; backward
    gets zeros for the first and the incoming ones for the second."""
    seen = []

    class PlusOneAndTwo(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            frozen, live = t + 1, t + 2
            ctx.mark_non_differentiable(frozen)
            return frozen, live

        @staticmethod
        def backward(ctx, g_frozen, g_live):
            seen.append([bool((g_frozen == 0).all()), bool((g_live == 1).all())])
            return g_live

    x = Fixed(T).leaf(5, 5)
    frozen, live = PlusOneAndTwo.apply(x)
    live.sum().backward()
    return {"requires_grad": [frozen.requires_grad, live.requires_grad], "backward_saw": seen, "grad": values(x.grad)}


@upstream("test_mark_non_differentiable_none")
def non_differentiable_output_with_none_backward(T):
    """A non-differentiable copy of x·x, multiplied by x: backward returning None for it leaves x's
    gradient to the direct path, x·x."""

    class FrozenCopy(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            copy = t.clone()
            ctx.mark_non_differentiable(copy)
            return copy

        @staticmethod
        def backward(ctx, g):
            return None

    x = Fixed(T).leaf(5, 5)
    (FrozenCopy.apply(x * x) * x).sum().backward()
    return {"grad": values(x.grad)}


@upstream("test_return_duplicate")
def the_same_output_returned_twice(T):
    """forward returning one tensor twice gives one object for both; gradcheck and gradgradcheck
    of their sum pass (backward gets a gradient for each)."""

    class TwiceTheSame(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            doubled = 2 * t
            return doubled, doubled

        @staticmethod
        def backward(ctx, g_first, g_second):
            return 2 * (g_first + g_second)

    identical = []

    def both_added(t):
        first, second = TwiceTheSame.apply(t)
        identical.append(first is second)
        return first + second

    x = Fixed(T).leaf(5, 5)
    return {"checks": _both_checks(T, both_added, [x]), "identical": all(identical)}


@upstream("test_return_duplicate_inplace")
def an_input_doubled_in_place_returned_twice(T):
    """forward doubling its input in place (mark_dirty) and returning it twice: one object; the
    checks pass on a clone; on a leaf that requires grad it is an error."""

    class DoubleInPlaceTwice(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            t.mul_(2)
            ctx.mark_dirty(t)
            return t, t

        @staticmethod
        def backward(ctx, g_first, g_second):
            return 2 * (g_first + g_second)

    identical = []

    def on_a_clone(t):
        first, second = DoubleInPlaceTwice.apply(t.clone())
        identical.append(first is second)
        return first + second

    x = Fixed(T).leaf(5, 5)
    return {"checks": _both_checks(T, on_a_clone, [x]), "identical": all(identical),
            "on_the_leaf": outcome(lambda: DoubleInPlaceTwice.apply(x))["error"]}


@upstream("test_return_leaf")
def returning_a_leaf_argument(T):
    """(a, b) ↦ (a, a + b) with a a leaf: the returned a goes through the Function (a hook on it
    runs, with the gradient of the sum), and a's gradient adds both paths and the direct one."""

    class FirstAndSum(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a, a + b

        @staticmethod
        def backward(ctx, g_first, g_sum):
            return g_first + g_sum, g_sum

    hook_saw = []
    x, y = Fixed(T).leaves(2, 5, 5)
    first, total = FirstAndSum.apply(x, y)
    first.register_hook(lambda g: hook_saw.append(values(g)))
    (first + total + x).sum().backward()
    return {"grads": _grads(x, y), "hook_saw": hook_saw}


@upstream("test_return_leaf_inplace")
def adding_in_place_into_a_constant_leaf(T):
    """(a, b) ↦ (a += b, b + 2), a marked dirty and not requiring grad: the first output is a
    itself, now requiring grad through the Function; b gets both outputs' gradients."""

    class AddIntoFirst(T.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a, b + 2

        @staticmethod
        def backward(ctx, g_a, g_b):
            return g_a, g_a + g_b

    draw = Fixed(T)
    x, y = draw.randn(5, 5), draw.leaf(5, 5)
    updated, _ = AddIntoFirst.apply(x, y)
    seen = [updated is x, updated.requires_grad, updated.grad_fn.name()]
    updated.sum().backward()
    return {"seen": seen, "y_grad": values(y.grad), "x": values(x)}


@upstream("test_mark_dirty_on_a_view")
def function_doubling_a_view_in_place(T):
    """(Ours, beside upstream's mark_dirty tests.) A Function doubling a view of an intermediate in
    place: the view is the output, and its base takes the Function's history, as after a built-in
    in-place op, so the leaf gets weight·2 through the view's elements and weight elsewhere."""

    class DoubleInPlace(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            t.mul_(2)
            ctx.mark_dirty(t)
            return t

        @staticmethod
        def backward(ctx, g):
            return g * 2

    leaf = T.tensor([1.0, 2.0, 3.0, 4.0], dtype=T.float64, requires_grad=True)
    base = leaf * 1
    middle = base[1:3]
    out = DoubleInPlace.apply(middle)
    seen = [out is middle, base.grad_fn is not None]
    (base * T.tensor([1.0, 10.0, 100.0, 1000.0], dtype=T.float64)).sum().backward()
    return {"seen": seen, "base": values(base), "grad": values(leaf.grad)}


# ---- views and indexing --------------------------------------------------------------------------
@upstream("test_select_sum")
def checks_of_one_selected_element(T):
    """gradcheck and gradgradcheck of x[1].sum() (upstream: the same element by x.select(0, 1))."""
    return {"checks": _both_checks(T, lambda t: t[1].sum(), [Fixed(T).leaf(10)])}


@upstream("test_select_expanded_v")
def select_with_an_expanded_grad_output(T):
    """grad of a[0] with an expanded (stride-0) grad_output: row 0 gets it, the rest zeros."""
    draw = Fixed(T)
    expanded = draw.rand(10).expand(10, 10)
    a = draw.rand(10, 10, 10, requires_grad=True)
    return {"grad": values(T.autograd.grad(a[0], a, expanded)[0])}


@upstream("test_slice_expanded_v")
def slice_with_an_expanded_grad_output(T):
    """grad of a[3:5] with a grad_output expanded from (10, 1) to (2, 10, 10)."""
    draw = Fixed(T)
    expanded = draw.rand(10, 1).expand(2, 10, 10)
    a = draw.rand(10, 10, 10, requires_grad=True)
    return {"grad": values(T.autograd.grad(a[3:5], a, expanded)[0])}


@upstream("test_unused_output")
def backward_from_one_chunk(T):
    """Only one of five chunks used: its rows get the gradient, the others zeros (4 for 4·c + 2,
    then a random grad_output into chunk 0)."""
    draw = Fixed(T)
    x = draw.leaf(10, 10)
    (x.chunk(5)[2] * 4 + 2).sum().backward()
    first = values(x.grad)
    _zero_grads(T, x)
    x.chunk(5)[0].backward(draw.randn(2, 10))
    return {"grads": [first, values(x.grad)]}


@upstream("test_detach")
def detach_cuts_the_graph(T):
    """A detached result and what is made from it do not require grad and have no node; x + (2x
    detached) gives x the gradient 1, not 3."""
    draw = Fixed(T)
    cut = (draw.leaf(10, 10) + 2).detach()
    seen = [cut.requires_grad, (cut * 4 + 2).requires_grad]
    x = draw.leaf(10, 10)
    cut = (x * 2).detach()
    seen += [cut.requires_grad, cut.grad_fn is None]
    (x + cut).sum().backward()
    return {"seen": seen, "grad": values(x.grad)}


@upstream("test_detach_then_inplace_raises_in_autograd")
def in_place_change_through_a_detached_alias(T):
    """Zeroing x.detach() in place changes x, which x² saved: backward says it was modified by an
    inplace operation."""
    x = T.tensor(1.5, dtype=T.float64, requires_grad=True)
    squared = x ** 2
    x.detach().zero_()
    got = outcome(lambda: squared.backward())
    return {"error": got["error"], "says_modified": "has been modified by an inplace" in got["message"]}


@upstream("test_shape")
def shape_is_indexable(T):
    """shape has a length and indexable sizes."""
    shape = Fixed(T).randn(3, 4).shape
    return {"shape": [len(shape), shape[0], shape[1]]}


@upstream("test_numpy_requires_grad")
def numpy_of_a_tensor_that_requires_grad(T):
    """numpy() of a tensor that requires grad is refused; of its detached copy it works."""
    x = Fixed(T).leaf(2, 2)
    refused = outcome(lambda: x.numpy())
    with T.no_grad():
        detached_shape = x.detach().numpy().shape
    return {"numpy": refused, "detached_ok": detached_shape == (2, 2)}


# ---- what a Function's forward and backward may do -----------------------------------------------
@upstream("test_no_grad_input")
def function_applied_under_no_grad(T):
    """Under no_grad a Function's output has no node, though its input requires grad."""
    x = Fixed(T).leaf(5)
    with T.no_grad():
        out = _pass_through(T).apply(x)
    return {"seen": [x.requires_grad, out.grad_fn is None]}


@upstream("test_save_none_for_backward")
def saving_none_among_tensors(T):
    """save_for_backward(None, t, None) gives back None, t, None; d(t²) = 2t."""
    nones = []

    class SquareSavingNones(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(None, t, None)
            return t * t

        @staticmethod
        def backward(ctx, g):
            before, t, after = ctx.saved_tensors
            nones.append([before is None, after is None])
            return 2 * t * g

    x = Fixed(T).leaf(5, 5)
    SquareSavingNones.apply(x).sum().backward()
    return {"nones": nones, "grad": values(x.grad)}


@upstream("test_too_many_grads")
def extra_none_gradients_are_ignored(T):
    """backward may return more gradients than inputs if the extra ones are None."""

    class ExtraNones(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t

        @staticmethod
        def backward(ctx, g):
            return g, None, None

    x = Fixed(T).leaf(5, 5)
    ExtraNones.apply(x).sum().backward()
    return {"grad": values(x.grad)}


@upstream("test_dep_nograd")
def non_differentiable_output_fed_to_another_function(T):
    """A non-differentiable output (plus 1, still not requiring grad) given to a second Function
    that ignores it: backward reaches x through the differentiable path only."""

    class WithConstant(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            constant = t * 0 + 3.5
            ctx.mark_non_differentiable(constant)
            return t, constant

        @staticmethod
        def backward(ctx, g, _g_constant):
            return g

    class FirstOfTwo(T.autograd.Function):
        @staticmethod
        def forward(ctx, t, _ignored):
            return t

        @staticmethod
        def backward(ctx, g):
            return g, None

    x = Fixed(T).leaf(5)
    passed, constant = WithConstant.apply(x)
    constant = constant + 1
    seen = [passed.requires_grad, constant.requires_grad]
    out = FirstOfTwo.apply(passed, constant)
    out.backward(T.ones(out.size(), dtype=T.float64))
    return {"seen": seen, "grad": values(x.grad)}


@upstream("test_simple_reentrant")
def backward_that_runs_a_backward(T):
    """forward records x·y on fresh leaves (under enable_grad) and returns it detached; backward runs
    that inner graph's backward and returns the inner x's gradient (y) times the incoming one."""
    y_values = Fixed(T, 7).randn(2, 2)

    class InnerGraph(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            with T.enable_grad():
                ctx.inner_x = T.autograd.Variable(t, requires_grad=True)
                ctx.inner_y = T.autograd.Variable(y_values, requires_grad=True)
                ctx.inner_product = ctx.inner_x * ctx.inner_y
            return ctx.inner_product.detach()

        @staticmethod
        def backward(ctx, g):
            with T.enable_grad():
                ctx.inner_product.sum().backward()
            return ctx.inner_x.grad * g

    x = Fixed(T).leaf(2, 2)
    InnerGraph.apply(x).sum().backward()
    return {"grad": values(x.grad)}


@upstream("test_variable")
def variable_is_a_tensor_factory(T):
    """(Ours: what torch.autograd.Variable is today.) Every tensor is a Variable; Variable(t,
    requires_grad=True) is a new leaf with t's values, of the tensor type."""
    t = T.tensor([1.0, 2.0])
    leaf, plain = T.autograd.Variable(t, requires_grad=True), T.autograd.Variable(t)
    return {"seen": [isinstance(t, T.autograd.Variable), leaf.requires_grad, leaf.is_leaf, plain.requires_grad,
                     type(leaf).__name__ == type(t).__name__], "values": values(leaf)}


@upstream("test_gradcheck_single_input")
def checks_of_a_single_tensor_argument(T):
    """gradcheck and gradgradcheck take one tensor as well as a tuple (t ↦ 5t)."""
    draw = Fixed(T)
    times_five = lambda t: t.mul(5)  # noqa: E731
    return {"checks": [T.autograd.gradcheck(times_five, draw.rand(10, requires_grad=True)),
                       T.autograd.gradgradcheck(times_five, draw.rand(10, requires_grad=True))]}


@upstream("test_custom_autograd_no_early_free")
def saved_output_outlives_the_first_backward(T):
    """A square saving both its input and its output: the derivative from the input (2x) or from
    the output (2x²/x) passes the checks, and grad can be taken twice (create_graph first)."""

    class SquareSavingBoth(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            square = t ** 2
            ctx.save_for_backward(t, square)
            return square

        @staticmethod
        def backward(ctx, g):
            t, _ = ctx.saved_tensors
            return g * 2 * t

    class SquareFromOutput(SquareSavingBoth):
        @staticmethod
        def backward(ctx, g):
            t, square = ctx.saved_tensors
            return g * 2 * square / t

    x = T.tensor(2.0, dtype=T.float64, requires_grad=True)
    checks, grads = [], []
    for fn in (SquareSavingBoth.apply, SquareFromOutput.apply):
        checks += _both_checks(T, fn, x)
        out = fn(x)
        grads.append(values(T.autograd.grad(out, x, create_graph=True)[0]))
        grads.append(values(T.autograd.grad(out, x)[0]))
    return {"checks": checks, "grads": grads}


@upstream("test_naughty_autograd_function_stashing_ctx")
def ctx_kept_past_its_graph(T):
    """A ctx stashed by backward and read after its graph is gone: its saved tensors are an error."""
    stashed = []

    class PassThroughSaving(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            ctx.save_for_backward(t)
            return t

        @staticmethod
        def backward(ctx, g):
            stashed.append(ctx)
            return ctx.saved_tensors

    p = T.zeros(1, requires_grad=True)
    out = PassThroughSaving.apply(p)
    out.backward(retain_graph=True)
    del out
    return {"late_read": outcome(lambda: stashed[0].saved_tensors)["error"]}


# ---- post-accumulate-grad hooks ------------------------------------------------------------------
@upstream("test_post_accumulate_grad_hook_on_non_leaf")
def post_accumulate_hook_needs_a_leaf(T):
    """A post-accumulate-grad hook on a non-leaf is refused."""
    scaled = 2.0 * T.ones(3, requires_grad=True)
    return {"register": outcome(lambda: scaled.register_post_accumulate_grad_hook(lambda t: None))}


@upstream("test_post_accumulate_grad_hook_multiple_hooks")
def post_accumulate_hooks_run_in_order(T):
    """Two post-accumulate hooks on one leaf run in registration order: t − grad, then ×4."""

    def minus_grad(p):
        p.sub_(p.grad)

    def times_four(p):
        p.mul_(4.0)

    t = Fixed(T).rand(3, requires_grad=True)
    t.register_post_accumulate_grad_hook(minus_grad)
    t.register_post_accumulate_grad_hook(times_four)
    t.sum().backward()
    return {"after": values(t)}


@upstream("test_post_accumulate_grad_hook_multiple_tensors")
def one_post_accumulate_hook_on_two_leaves(T):
    """One hook (t − grad, in place) on two leaves, each reached by its own backward."""

    def minus_grad(leaf):
        leaf.sub_(leaf.grad)

    draw = Fixed(T)
    p, q = draw.rand(3, requires_grad=True), draw.rand(5, requires_grad=True)
    for t in (p, q):
        t.register_post_accumulate_grad_hook(minus_grad)
    p.sum().backward()
    q.sum().backward()
    return {"after": [values(p), values(q)]}


@upstream("test_post_accumulate_grad_hook_returns_not_None")
def post_accumulate_hook_must_return_none(T):
    """A post-accumulate hook that returns something: backward raises."""
    t = Fixed(T).rand(2, 3, requires_grad=True)
    t.register_post_accumulate_grad_hook(lambda p: p.grad)
    return {"backward": outcome(lambda: t.sum().backward())}


@upstream("test_post_accumulate_grad_hook_e2e")
def optimizer_step_inside_post_accumulate_hooks(T):
    """An Adam per parameter of a Linear(3, 2), stepped and zeroed by each parameter's hook: five
    backwards train the layer; after the handles are removed five more change nothing."""
    layer = T.nn.Linear(3, 2).double()
    with T.no_grad():
        layer.weight.copy_(Fixed(T, 1).randn(2, 3))
        layer.bias.copy_(Fixed(T, 2).randn(2))
    batch = Fixed(T, 3).rand(2, 3)
    optimizer_of, handles = {}, []

    def step_and_clear(p):
        optimizer_of[p].step()
        optimizer_of[p].zero_grad()

    for p in layer.parameters():
        optimizer_of[p] = T.optim.Adam([p])
        handles.append(p.register_post_accumulate_grad_hook(step_and_clear))

    def five_backwards():
        for _ in range(5):
            layer(batch).sum().backward()
        return [values(p) for p in layer.parameters()]

    with_hooks = five_backwards()
    for h in handles:
        h.remove()
    return {"with_hooks": with_hooks, "after_removal": five_backwards()}


@upstream("test_post_accumulate_grad_hook_ordering")
def where_post_accumulate_hooks_run(T):
    """Order at a leaf: tensor hook (− 2), accumulator pre-hook (÷ 5), accumulation, the
    post-accumulate hook (+ 0.5 in place), accumulator post-hook (sets .grad to its grad_output
    × 10, which wins)."""
    t = Fixed(T).rand(3, requires_grad=True)
    accumulator = (t * 1).grad_fn.next_functions[0][0]  # (upstream reaches it through t.view_as(t))

    def grad_set_from_output(g_in, g_out):
        t.grad = g_out[0].mul(10)

    def add_half(p):
        p.grad.add_(0.5)

    t.register_hook(lambda g: g.sub(2.0))
    accumulator.register_prehook(lambda g_out: (g_out[0].div(5.0),))
    t.register_post_accumulate_grad_hook(add_half)
    accumulator.register_hook(grad_set_from_output)
    t.sum().backward()
    return {"grad": values(t.grad)}


@upstream("test_post_accumulate_grad_hook_gets_cleaned_up")
def post_accumulate_hook_freed_with_its_tensor(T):
    """What a post-accumulate hook holds lives as long as the tensor, and no longer."""

    def leaf_with_hook():
        held = T.ones(3)

        def step(p):
            p.sub_(p.grad)
            p.add_(held)

        leaf = T.ones(3, requires_grad=True)
        leaf.register_post_accumulate_grad_hook(step)
        leaf.sum().backward()
        watch = weakref.ref(held)
        gc.collect()
        return leaf, watch

    gc.disable()
    try:
        leaf, watch = leaf_with_hook()
        alive = watch() is not None
        del leaf
        gc.collect()
        return {"alive_with_tensor": alive, "freed_after": watch() is None}
    finally:
        gc.enable()



# ---- freeing graphs ------------------------------------------------------------------------------
@upstream("test_variable_traverse")
def graph_reached_from_collected_garbage(T):
    """An intermediate held only by a self-referencing list (garbage for the cycle collector): a
    collection while the graph is alive must not break the backward through it."""

    def output_with_garbage_cycle():
        leaf = Fixed(T).leaf(10)
        column = leaf.view(10, 1)
        out = column.view(10)
        holds_itself = [column]
        holds_itself.append(holds_itself)
        return out

    out = output_with_garbage_cycle()
    gc.collect()
    out.backward(Fixed(T, 1).randn(10))
    return {"ran": True}


@upstream("test_free_deep_graph")
def freeing_a_long_chain(T):
    """A chain of 150,000 ops is freed without recursion deep enough to overflow the stack."""
    chain = T.ones(1, requires_grad=True).clone()
    for _ in range(150000):
        chain = chain + chain * 0.000001
    del chain
    return {"ran": True}


@upstream("test_reentrant_child_error")
def error_in_a_backward_run_inside_backward(T):
    """A Function whose backward runs the backward of another graph, whose Function raises: the
    error comes out of the outer backward."""
    draw = Fixed(T)
    a = draw.rand(3, 3, requires_grad=True)
    outer = a * a
    b = draw.rand(3, 3, requires_grad=True)
    inner_loss = _failing_clone(T).apply(b * b).sum()

    class RunsInnerBackward(T.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t.clone()

        @staticmethod
        def backward(ctx, g):
            inner_loss.backward()
            return g

    got = outcome(lambda: RunsInnerBackward.apply(outer).sum().backward())
    return {"raised": got["error"] is not None, "inner_message": "fails on purpose" in got.get("message", "")}
