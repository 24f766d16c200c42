"""pytorch/pytorch's optimizer and scheduler tests in attograd's scope, written here:
test/optim/test_lrscheduler.py, and test/test_optim.py's TestOptimRenewed for SGD, Adam and AdamW
with the keyword sets torch/testing/_internal/common_optimizers.py gives them.

Each case is filed under the upstream test's name and keeps that test's schedules, keyword sets
and checks, returned as observations; torch's are the expected values.

The scheduler tests share one optimizer: SGD over two parameter groups, lr 0.05 and 0.5.
Upstream's groups hold two Conv2d(1, 1, 1) (attograd has no convolutions) and its second lr is a
0-d tensor (attograd's lrs are numbers); no schedule depends on either."""

import copy
import gc
import weakref

from .common import Fixed, outcome, registry, values, warned

CASES, upstream = registry()


# ---- schedulers ----------------------------------------------------------------------------------
def _two_group_sgd(T, second_lr=0.5):
    layers = T.nn.Sequential(T.nn.Linear(1, 1), T.nn.Linear(1, 1))
    return T.optim.SGD([{"params": layers[0].parameters()}, {"params": layers[1].parameters(), "lr": second_lr}],
                       lr=0.05)


def _lrs_per_epoch(optimizer, schedulers, epochs):
    """Each group's lr as an epoch starts; the schedulers step at its end."""
    table = []
    for _ in range(epochs):
        table.append([group["lr"] for group in optimizer.param_groups])
        for s in schedulers:
            s.step()
    return table


def _last_lr_per_epoch(optimizer, schedulers, epochs):
    """Each scheduler's get_last_lr() as an epoch starts; the optimizer, then the schedulers, step at
    its end."""
    table = []
    for _ in range(epochs):
        table.append([s.get_last_lr() for s in schedulers])
        optimizer.step()
        for s in schedulers:
            s.step()
    return table


def _schedule_case(epochs, read_last_lr, make):
    def run(T):
        optimizer = _two_group_sgd(T)
        made = make(T.optim.lr_scheduler, optimizer)
        schedulers = made if isinstance(made, list) else [made]
        read = _last_lr_per_epoch if read_last_lr else _lrs_per_epoch
        return {"lrs": read(optimizer, schedulers, epochs)}

    return run


