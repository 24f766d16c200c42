"""torch's random numbers: the Generator, the default generator's seed and state, the random
factories (rand, randn, randint, randperm, normal and their ``_like``), bernoulli, multinomial,
and the in-place draws of Tensor (normal_, uniform_, random_, bernoulli_, exponential_).

They draw from torch's CPU generator, written again in C++ (autograd/random.h,
autograd/torch_stream.h; bound in python/src/bind_random.cpp): after the same seed, the numbers
torch gives, bit for bit. Everything random in attograd's Python front draws from it: Dropout,
nn.init, and the default initialisation of Linear, Embedding and MultiheadAttention.
"""

import builtins

from . import _C, _device
from ._factories import _like

Tensor = _C.Tensor
Generator = _C.Generator
default_generator = _C.default_generator

__all__ = [
    "Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
    "rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like", "randint_like", "bernoulli",
    "multinomial",
]


# ---- the default generator ------------------------------------------------------------------------
def manual_seed(seed):
    """Seeds the default generator (torch's stream: the same numbers torch draws after the same
    seed); returns it."""
    return default_generator.manual_seed(builtins.int(seed))


def seed():
    """Seeds the default generator from the system's entropy; returns the seed."""
    return default_generator.seed()


def initial_seed():
    """The default generator's last seed."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state: torch's 5056 bytes, in an int64 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restores a state from get_rng_state() (attograd's or torch's bytes)."""
    default_generator.set_state(new_state)


# ---- factories ------------------------------------------------------------------------------------
def _size(size):
    if len(size) == 1 and not isinstance(size[0], builtins.int):
        return size[0]
    return size


def _made(t, requires_grad):
    return t.requires_grad_() if requires_grad else t


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Uniform [0, 1) samples."""
    _device.check_device(device)
    return _made(_C._draw_uniform_(_C._empty(_size(size), dtype, False), 0.0, 1.0, generator), requires_grad)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False):
    """Normal(0, 1) samples."""
    _device.check_device(device)
    return _made(_C._draw_normal_(_C._empty(_size(size), dtype, False), 0.0, 1.0, generator), requires_grad)


def randint(low, high=None, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Integers uniform in [low, high) (``randint(high, size)`` starts at 0), int64 by default."""
    _device.check_device(device)
    if size is None:
        low, high, size = 0, low, high
    t = _C._empty(size, _C.int64 if dtype is None else dtype, False)
    return _made(_C._draw_random_(t, low, high, generator), requires_grad)


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """0 .. n−1 in random order."""
    _device.check_device(device)
    return _made(_C._randperm(n, _C.int64 if dtype is None else dtype, generator), requires_grad)


def normal(mean=0.0, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Normal samples: ``normal(mean, std, size)`` for numbers, or with a tensor ``mean`` and/or
    ``std`` one sample per element of their broadcast (torch's: N(0, 1) scaled by std, then mean added)."""
    _device.check_device(device)
    if not isinstance(mean, Tensor) and not isinstance(std, Tensor):
        if size is None:
            raise TypeError("normal() with a number mean and std needs a size")
        t = _C._draw_normal_(_C._empty(size, dtype, False), mean, std, generator)
        return _made(t, requires_grad)
    # Differentiable in mean and std, as torch's: the draws are constants.
    if not isinstance(std, Tensor):  # torch: N(0, std) drawn, mean added
        return _C._draw_normal_(_C._empty(mean.shape, mean.dtype, False), 0.0, std, generator) + mean
    shape_of = std if not isinstance(mean, Tensor) else (mean.detach() + std.detach())  # the broadcast's shape, dtype
    z = _C._draw_normal_(_C._empty(shape_of.shape, shape_of.dtype, False), 0.0, 1.0, generator)
    return z * std + mean


rand_like = _like(rand)
randn_like = _like(randn)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """attograd.randint of ``input``'s shape and (unless told otherwise) dtype."""
    _device.check_device(device)
    if high is None:
        low, high = 0, low
    return randint(low, high, input.shape, generator=generator, dtype=dtype or input.dtype, requires_grad=requires_grad)


def bernoulli(input, p=None, *, generator=None):
    """0 or 1 for each element of ``input``, 1 with the probability it holds (or with ``p``)."""
    if p is None:
        return _C._bernoulli(input, generator)
    return _C._draw_bernoulli_(_C._empty(input.shape, input.dtype, False), p, generator)


def multinomial(input, num_samples, replacement=False, *, generator=None):
    """Indices drawn from each row of ``input`` (1-d or 2-d, weights ≥ 0 that need not sum to one),
    as torch.multinomial: with replacement by each row's cumulative distribution, without (or a
    single sample) as torch's exponential trick draws them."""
    return _C._multinomial(input, num_samples, replacement, generator)


# ---- the Tensor methods -----------------------------------------------------------------------------
def _normal_(self, mean=0.0, std=1.0, *, generator=None):
    return _C._draw_normal_(self, mean, std, generator)


def _uniform_(self, a=0.0, b=1.0, *, generator=None):
    return _C._draw_uniform_(self, a, b, generator)


def _random_(self, *args, generator=None, **kwargs):
    # random_(), random_(to), random_(from, to), random_(from, None) (up to the dtype's largest);
    # from= and to= as keywords.
    unknown = set(kwargs) - {"from", "to"}
    if unknown:
        raise TypeError(f"random_() got an unexpected keyword argument '{unknown.pop()}'")
    if len(args) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments ({len(args)} given)")
    if len(args) == 1 and "from" not in kwargs:
        frm, to = 0, args[0]
    else:
        frm = args[0] if args else kwargs.get("from")
        to = args[1] if len(args) == 2 else kwargs.get("to")
        if frm is None and to is not None:
            frm = 0
    return _C._draw_random_(self, frm, to, generator)


def _bernoulli_(self, p=0.5, *, generator=None):
    return _C._draw_bernoulli_(self, p, generator)


def _exponential_(self, lambd=1.0, *, generator=None):
    return _C._draw_exponential_(self, lambd, generator)


def _bernoulli_method(self, p=None, *, generator=None):
    return bernoulli(self, p, generator=generator)


def _multinomial_method(self, num_samples, replacement=False, *, generator=None):
    return multinomial(self, num_samples, replacement, generator=generator)


def _install():
    T = Tensor
    T.normal_ = _normal_
    T.uniform_ = _uniform_
    T.random_ = _random_
    T.bernoulli_ = _bernoulli_
    T.exponential_ = _exponential_
    T.bernoulli = _bernoulli_method
    T.multinomial = _multinomial_method
