"""``nn.Module``, subclassed in Python as torch's: parameters, buffers and submodules are
registered by assigning them as attributes, ``__call__`` runs ``forward`` (with the hooks), and
``parameters``, ``named_parameters``, ``state_dict``, ``load_state_dict``, ``train``/``eval``,
``double``/``float``, ``zero_grad`` walk the tree in registration order, with torch's dotted
names and messages. The C++ layers (modules/cpp.py) are Modules of this class too."""

import itertools
from collections import OrderedDict, namedtuple

from ... import _C
from ...autograd.grad_mode import no_grad
from ..parameter import Buffer, Parameter

Tensor = _C.Tensor

__all__ = ["Module"]


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    def __repr__(self):
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__


class _RemovableHandle:
    _ids = itertools.count()

    def __init__(self, hooks):
        self._hooks = hooks
        self.id = next(self._ids)

    def remove(self):
        self._hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _addindent(text, spaces):
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    return lines[0] + "\n" + "\n".join(" " * spaces + line for line in lines[1:])


class Module:
    """The base of every layer and model. Subclasses call ``super().__init__()`` first, then
    assign their parameters (``nn.Parameter``) and submodules as attributes, and define ``forward``."""

    training: bool
    _version = 1

    def __init__(self, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{type(self).__name__}.__init__() got unexpected arguments")
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", OrderedDict())
        set_(self, "_buffers", OrderedDict())
        set_(self, "_non_persistent_buffers_set", set())
        set_(self, "_modules", OrderedDict())
        set_(self, "_forward_hooks", OrderedDict())
        set_(self, "_forward_pre_hooks", OrderedDict())
        set_(self, "_state_dict_pre_hooks", OrderedDict())
        set_(self, "_state_dict_hooks", OrderedDict())
        set_(self, "_load_state_dict_pre_hooks", OrderedDict())
        set_(self, "_load_state_dict_post_hooks", OrderedDict())

    # ---- forward ------------------------------------------------------------------------------------
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        for hook in list(self._forward_pre_hooks.values()):
            result = hook(self, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
        out = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            result = hook(self, args, out)
            if result is not None:
                out = result
        return out

    def register_forward_hook(self, hook):
        """hook(module, args, output) after each forward; returns a handle with ``remove()``."""
        handle = _RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    def register_forward_pre_hook(self, hook):
        """hook(module, args) before each forward; returns a handle with ``remove()``."""
        handle = _RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    # ---- registration ----------------------------------------------------------------------------
    def __setattr__(self, name, value):
        params = self.__dict__.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, self.__dict__, self._buffers, self._modules)
            self.register_parameter(name, value)
            return
        if params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                                "(attograd.nn.Parameter or None expected)")
            self.register_parameter(name, value)
            return
        modules = self.__dict__.get("_modules")
        if isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, self.__dict__, params, self._buffers)
            self._set_module(name, value)
            return
        if modules is not None and name in modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as child module '{name}' "
                                "(attograd.nn.Module or None expected)")
            self._set_module(name, value)
            return
        buffers = self.__dict__.get("_buffers")
        if isinstance(value, Buffer) or (buffers is not None and name in buffers):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' "
                                "(attograd.nn.Buffer, attograd.Tensor or None expected)")
            persistent = value.persistent if isinstance(value, Buffer) else name not in self._non_persistent_buffers_set
            self._remove_from(name, self.__dict__, params, modules)
            self.register_buffer(name, value, persistent)
            return
        object.__setattr__(self, name, value)

    def _set_module(self, name, module):
        self._modules[name] = module

    @staticmethod
    def _remove_from(name, *dicts):
        for d in dicts:
            if d is not None and name in d:
                del d[name]

    def __getattr__(self, name):
        d = self.__dict__
        for where in ("_parameters", "_buffers", "_modules"):
            if where in d and name in d[where]:
                return d[where][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        for where in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(where, ()):
                del self.__dict__[where][name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(object.__dir__(self)) | set(self._parameters) | set(self._buffers) | set(self._modules))

    def register_parameter(self, name, param):
        """Adds ``param`` (a Parameter, or None) under ``name``."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_type_name(param)}' object to parameter '{name}' "
                            "(attograd.nn.Parameter or None required)")
        if param is not None and not param.is_leaf:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             "created explicitly. To express '{name}' as a function of another Tensor, compute "
                             "the value in the forward() method.")
        self._parameters[name] = param

    def register_buffer(self, name, tensor, persistent=True):
        """Adds a tensor that is state but not a parameter (in ``state_dict`` when persistent)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_type_name(tensor)}' object to buffer '{name}' (attograd Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name, module):
        """Adds ``module`` (or None) as the child ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_type_name(module)} is not a Module subclass")
        _check_name(name, "module")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._set_module(name, module)

    register_module = add_module

    def get_submodule(self, target):
        """The submodule at the dotted path ``target`` ("" is this module)."""
        module = self
        if target == "":
            return module
        for item in target.split("."):
            if item not in module._modules:
                raise AttributeError(f"{type(module).__name__} has no attribute `{item}`")
            module = module._modules[item]
        return module

    def get_parameter(self, target):
        """The parameter at the dotted path ``target``."""
        path, _, name = target.rpartition(".")
        module = self.get_submodule(path)
        if name not in module._parameters:
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return module._parameters[name]

    # ---- walking the tree ------------------------------------------------------------------------------
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        if memo is None:
            memo = set()
        if remove_duplicate and id(self) in memo:
            return
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, get, prefix, recurse, remove_duplicate):
        seen = set()
        modules = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in get(module):
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield module_prefix + ("." if module_prefix else "") + name, value

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, Parameter) pairs in registration order, depth first; a shared one once."""
        yield from self._named_members(lambda m: m._parameters.items(), prefix, recurse, remove_duplicate)

    def parameters(self, recurse=True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        yield from self._named_members(lambda m: m._buffers.items(), prefix, recurse, remove_duplicate)

    def buffers(self, recurse=True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    # ---- state --------------------------------------------------------------------------------------
    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """An OrderedDict of every parameter and persistent buffer by dotted name, sharing memory
        with them (detached unless ``keep_vars``): each module's ``_save_to_state_dict``, then its
        children's, with the state-dict hooks around it, as torch's."""
        if args:
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
        for hook in list(getattr(self, "_state_dict_pre_hooks", {}).values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in list(getattr(self, "_state_dict_hooks", {}).values()):
            result = hook(self, destination, prefix, {})
            if result is not None:
                destination = result
        return destination

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """This module's own parameters and persistent buffers into ``destination`` (overridable)."""
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """This module's own parameters and buffers from ``state_dict`` (overridable, as torch's):
        keys it lacks go to missing_keys, keys under its prefix that name nothing to
        unexpected_keys, bad values to error_msgs. attograd's own copies wait until the whole
        load is known to succeed (local_metadata["_pending"]), so a failed load changes nothing."""
        for hook, with_module in list(getattr(self, "_load_state_dict_pre_hooks", {}).values()):
            args = (state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
            hook(self, *args) if with_module else hook(*args)
        local = OrderedDict((n, p) for n, p in self._parameters.items() if p is not None)
        local.update((n, b) for n, b in self._buffers.items()
                     if b is not None and n not in self._non_persistent_buffers_set)
        pending = local_metadata.get("_pending")
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, target in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected torch.Tensor or Tensor-like '
                                  f"object from checkpoint but received {type(value)}")
            elif tuple(value.shape) != tuple(target.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {value.shape} from checkpoint, "
                                  f"the shape in current model is {target.shape}.")
            elif pending is not None:
                pending.append((target, value, assign))
            else:
                _copy_state(target, value, assign)
        if strict:
            for key in state_dict:
                if key.startswith(prefix):
                    head = key[len(prefix):].split(".", 1)
                    if (len(head) > 1 and head[0] not in self._modules) or (len(head) == 1 and head[0] not in local):
                        unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies the values of ``state_dict`` into the parameters and buffers, as torch's: each
        module's ``_load_from_state_dict`` (its load pre-hooks first), then its children's, then its
        load post-hooks, which may change the incompatible keys; with ``strict``, a missing or
        unexpected key is then an error; a shape mismatch always is. Unlike torch, attograd's own
        copies are not made when it raises. Returns (missing_keys, unexpected_keys)."""
        if not hasattr(state_dict, "items"):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors, pending = [], [], [], []

        def load(module, local_state, prefix):
            metadata = {"_pending": pending}
            if assign:
                metadata["assign_to_params_buffers"] = True
            module._load_from_state_dict(local_state, prefix, metadata, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state.items() if k.startswith(child_prefix)}, child_prefix)
            keys = _IncompatibleKeys(missing, unexpected)
            for hook in list(getattr(module, "_load_state_dict_post_hooks", {}).values()):
                out = hook(module, keys)
                assert out is None, ("Hooks registered with ``register_load_state_dict_post_hook`` are not expected to "
                                     "return new values, if incompatible_keys need to be modified, it should be done "
                                     "inplace.")

        load(self, state_dict, "")
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(type(self).__name__, "\n\t".join(errors)))
        for target, value, assign_it in pending:
            _copy_state(target, value, assign_it)
        return _IncompatibleKeys(missing, unexpected)

    # ---- state-dict hooks (torch's) ------------------------------------------------------------------
    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs) before this module loads its part of a state dict."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """torch's older form: without ``with_module`` the hook is called without the module."""
        handle = _RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = (hook, with_module)
        return handle

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) after this module and its children loaded; it may change
        incompatible_keys.missing_keys and .unexpected_keys in place (before ``strict`` reads them)."""
        handle = _RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars) before state_dict() saves this module."""
        handle = _RemovableHandle(self._state_dict_pre_hooks)
        self._state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) after state_dict() saved this module."""
        handle = _RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    _register_state_dict_hook = register_state_dict_post_hook

    # ---- modes and conversions -----------------------------------------------------------------------
    def train(self, mode=True):
        """Training mode (dropout active) for this module and every submodule; returns self."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none=True):
        """Drops every parameter's .grad (torch 2's default), or zeroes it in place."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad.zero_()

    def apply(self, fn):
        """fn(module) for every submodule, then this one; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def _convert(self, dtype):
        # In place, as torch's: every handle to a parameter (the C++ layer's, an optimizer's) sees it.
        for t in itertools.chain(self.parameters(), self.buffers()):
            if t.is_floating_point() and t.dtype != dtype:
                grad = t.grad
                t.data = t.data.to(dtype)
                if grad is not None:
                    t.grad = grad.to(dtype)
        return self

    def double(self):
        return self._convert(_C.float64)

    def float(self):
        return self._convert(_C.float32)

    def to(self, *args, dtype=None, device=None, non_blocking=False):
        """``to(dtype)``, ``to("cpu")``, ``to(tensor)``: converts the floating parameters in place.
        Any device but the CPU raises what a CPU-only torch raises."""
        del non_blocking
        from ..._device import check_device

        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, _C.dtype):
                dtype = a
            else:
                check_device(a)
        if device is not None:
            check_device(device)
        return self if dtype is None else self._convert(dtype)

    def cpu(self):
        return self

    def cuda(self, device=None):
        """As a CPU-only torch's: it raises."""
        del device
        raise AssertionError("Torch not compiled with CUDA enabled")

    # ---- printing ----------------------------------------------------------------------------------------
    def extra_repr(self):
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        lines = [line for line in self.extra_repr().split("\n") if line]
        for name, module in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(module), 2))
        if not lines:
            return self._get_name() + "()"
        if len(lines) == 1 and not self._modules:
            return f"{self._get_name()}({lines[0]})"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


def _copy_state(target, value, assign):
    with no_grad():
        if assign:
            target.data = value.detach()
        else:
            target.copy_(value)


def _check_name(name, what):
    if not isinstance(name, str):
        raise TypeError(f"{what} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(f'{what} name can\'t contain "."')
    if name == "":
        raise KeyError(f'{what} name can\'t be empty string ""')


def _type_name(value):
    if isinstance(value, Tensor):
        return "attograd." + {"float32": "FloatTensor", "float64": "DoubleTensor", "int64": "LongTensor",
                              "bool": "BoolTensor"}[str(value.dtype).split(".")[-1]]
    return type(value).__module__ + "." + type(value).__name__ if type(value).__module__ != "builtins" else type(value).__name__