# upstream test: (epochs, read get_last_lr() instead of the groups' lr, the scheduler(s) on the
# optimizer; a list is several schedulers stepped one after the other each epoch)
_SCHEDULES = {
    "test_step_lr": (10, False, lambda S, o: S.StepLR(o, gamma=0.1, step_size=3)),
    "test_get_last_lr_step_lr": (10, True, lambda S, o: S.StepLR(o, 3, gamma=0.1)),
    "test_multi_step_lr": (10, False, lambda S, o: S.MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9])),
    "test_get_last_lr_multi_step_lr": (10, True, lambda S, o: S.MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9])),
    "test_constantlr": (10, False, lambda S, o: S.ConstantLR(o, factor=1.0 / 2, total_iters=5)),
    "test_get_last_lr_constantlr": (10, True, lambda S, o: S.ConstantLR(o, factor=1.0 / 2, total_iters=5)),
    "test_linearlr": (10, False, lambda S, o: S.LinearLR(o, start_factor=1.0 / 2, total_iters=4)),
    "test_get_last_lr_linearlr": (10, True, lambda S, o: S.LinearLR(o, start_factor=1.0 / 4, end_factor=3.0 / 5,
                                                                    total_iters=4)),
    "test_exp_lr": (10, False, lambda S, o: S.ExponentialLR(o, gamma=0.9)),
    "test_poly_lr": (10, False, lambda S, o: S.PolynomialLR(o, power=0.9, total_iters=5)),
    "test_cos_anneal_lr": (10, False, lambda S, o: S.CosineAnnealingLR(o, T_max=10, eta_min=1e-10)),
    "test_sequentiallr1": (19, False, lambda S, o: S.SequentialLR(
        o, schedulers=[S.ExponentialLR(o, gamma=0.8), S.StepLR(o, gamma=0.1, step_size=4)], milestones=[3])),
    "test_sequentiallr2": (13, False, lambda S, o: S.SequentialLR(
        o, schedulers=[S.ConstantLR(o, factor=0.1, total_iters=3), S.ExponentialLR(o, gamma=0.9)], milestones=[3])),
    "test_sequentiallr3": (12, False, lambda S, o: S.SequentialLR(
        o, schedulers=[S.ConstantLR(o, factor=0.1, total_iters=3), S.ExponentialLR(o, gamma=0.8),
                       S.StepLR(o, gamma=0.1, step_size=2)], milestones=[3, 6])),
    "test_get_last_lr_sequentiallr": (12, True, lambda S, o: S.SequentialLR(
        o, schedulers=[S.ConstantLR(o, factor=0.1, total_iters=3), S.ExponentialLR(o, gamma=0.8),
                       S.StepLR(o, gamma=0.1, step_size=2)], milestones=[3, 6])),
    "test_chained_lr1": (10, False, lambda S, o: S.ChainedScheduler([S.StepLR(o, gamma=0.1, step_size=3)])),
    "test_chained_lr2": (10, False, lambda S, o: S.ChainedScheduler([S.LinearLR(o, start_factor=0.4, total_iters=3)])),
    "test_chained_lr3": (10, False, lambda S, o: S.ChainedScheduler(
        [S.LinearLR(o, start_factor=0.4, total_iters=3), S.MultiStepLR(o, milestones=[4, 8, 10], gamma=0.1)])),
    "test_chained_lr4": (9, False, lambda S, o: S.ChainedScheduler(
        [S.ExponentialLR(o, gamma=0.9), S.ConstantLR(o, factor=0.2, total_iters=4),
         S.StepLR(o, gamma=0.1, step_size=3)])),
    "test_chained_lr5": (10, False, lambda S, o: S.ChainedScheduler(
        [S.PolynomialLR(o, power=0.9, total_iters=5), S.ConstantLR(o, factor=0.1)])),
    "test_compound_step_and_multistep_lr": (10, False, lambda S, o: [
        S.StepLR(o, gamma=0.1, step_size=3), S.MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9])]),
    "test_compound_step_and_exp_lr": (10, False, lambda S, o: [
        S.StepLR(o, gamma=0.1, step_size=3), S.ExponentialLR(o, gamma=0.9)]),
    "test_compound_exp_and_multistep_lr": (10, False, lambda S, o: [
        S.MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9]), S.ExponentialLR(o, gamma=0.9)]),
    "test_compound_exp_and_linearlr": (10, False, lambda S, o: [
        S.LinearLR(o, start_factor=0.4, end_factor=0.9, total_iters=4), S.ExponentialLR(o, gamma=0.9)]),
    "test_compound_step_and_constantlr": (10, False, lambda S, o: [
        S.StepLR(o, gamma=0.1, step_size=3), S.ConstantLR(o, factor=0.4, total_iters=4)]),
    "test_compound_linearlr_and_multistep_lr": (10, False, lambda S, o: [
        S.MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9]), S.LinearLR(o, start_factor=0.4, total_iters=4)]),
    "test_compound_cosanneal_and_step_lr": (10, False, lambda S, o: [
        S.CosineAnnealingLR(o, T_max=10, eta_min=1e-10), S.StepLR(o, gamma=0.1, step_size=3)]),
    "test_compound_cosanneal_and_multistep_lr": (10, False, lambda S, o: [
        S.CosineAnnealingLR(o, T_max=10, eta_min=1e-10), S.MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9])]),
    "test_compound_cosanneal_and_linearlr": (10, False, lambda S, o: [
        S.LinearLR(o, start_factor=0.4, total_iters=4), S.CosineAnnealingLR(o, T_max=10, eta_min=1e-10)]),
    "test_compound_cosanneal_and_exp_lr": (10, False, lambda S, o: [
        S.CosineAnnealingLR(o, T_max=10, eta_min=1e-10), S.ExponentialLR(o, gamma=0.1)]),
}
for _name, (_epochs, _read_last_lr, _make) in _SCHEDULES.items():
    upstream(_name)(_schedule_case(_epochs, _read_last_lr, _make))


