"""The C++ layers as Modules. Each wraps its C++ module (python/src/bind_nn.cpp): the C++
module's own parameter tensors become this Module's Parameters (the same tensors, so an
optimizer's update from Python is what the C++ forward reads), its C++ children become child
Modules, ``forward`` is the C++ forward and ``train``/``eval`` reach the C++ module too. A
parameter assigned from Python is put in the C++ module's member as well, so the forward uses
what ``named_parameters`` shows."""

import copy

from ... import _C, _device
from .._multi_head_attention import mha_shape_check
from ..parameter import as_parameter
from .module import Module

__all__ = ["CppModule", "Linear", "Embedding", "LayerNorm", "RMSNorm", "MultiheadAttention", "wrap_cpp_module"]


class CppModule(Module):
    """A C++ module (``nn::Module``) as a Module; the class of a model's C++ parts."""

    # The names of the parameters the C++ class keeps as members (bind_nn.cpp's properties).
    _cpp_members = ()
    # Attributes a deepcopy shares instead of copying (immutable C++ objects).
    _copy_shares = ()

    def __init__(self, cpp=None):
        super().__init__()
        if cpp is not None:
            self._adopt(cpp)

    def _adopt(self, cpp):
        object.__setattr__(self, "_cpp", cpp)
        for name, t in cpp.named_parameters():
            if "." not in name:  # its own; the children's come with them
                self._parameters[name] = as_parameter(t)
        for name in self._cpp_members:  # an optional one it does not have (bias=False): None, as torch's
            if name not in self._parameters and getattr(cpp, name) is None:
                self._parameters[name] = None
        for name, child in cpp.named_children():
            self._modules[name] = wrap_cpp_module(child)
        object.__setattr__(self, "training", cpp.training)

    def register_parameter(self, name, param):
        cpp = self.__dict__.get("_cpp")
        if cpp is not None and name not in self._cpp_members and name not in self._parameters:
            raise AttributeError(f"{self._get_name()} is a C++ module: it cannot take a new parameter '{name}' "
                                 "(wrap it in a Python Module instead)")
        if cpp is not None and name not in self._cpp_members:
            raise AttributeError(f"{self._get_name()} is a C++ module whose parameter '{name}' cannot be replaced "
                                 "(copy into it instead: p.data = new or p.copy_(new))")
        super().register_parameter(name, param)
        if cpp is not None:
            setattr(cpp, name, param)

    def _set_module(self, name, module):
        if self.__dict__.get("_cpp") is not None:
            raise AttributeError(f"{self._get_name()} is a C++ module: its submodule '{name}' cannot be replaced")
        super()._set_module(name, module)

    def train(self, mode=True):
        super().train(mode)
        self._cpp.train(mode)
        return self

    def forward(self, input):
        return self._cpp.forward(input)

    def _get_name(self):
        return self._cpp.name() if type(self) is CppModule else type(self).__name__

    # A C++ container (nn::ModuleList, nn::Sequential): its children by index, as torch's.
    def _indexed(self):
        keys = list(self._modules)
        if keys != [str(i) for i in range(len(keys))]:
            raise TypeError(f"'{self._get_name()}' is not a list of modules")
        return list(self._modules.values())

    def __getitem__(self, idx):
        return self._indexed()[idx]

    def __len__(self):
        return len(self._indexed())

    def __iter__(self):
        return iter(self._indexed())

    def __bool__(self):  # a module is true, container or not (len() is for the containers)
        return True

    def _clone_cpp(self):
        """A fresh C++ module of the same configuration (deepcopy then copies the values)."""
        raise TypeError(f"cannot copy {self._get_name()}: it is a part of a C++ model (copy the whole model)")

    def __deepcopy__(self, memo):
        # The C++ module cannot be pickled: a new one is built and the values copied, as
        # copy.deepcopy(model) gives in torch (an EMA copy, a snapshot).
        cpp = self._clone_cpp()
        new = type(self).__new__(type(self))
        CppModule.__init__(new, cpp)
        for key, value in self.__dict__.items():
            if key not in new.__dict__:
                object.__setattr__(new, key, value if key in self._copy_shares else copy.deepcopy(value, memo))
        for name in self._parameters:
            if self._parameters[name] is None and new._parameters.get(name) is not None:
                new.register_parameter(name, None)
        with _no_grad():
            for (name, p), (_, q) in zip(self.named_parameters(), new.named_parameters()):
                q.copy_(p)
                q.requires_grad_(p.requires_grad)
        new.train(self.training)
        memo[id(self)] = new
        return new


