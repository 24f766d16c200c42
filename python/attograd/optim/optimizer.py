"""``Optimizer``: torch.optim.Optimizer's interface on attograd's C++ optimizers
(python/src/bind_optim.cpp). ``param_groups`` is torch's list of dicts, which the user may
change between steps (``opt.param_groups[0]["lr"] = 0.01``): each step hands every group's
dict to C++ first. ``step`` runs in C++ with the GIL released."""

from .. import _C
from ..autograd.grad_mode import enable_grad

Tensor = _C.Tensor

__all__ = ["Optimizer"]


class _RequiredParameter:
    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    """The base of SGD, Adam, AdamW and Muon. Subclasses name their C++ class and defaults."""

    _cpp_class = None

    def __init__(self, params, defaults):
        self.defaults = dict(defaults)
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, but "
                            f"got {_type_name(params)}")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.param_groups = [self._filled(g) for g in groups]
        self._cpp = self._cpp_class([(g["params"], g) for g in self.param_groups])

    def _filled(self, group):
        if not isinstance(group, dict):
            raise TypeError(f"param group must be a dict, got {type(group).__name__}")
        group = dict(group)
        params = group["params"]
        group["params"] = [params] if isinstance(params, Tensor) else list(params)
        for p in group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {_type_name(p)}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for key, default in self.defaults.items():
            if default is required and key not in group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {key}")
            group.setdefault(key, default)
        return group

    def add_param_group(self, param_group):
        """Adds a group (a dict with "params"); its unset options take the optimizer's defaults."""
        group = self._filled(param_group)
        self._cpp.add_param_group(group["params"], group)
        self.param_groups.append(group)

    def _push(self):
        for i, group in enumerate(self.param_groups):
            self._cpp.set_group_options(i, group)

    def step(self, closure=None):
        """One update of every parameter that has a .grad. With ``closure`` (re-evaluates the loss
        and returns it, as torch's), the closure runs first, in grad mode, and its loss is returned."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        self._push()
        self._cpp.step()
        return loss

    def zero_grad(self, set_to_none=True):
        """Drops every parameter's .grad (torch 2's default), or zeroes it in place."""
        self._cpp.zero_grad(set_to_none)

    def state_dict(self):
        """torch's layout: {"state": {index: {name: tensor}}, "param_groups": [{options, "params": [index, ...]}]},
        the indices counting the parameters over all groups in order. The tensors are the
        optimizer's own (save a copy if it will step on)."""
        self._push()
        return self._cpp.state_dict()

    def load_state_dict(self, state_dict):
        """Replaces the state and the groups' options (the same number of groups, of the same sizes)."""
        self._cpp.load_state_dict(state_dict)
        for i, (group, saved) in enumerate(zip(self.param_groups, state_dict["param_groups"])):
            group.update(self._cpp.group_options(i))
            for key, value in saved.items():
                if key != "params":
                    group.setdefault(key, value)
            if saved.get("initial_lr") is not None:
                group["initial_lr"] = saved["initial_lr"]

    @property
    def state(self):
        """Each parameter's state by the parameter (a dict of tensors), as torch's ``opt.state``;
        parameters not stepped yet are absent."""
        params = [p for g in self.param_groups for p in g["params"]]
        return _ParamDict((params[i], s) for i, s in self._cpp.state_dict()["state"].items())

    def __repr__(self):
        out = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            out += f"\nParameter Group {i}"
            for key in sorted(group):
                if key != "params":
                    out += f"\n    {key}: {group[key]}"
        return out + "\n)"

    def __getstate__(self):
        raise TypeError("attograd optimizers are not picklable: save optimizer.state_dict() instead")


class _ParamDict(dict):
    """A dict keyed by tensors (hashed by identity, as torch's state)."""


def _type_name(x):
    return "attograd.Tensor" if isinstance(x, Tensor) else type(x).__name__