@upstream("test_lambda_lr")
def per_group_lambdas(T):
    """LambdaLR with one function per group (0.9^epoch, 0.8^epoch) over lrs 0.05 and 0.4."""
    optimizer = _two_group_sgd(T, second_lr=0.4)
    scheduler = T.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda=[lambda e: 0.9 ** e, lambda e: 0.8 ** e])
    return {"lrs": _lrs_per_epoch(optimizer, [scheduler], 10)}


@upstream("test_multiplicative_lr")
def per_group_factors(T):
    """MultiplicativeLR with constant factors 0.9 and 0.8 per group over lrs 0.05 and 0.4."""
    optimizer = _two_group_sgd(T, second_lr=0.4)
    scheduler = T.optim.lr_scheduler.MultiplicativeLR(optimizer, lr_lambda=[lambda e: 0.9, lambda e: 0.8])
    return {"lrs": _lrs_per_epoch(optimizer, [scheduler], 10)}


@upstream("test_multiplicative_lr_with_lr_lambda")
def multiplicative_lr_needs_callables(T):
    """MultiplicativeLR given a number, or a list of numbers, instead of functions: refused."""
    optimizer = _two_group_sgd(T)
    S = T.optim.lr_scheduler
    return {"number": outcome(lambda: S.MultiplicativeLR(optimizer, 0.95)),
            "list": outcome(lambda: S.MultiplicativeLR(optimizer, [0.95, 0.95]))}


@upstream("test_linearlr_start_factor_limits")
def linear_lr_start_factor_range(T):
    """LinearLR's start_factor must be in (0, 1]: 0 and 1.1 are refused."""
    optimizer = _two_group_sgd(T)
    return {str(f): outcome(lambda: T.optim.lr_scheduler.LinearLR(optimizer, start_factor=f, total_iters=4))["error"]
            for f in (0.0, 1.1)}


@upstream("test_sequentiallr4")
def sequential_lr_starts_from_the_first_scheduler(T):
    """Two ConstantLRs (factors 1 and 0.1) in a SequentialLR: after it is made the lr is the first's
    (0.1 · 1), not the second's."""
    p = T.tensor(0.5, requires_grad=True)
    optimizer = T.optim.SGD([p], lr=0.1)
    before = optimizer.param_groups[0]["lr"]
    S = T.optim.lr_scheduler
    S.SequentialLR(optimizer, [S.ConstantLR(optimizer, factor=1), S.ConstantLR(optimizer, factor=0.1)],
                   milestones=[10])
    return {"lrs": [before, optimizer.param_groups[0]["lr"]]}


@upstream("test_sequentiallr_no_warnings")
def sequential_lr_steps_silently(T):
    """Ten optimizer-then-scheduler steps of LinearLR then ExponentialLR in a SequentialLR warn of
    nothing."""
    optimizer = _two_group_sgd(T)
    S = T.optim.lr_scheduler
    sequence = S.SequentialLR(optimizer, schedulers=[S.LinearLR(optimizer, start_factor=0.5, end_factor=0.1,
                                                                total_iters=5), S.ExponentialLR(optimizer, gamma=0.9)],
                              milestones=[5])
    warnings_seen = []
    for _ in range(10):
        optimizer.step()
        warnings_seen += warned(sequence.step)
    return {"warnings": warnings_seen}


@upstream("test_chained_lr2_get_last_lr_before_step")
def chained_last_lr_before_any_step(T):
    """Before any step a ChainedScheduler's get_last_lr() is its last scheduler's."""
    optimizer = _two_group_sgd(T)
    S = T.optim.lr_scheduler
    linear = S.LinearLR(optimizer, start_factor=0.4, total_iters=3)  # made first: the order matters
    last = S.MultiStepLR(optimizer, milestones=[4, 8, 10], gamma=0.1)
    chain = S.ChainedScheduler([linear, last])
    return {"last_lr": [chain.get_last_lr(), last.get_last_lr()]}