def wrap_cpp_module(cpp):
    """The Module for a C++ module: the layer's own class for the bound layers, else CppModule."""
    for cpp_type, cls in _WRAPPERS:
        if isinstance(cpp, cpp_type):
            m = cls.__new__(cls)
            CppModule.__init__(m, cpp)
            return m
    return CppModule(cpp)


def _no_device(device):
    _device.check_device(device)


class Linear(CppModule):
    """y = x·Wᵀ + b, as torch.nn.Linear (kaiming-uniform weight, uniform bias)."""

    _cpp_members = ("weight", "bias")

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        _no_device(device)
        super().__init__(_C._Linear(in_features, out_features, bias, dtype))
        if not bias:
            self._parameters["bias"] = None

    @property
    def in_features(self):
        return self._cpp.in_features

    @property
    def out_features(self):
        return self._cpp.out_features

    def _clone_cpp(self):
        return _C._Linear(self.in_features, self.out_features, self.bias is not None, self.weight.dtype)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def padding_index(padding_idx, num_embeddings):
    """torch's check and reading of padding_idx (negative counts from the end)."""
    if padding_idx is None:
        return None
    if padding_idx > 0:
        assert padding_idx < num_embeddings, "Padding_idx must be within num_embeddings"
    elif padding_idx < 0:
        assert padding_idx >= -num_embeddings, "Padding_idx must be within num_embeddings"
        padding_idx = num_embeddings + padding_idx
    return padding_idx


