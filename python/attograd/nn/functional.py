"""``attograd.nn.functional``: torch.nn.functional's names and keyword arguments on attograd's ops
(python/src/bind_nn_functional.cpp). The losses take torch's ``reduction`` strings (and its
legacy ``size_average``/``reduce``); the C++ losses also differentiate their weight tensors,
which torch leaves without gradient."""

import math

from .. import _C
from ._multi_head_attention import multi_head_attention_forward

Tensor = _C.Tensor

__all__ = [
    "relu", "gelu", "silu", "tanh", "sigmoid", "softmax", "log_softmax", "dropout", "linear", "embedding",
    "layer_norm", "rms_norm", "scaled_dot_product_attention", "multi_head_attention_forward", "one_hot", "normalize",
    "mse_loss", "l1_loss",
    "nll_loss", "cross_entropy", "binary_cross_entropy_with_logits",
]

_REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}


def _reduction(reduction):
    try:
        return _REDUCTIONS[reduction]
    except (KeyError, TypeError):
        raise ValueError(f"{reduction} is not a valid value for reduction") from None


def _legacy_reduction(size_average, reduce, reduction):
    """torch's reading of the deprecated size_average and reduce arguments."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


# ---- activations -----------------------------------------------------------------------------------
def relu(input, inplace=False):
    return _C.relu(input)


def gelu(input, approximate="none"):
    if approximate not in ("none", "tanh"):
        raise ValueError(f"approximate argument must be either none or tanh, got {approximate!r}")
    return _C._nn_gelu(input, approximate == "tanh")


def silu(input, inplace=False):
    return _C._nn_silu(input)


def tanh(input):
    return _C.tanh(input)


def sigmoid(input):
    return _C.sigmoid(input)


def _softmax_dim(ndim):
    return 0 if ndim in (0, 1, 3) else 1  # torch's implicit dim (deprecated there too)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return _C.softmax(input, _softmax_dim(input.dim()) if dim is None else dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dtype is not None:
        input = input.to(dtype)
    return _C.log_softmax(input, _softmax_dim(input.dim()) if dim is None else dim)


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes each element with probability p when training, scaling the rest by 1/(1 − p);
    draws from attograd's generator (``manual_seed``)."""
    if inplace:
        raise NotImplementedError("attograd records no in-place ops: use dropout(x) without inplace")
    return _C._nn_dropout(input, p, training)


# ---- layers -----------------------------------------------------------------------------------------------
def linear(input, weight, bias=None):
    """input·weightᵀ + bias."""
    return _C._nn_linear(input, weight, bias)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """The rows of ``weight`` at the int64 ids ``input``; the rows looked up at ``padding_idx`` pass
    no gradient back to the weight."""
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError("attograd's embedding has no max_norm, scale_grad_by_freq or sparse")
    if padding_idx is not None and weight.dim() == 2:
        from .modules.cpp import padding_index

        padding_idx = padding_index(padding_idx, weight.size(0))
    return _C._nn_embedding(input, weight, padding_idx)


def _normalized_last(input, normalized_shape, who):
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if len(shape) != 1:
        raise NotImplementedError(f"attograd's {who} normalizes over the last dim only, got normalized_shape {shape}")
    if input.dim() == 0 or input.shape[-1] != shape[0]:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape [*, {shape[0]}], "
                           f"but got input of size{list(input.shape)}")


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalised over the trailing dims ``normalized_shape``, then ⊙ weight + bias (of that shape)."""
    return _C._nn_layer_norm(input, normalized_shape, weight, bias, eps)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    _normalized_last(input, normalized_shape, "rms_norm")
    return _C._nn_rms_norm(input, weight, eps)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(q·kᵀ·scale + mask)·v. Without a mask and dropout: attograd's blockwise kernel;
    with them, the same from ops. A bool attn_mask is True where a query MAY attend (torch's
    meaning here, the opposite of MultiheadAttention's)."""
    if enable_gqa:
        raise NotImplementedError("attograd's scaled_dot_product_attention has no enable_gqa")
    if attn_mask is None and dropout_p == 0.0:
        return _C._nn_scaled_dot_product_attention(query, key, value, is_causal, scale)
    if attn_mask is not None and is_causal:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    L, S = query.shape[-2], key.shape[-2]
    s = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = _C.matmul(query, key.transpose(-2, -1)) * s
    if is_causal:
        attn_mask = _C.tril(_C._ones([L, S], _C.bool, False))
    if attn_mask is not None:
        if attn_mask.dtype == _C.bool:
            scores = scores.masked_fill(~attn_mask, -math.inf)
        else:
            scores = scores + attn_mask
    weights = _C.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return _C.matmul(weights, value)


def one_hot(tensor, num_classes=-1):
    """int64 (…) -> int64 (…, num_classes) with a 1 at each class index."""
    if tensor.dtype != _C.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel():
        # torch's range checks: an index outside [0, num_classes) would give a row of zeros.
        if tensor.min().item() < 0:
            raise RuntimeError("Class values must be non-negative.")
        largest = tensor.max().item()
        if num_classes == -1:
            num_classes = largest + 1
        elif largest >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    elif num_classes == -1:
        num_classes = 0
    if not tensor.numel():  # no classes to compare: nothing as large as num_classes is made
        return _C._zeros(tuple(tensor.shape) + (num_classes,), _C.int64, False)
    classes = _C._arange(0, num_classes, 1, _C.int64, False)
    return (tensor.unsqueeze(-1) == classes).long()


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """input / max(‖input‖_p over dim, eps)."""
    norm = input.norm(p, dim, keepdim=True).clamp(min=eps)
    return input / norm


# ---- losses -------------------------------------------------------------------------------------------------
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if weight is not None:
        raise NotImplementedError("attograd's mse_loss has no weight")
    return _C._nn_mse_loss(input, target, _reduction(_legacy_reduction(size_average, reduce, reduction)))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    if weight is not None:
        raise NotImplementedError("attograd's l1_loss has no weight")
    return _C._nn_l1_loss(input, target, _reduction(_legacy_reduction(size_average, reduce, reduction)))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    return _C._nn_nll_loss(input, target, weight, ignore_index,
                           _reduction(_legacy_reduction(size_average, reduce, reduction)))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax over dim 1 and nll_loss, with class indices or class probabilities as target."""
    return _C._nn_cross_entropy(input, target, weight, ignore_index,
                                _reduction(_legacy_reduction(size_average, reduce, reduction)), label_smoothing)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    return _C._nn_binary_cross_entropy_with_logits(input, target, weight,
                                                   _reduction(_legacy_reduction(size_average, reduce, reduction)),
                                                   pos_weight)