@upstream("test_no_cyclic_references")
def scheduler_leaves_no_cycle_on_the_optimizer(T):
    """Once the scheduler is deleted, nothing but this frame refers to the optimizer, and it is
    freed without the cycle collector."""
    optimizer = T.optim.SGD([T.nn.Parameter(T.zeros(10))], lr=0.5)
    scheduler = T.optim.lr_scheduler.LambdaLR(optimizer, lambda e: 1.0)
    del scheduler
    referrers = len(gc.get_referrers(optimizer))
    gc.collect()
    watch = weakref.ref(optimizer)
    del optimizer
    return {"referrers": referrers, "freed": watch() is None}


@upstream("test_no_cyclic_references_in_step")
def stepping_leaves_no_cycle(T):
    """After an optimizer and a scheduler step, the scheduler is freed by reference counting alone
    (the cycle collector is off)."""

    def one_step():
        p = T.zeros(10, requires_grad=True)
        optimizer = T.optim.SGD(params=[p], lr=0.5)
        scheduler = T.optim.lr_scheduler.LambdaLR(optimizer, lambda e: 1.0)
        p.sum().backward()
        optimizer.step()
        scheduler.step()
        return weakref.ref(scheduler)

    gc.disable()
    try:
        return {"freed": one_step()() is None}
    finally:
        gc.enable()


# ---- optimizers ----------------------------------------------------------------------------------
_OPTIMIZERS = ("SGD", "Adam", "AdamW")


def _keyword_sets(name):
    """common_optimizers.py's keyword sets for the optimizer that attograd's take (no tensor lr,
    maximize, foreach, fused, capturable or differentiable)."""
    if name == "SGD":
        return [{}, {"lr": 1e-2}, {"weight_decay": 0.5}, {"momentum": 0.9}, {"momentum": 0.9, "dampening": 0.5},
                {"momentum": 0.9, "weight_decay": 0.1}, {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1}]
    return [{}, {"lr": 0.01}, {"weight_decay": 0.1}, {"weight_decay": 0.1, "amsgrad": True}]


def _every_configuration(T):
    """(label, optimizer class, index, keywords) for each optimizer and each of its keyword sets;
    the index also seeds the case's draws."""
    for name in _OPTIMIZERS:
        for index, keywords in enumerate(_keyword_sets(name)):
            yield f"{name}/{index}", getattr(T.optim, name), index, dict(keywords)


def _affine_problem(T, seed, rows, cols):
    """Upstream's problem: minimise |W·x + b|² over a float32 W (rows, cols) and b (rows) for a
    fixed x, all drawn from the seed; returns the draw too, for anything more the case needs."""
    draw = Fixed(T, seed)
    weight = T.nn.Parameter(draw.randn(rows, cols, dtype=T.float32))
    bias = T.nn.Parameter(draw.randn(rows, dtype=T.float32))
    return draw, weight, bias, draw.randn(cols, dtype=T.float32)


def _affine_loss(weight, bias, x):
    # (upstream writes weight.mv(x); the product is the same)
    return (weight @ x + bias).pow(2).sum()


def _fresh_loss(optimizer, weight, bias, x):
    """Zero the gradients, compute the loss and its gradients: a closure's body."""
    optimizer.zero_grad()
    loss = _affine_loss(weight, bias, x)
    loss.backward()
    return loss


@upstream("test_forloop_goes_right_direction")
def twenty_closure_steps_lower_the_loss(T):
    """The loss before and after 20 steps taken with a closure, for every configuration."""
    seen = {}
    for label, cls, index, keywords in _every_configuration(T):
        _, weight, bias, x = _affine_problem(T, index, 10, 5)
        optimizer = cls([weight, bias], **keywords)
        closure = lambda: _fresh_loss(optimizer, weight, bias, x)  # noqa: E731
        before = closure().item()
        for _ in range(20):
            optimizer.step(closure)
        seen[label] = [before, closure().item()]
    return seen