class Embedding(CppModule):
    """A lookup table (num_embeddings, embedding_dim), N(0, 1) at init, as torch.nn.Embedding; the
    row at ``padding_idx`` starts at zero and gets no gradient."""

    _cpp_members = ("weight",)

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        _no_device(device)
        if max_norm is not None or scale_grad_by_freq or sparse:
            raise NotImplementedError("attograd's Embedding has no max_norm, scale_grad_by_freq or sparse")
        padding_idx = padding_index(padding_idx, num_embeddings)
        if _weight is None:
            cpp = _C._Embedding(num_embeddings, embedding_dim, dtype, padding_idx)
        else:  # the Parameter is made on _weight's memory, as torch's
            assert list(_weight.shape) == [num_embeddings, embedding_dim], \
                "Shape of weight does not match num_embeddings and embedding_dim"
            cpp = _C._Embedding.from_pretrained(_weight if dtype is None else _weight.to(dtype), _freeze, padding_idx)
        super().__init__(cpp)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False):
        """An Embedding whose weight is ``embeddings`` (2-d; the same memory), frozen unless freeze=False."""
        assert embeddings.dim() == 2, "Embeddings parameter is expected to be 2-dimensional"
        rows, cols = embeddings.shape
        return cls(num_embeddings=rows, embedding_dim=cols, _weight=embeddings, _freeze=freeze, padding_idx=padding_idx,
                   max_norm=max_norm, norm_type=norm_type, scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)

    num_embeddings = property(lambda self: self._cpp.num_embeddings)
    embedding_dim = property(lambda self: self._cpp.embedding_dim)
    padding_idx = property(lambda self: self._cpp.padding_idx)
    max_norm = None
    norm_type = 2.0
    scale_grad_by_freq = False
    sparse = False

    def _clone_cpp(self):
        return _C._Embedding(self.num_embeddings, self.embedding_dim, self.weight.dtype, self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s if self.padding_idx is None else s + f", padding_idx={self.padding_idx}"


def _last_dim(normalized_shape, who):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if len(shape) != 1:
        raise NotImplementedError(f"attograd's {who} normalizes over the last dim only: normalized_shape "
                                  f"must be one size, got {shape}")
    return shape


class LayerNorm(CppModule):
    """Normalisation over the trailing dims ``normalized_shape`` with a gain and a bias, as
    torch.nn.LayerNorm."""

    _cpp_members = ("weight", "bias")

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        _no_device(device)
        super().__init__(_C._LayerNorm(normalized_shape, eps, elementwise_affine, dtype))
        if not elementwise_affine:
            self._parameters["weight"] = None
            self._parameters["bias"] = None
        elif not bias:
            self.bias = None

    normalized_shape = property(lambda self: tuple(self._cpp.normalized_shape))
    eps = property(lambda self: self._cpp.eps)
    elementwise_affine = property(lambda self: self.weight is not None)

    def _clone_cpp(self):
        return _C._LayerNorm(self.normalized_shape, self.eps, self.elementwise_affine, _dtype_of(self))

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class RMSNorm(CppModule):
    """x / √(mean(x²) + eps) ⊙ weight over the last dim, as torch.nn.RMSNorm."""

    _cpp_members = ("weight",)

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        _no_device(device)
        shape = _last_dim(normalized_shape, "RMSNorm")
        super().__init__(_C._RMSNorm(shape[0], eps, elementwise_affine, dtype))
        if not elementwise_affine:
            self._parameters["weight"] = None

    normalized_shape = property(lambda self: (self._cpp.dim,))
    eps = property(lambda self: self._cpp.eps)
    elementwise_affine = property(lambda self: self.weight is not None)

    def _clone_cpp(self):
        return _C._RMSNorm(self._cpp.dim, self.eps, self.elementwise_affine, _dtype_of(self))

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class MultiheadAttention(CppModule):
    """torch.nn.MultiheadAttention's parameters, masks and shapes (docs/python.md says where it differs)."""

    _cpp_members = ("in_proj_weight", "in_proj_bias")

    # torch's attributes for what attograd's layer does not have (F.multi_head_attention_forward reads them)
    bias_k = bias_v = None
    add_zero_attn = False
    q_proj_weight = k_proj_weight = v_proj_weight = None
    _qkv_same_embed_dim = True

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        _no_device(device)
        if embed_dim <= 0 or num_heads <= 0:  # torch's message
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        assert (embed_dim // num_heads) * num_heads == embed_dim, "embed_dim must be divisible by num_heads"
        if add_bias_kv or add_zero_attn or (kdim not in (None, embed_dim)) or (vdim not in (None, embed_dim)):
            raise NotImplementedError("attograd's MultiheadAttention has no add_bias_kv, add_zero_attn, kdim or vdim "
                                      "(F.multi_head_attention_forward has them)")
        super().__init__(_C._MultiheadAttention(embed_dim, num_heads, dropout, bias, batch_first, dtype))
        if not bias:
            self._parameters["in_proj_bias"] = None

    kdim = property(lambda self: self._cpp.embed_dim)
    vdim = property(lambda self: self._cpp.embed_dim)
    embed_dim = property(lambda self: self._cpp.embed_dim)
    num_heads = property(lambda self: self._cpp.num_heads)
    head_dim = property(lambda self: self._cpp.head_dim)
    dropout = property(lambda self: self._cpp.dropout)
    batch_first = property(lambda self: self._cpp.batch_first)

    def _clone_cpp(self):
        return _C._MultiheadAttention(self.embed_dim, self.num_heads, self.dropout, self.in_proj_bias is not None,
                                      self.batch_first, self.in_proj_weight.dtype)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        """(output, weights): weights averaged over heads, per head, or None without need_weights."""
        # torch's checks, with its AssertionErrors, before attograd's own (which name the layout)
        mha_shape_check(query, key, value, key_padding_mask, attn_mask, self.num_heads)
        if query.shape[-1] != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but got {query.shape[-1]}")
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        return self._cpp.forward(query, key, value, key_padding_mask, need_weights, attn_mask, average_attn_weights,
                                 is_causal)


def _dtype_of(module):
    for p in module.parameters():
        return p.dtype
    return None  # no parameters: the default dtype


def _no_grad():
    from ...autograd.grad_mode import no_grad

    return no_grad()


_WRAPPERS = [(_C._Linear, Linear), (_C._Embedding, Embedding), (_C._LayerNorm, LayerNorm), (_C._RMSNorm, RMSNorm),
             (_C._MultiheadAttention, MultiheadAttention)]
