"""``Optimizer``: torch.optim.Optimizer's interface on attograd's C++ optimizers
(python/src/bind_optim.cpp). ``param_groups`` is torch's list of dicts, which the user may
change between steps (``opt.param_groups[0]["lr"] = 0.01``): each step hands every group's
dict to C++ first. ``step`` runs in C++ with the GIL released."""

import copy
import warnings

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
        if isinstance(params, (set, frozenset)):  # torch's warning
            warnings.warn("optimizer parameters need to be organized in ordered collections, but the ordering of "
                          "tensors in sets will change between runs. Please use a list instead.", FutureWarning,
                          stacklevel=3)
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        self.param_groups = [self._filled(g) for g in groups]
        seen = set()
        for g in self.param_groups:
            ids = {id(p) for p in g["params"]}
            if ids & seen:  # torch's message
                raise ValueError("some parameters appear in more than one parameter group")
            seen |= ids
        self._cpp = self._cpp_class([(g["params"], _options(g)) for g in self.param_groups])

    def _filled(self, group):
        if not isinstance(group, dict):
            raise TypeError(f"param group must be a dict, got {type(group).__name__}")
        group = dict(group)
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        named = [isinstance(p, tuple) and len(p) == 2 and isinstance(p[0], str) for p in params]
        if any(named):  # torch 2's (name, parameter) pairs: the names go to "param_names"
            if not all(named):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            group["param_names"] = [n for n, _ in params]
            params = [p for _, p in params]
        unique = list({id(p): p for p in params}.values())
        if len(unique) != len(params):  # torch's warning; attograd then steps each parameter once
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will cause "
                          "an error; see github.com/pytorch/pytorch/issues/40967 for more information", stacklevel=3)
            params = unique
        group["params"] = params
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
        self._cpp.add_param_group(group["params"], _options(group))
        self.param_groups.append(group)

    def _push(self):
        for i, group in enumerate(self.param_groups):
            self._cpp.set_group_options(i, _options(group))

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
        state = state_dict.get("state", {})
        if any("step" in s and not isinstance(s["step"], Tensor) for s in state.values()):
            # a "step" saved as a number (older torch): the 0-d tensor torch makes of it
            state_dict = dict(state_dict, state={i: dict(s, step=_step_tensor(s["step"]))
                                                 if "step" in s and not isinstance(s["step"], Tensor) else s
                                                 for i, s in state.items()})
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

    def __deepcopy__(self, memo):
        """A new optimizer of the same kind on deep copies of the parameters (those already copied
        with it, as a model's, are those), with a copy of the state and the groups, as torch's."""
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for key, value in self.__dict__.items():
            if key not in ("_cpp", "param_groups"):
                object.__setattr__(new, key, copy.deepcopy(value, memo))
        new.param_groups = [dict({k: copy.deepcopy(v, memo) for k, v in g.items() if k != "params"},
                                 params=[copy.deepcopy(p, memo) for p in g["params"]]) for g in self.param_groups]
        new._cpp = new._cpp_class([(g["params"], _options(g)) for g in new.param_groups])
        new.load_state_dict(copy.deepcopy(self.state_dict(), memo))
        return new


class _ParamDict(dict):
    """A dict keyed by tensors (hashed by identity, as torch's state)."""


def _step_tensor(step):
    from .._factories import tensor

    return tensor(float(step))


def _options(group):
    """A group's options as the C++ optimizer reads them (torch's "param_names" are Python's alone)."""
    return {k: v for k, v in group.items() if k != "param_names"}


def _type_name(x):
    from ..nn.modules.module import _type_name as tensor_type_name  # torch.typename's: attograd.FloatTensor

    return tensor_type_name(x) if isinstance(x, Tensor) else type(x).__name__