@upstream("test_param_groups_weight_decay")
def weight_decay_on_one_group_only(T):
    """The weight in a group with the configuration's keywords, the bias in one without weight
    decay: the loss before and at the last of 20 steps."""
    seen = {}
    for label, cls, index, keywords in _every_configuration(T):
        _, weight, bias, x = _affine_problem(T, index, 10, 5)
        optimizer = cls([dict(params=[weight], **keywords), dict(params=[bias], **dict(keywords, weight_decay=0.0))])
        before = _affine_loss(weight, bias, x).item()
        for _ in range(20):
            loss = _fresh_loss(optimizer, weight, bias, x)
            optimizer.step()
        seen[label] = [before, loss.item()]
    return seen


@upstream("test_param_groups_lr")
def a_group_with_a_negligible_lr(T):
    """Weight and bias in a group with the configuration's lr (1e-3 where it has none); another
    parameter, given gradients every step, in a group left at the default lr 1e-28: the loss falls
    and that parameter does not move."""
    seen = {}
    for label, cls, index, keywords in _every_configuration(T):
        if not keywords.get("lr"):
            keywords["lr"] = 1e-3
        draw, weight, bias, x = _affine_problem(T, index, 10, 5)
        bystander = T.nn.Parameter(draw.randn(2, dtype=T.float32))
        start = values(bystander)
        optimizer = cls([dict(params=[weight, bias], **keywords), dict(params=[bystander])], lr=1e-28)
        before = _affine_loss(weight, bias, x).item()
        for step in range(1, 21):
            loss = _fresh_loss(optimizer, weight, bias, x)
            bystander.grad = T.tensor([0.25, -0.5], dtype=T.float32) * step
            optimizer.step()
        seen[label] = [before, loss.item(), values(bystander) == start]
    return seen


@upstream("test_step_is_noop_when_params_have_no_grad")
def step_without_gradients_changes_nothing(T):
    """Parameters that never got a gradient stay as they are through a step, for every configuration."""
    draw = Fixed(T)
    params = [draw.randn(2, 3, dtype=T.float32) for _ in range(2)]
    start = [values(p) for p in params]
    seen = {}
    for label, cls, _, keywords in _every_configuration(T):
        cls(params, **keywords).step(lambda: T.tensor([1.0]))
        seen[label] = [values(p) for p in params] == start
    return seen


@upstream("test_step_is_noop_for_zero_grads")
def step_with_zero_gradients_changes_nothing(T):
    """A zero gradient moves nothing, for every configuration without weight decay (AdamW at lr 1e-4)."""
    seen = {}
    for label, cls, index, keywords in _every_configuration(T):
        if keywords.get("weight_decay", 0):
            continue
        if cls is T.optim.AdamW:
            keywords["lr"] = 1e-4
        p = Fixed(T, index).randn(5, 1, dtype=T.float32, requires_grad=True)
        start = values(p)
        optimizer = cls([p], **keywords)
        p.grad = T.zeros(5, 1)
        optimizer.step(lambda: T.tensor([1.0]))
        seen[label] = values(p) == start
    return seen


@upstream("test_optimizer_can_be_printed")
def optimizer_repr(T):
    """repr names the class on its first line and lists Parameter Group 0."""
    params = [T.nn.Parameter(Fixed(T).randn(2, 3, dtype=T.float32)) for _ in range(2)]
    seen = {}
    for label, cls, _, keywords in _every_configuration(T):
        text = repr(cls(params, **keywords))
        seen[label] = [text.splitlines()[0], "Parameter Group 0" in text]
    return seen


@upstream("test_state_dict_deterministic")
def loaded_state_continues_identically(T):
    """After 10 steps, a second optimizer over copies of the parameters loads the first's state: the
    next 10 steps of both are bit for bit the same."""
    seen = {}
    for label, cls, index, keywords in _every_configuration(T):
        _, weight, bias, x = _affine_problem(T, index, 2, 3)
        optimizer = cls([weight, bias], **keywords)
        for _ in range(10):
            optimizer.step(lambda: _fresh_loss(optimizer, weight, bias, x))
        with T.no_grad():
            weight2, bias2 = T.nn.Parameter(weight.clone()), T.nn.Parameter(bias.clone())
        follower = cls([weight2, bias2], **keywords)
        follower.load_state_dict(copy.deepcopy(optimizer.state_dict()))
        identical = []
        for _ in range(10):
            optimizer.step(lambda: _fresh_loss(optimizer, weight, bias, x))
            follower.step(lambda: _fresh_loss(follower, weight2, bias2, x))
            identical.append(bool(T.equal(weight, weight2)) and bool(T.equal(bias, bias2)))
        seen[label] = [all(identical), values(weight)]
    return seen


def _after_three_steps(T, cls, seed, keywords):
    """An optimizer over two (2, 3) parameters whose gradients are fixed draws, after three steps."""
    draw = Fixed(T, seed)
    params = [T.nn.Parameter(draw.randn(2, 3, dtype=T.float32)) for _ in range(2)]
    for p in params:
        p.grad = draw.rand(2, 3, dtype=T.float32)
    optimizer = cls(params, **keywords)
    for _ in range(3):
        optimizer.step()
    return optimizer, params


@upstream("test_load_nontensor_step")
def state_whose_step_is_a_number(T):
    """A state dict whose per-parameter step is a plain number loads, and the next step goes on
    from it."""
    seen = {}
    for label, cls, index, keywords in _every_configuration(T):
        optimizer, params = _after_three_steps(T, cls, index, keywords)
        state = copy.deepcopy(optimizer.state_dict())
        for per_param in state["state"].values():
            if T.is_tensor(per_param.get("step")):
                per_param["step"] = per_param["step"].item()
        optimizer.load_state_dict(state)
        optimizer.step()
        seen[label] = [values(p) for p in params]
    return seen


@upstream("test_deepcopy_copies_all_public_attrs")
def deepcopy_keeps_the_public_attributes(T):
    """A deep copy of a stepped optimizer has the same public attribute names."""
    public = lambda obj: {k for k in vars(obj) if not k.startswith("_")}  # noqa: E731
    seen = {}
    for label, cls, index, keywords in _every_configuration(T):
        optimizer, _ = _after_three_steps(T, cls, index, keywords)
        seen[label] = public(optimizer) == public(copy.deepcopy(optimizer))
    return seen


@upstream("test_errors")
def optimizer_argument_errors(T):
    """common_optimizers.py's CPU error inputs for SGD, Adam and AdamW that attograd meets: a bare
    tensor as params, a parameter listed twice (a warning), in two groups, named and unnamed
    mixed, a set (a warning); a negative momentum; betas[0] of 1, a negative weight decay."""
    p1 = T.nn.Parameter(Fixed(T).randn(1, 1, dtype=T.float32))
    p2 = T.nn.Parameter(Fixed(T, 1).randn(1, 1, dtype=T.float32))
    seen = {}
    for name in _OPTIMIZERS:
        cls = getattr(T.optim, name)
        seen[f"{name}/param_type"] = outcome(lambda: cls(p1))
        seen[f"{name}/duplicates"] = warned(lambda: cls([p1, p1]))
        seen[f"{name}/across_groups"] = outcome(lambda: cls([{"params": p1}, {"params": p1}]))
        seen[f"{name}/names"] = outcome(lambda: cls([("weight", p1), p2]))
        seen[f"{name}/unordered_set"] = [w[0] for w in warned(lambda: cls({p1, p2}))]
    seen["SGD/momentum"] = outcome(lambda: T.optim.SGD([p1], lr=1e-2, momentum=-0.5))
    for name in ("Adam", "AdamW"):
        cls = getattr(T.optim, name)
        seen[f"{name}/beta1"] = outcome(lambda: cls([p1], lr=1e-2, betas=(1.0, 0.0)))
        seen[f"{name}/weight_decay"] = outcome(lambda: cls([p1], lr=1e-2, weight_decay=-1))
    return seen
