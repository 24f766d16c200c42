"""The Python half of fuzz_py_args (tests/fuzz/fuzz_py_args.cpp): fuzz_one(data) reads the bytes
as a call into attograd's Python front with arguments built from them (ints from small to far
beyond int64, floats with NaN and the infinities, shapes, nested lists that contain themselves or
one list many times, slices with huge steps, device strings, dtypes, NumPy arrays of every byte
order and writability, pickles, `.data` assignments) and makes the call. The binding's argument
conversion (python/src) must turn each into a result or one of the Python exceptions torch
raises for bad input; anything else escapes fuzz_one and the harness reports it, as it reports a
crash or a sanitizer error. python/tests/test_harden_fuzz_corpus.py replays the seeds and every
input that ever failed through it on every test run."""

import math
import pickle
import sys
import warnings

import numpy as np

import attograd as torch
import attograd.nn.functional as F

class Finding(Exception):
    """The binding misbehaved: fuzz_one lets this out, and the harness reports it."""


# What bad input may raise: torch's exceptions for bad arguments, and Python's for arithmetic.
ALLOWED = (RuntimeError, ValueError, TypeError, IndexError, OverflowError, MemoryError, AssertionError,
           NotImplementedError, KeyError, ZeroDivisionError)
# Messages that say the binding failed rather than refused the input.
FORBIDDEN_TEXT = ("bad_cast", "std::", "unknown exception", "Unable to cast", "nanobind")

# A call whose output the driver can size beforehand is skipped when the output would be a real
# allocation of more than this (the fuzzer's memory limit), unless it is so large that no machine
# has it (then the size checks must refuse it: that is what is fuzzed).
BUDGET_BYTES = 1 << 24
NO_MACHINE_BYTES = 1 << 50

SPECIAL_INTS = [0, 1, -1, 2, 3, 2**31, 2**32, 2**53 + 1, 2**62, 2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**64,
                2**64 + 1, -2**64, 10**30, sys.maxsize, -sys.maxsize - 1, 2**1000, -(2**1000)]
SPECIAL_FLOATS = [0.0, -0.0, 1.0, -1.5, 0.5, math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, 2.0**63,
                  -(2.0**63), 2.0**64, 1e-300, 3.0]
DEVICES = [None, "cpu", "cpu:0", "cpu:1", "cuda", "cuda:0", "mps", "meta", "", "CPU", "cpu:", "cpu:01", ":0",
           "garbage", 0, -1, 1, True, 2.5, b"cpu", [], "cpu:99999999999"]
DTYPES = [None, torch.float32, torch.float64, torch.int64, torch.bool, float, int, bool]
NP_DTYPES = ["<f4", "<f8", "<i8", "|b1", ">f4", ">f8", ">i8", "<f2", "|u1", "<i4", "<c8"]


class Reader:
    """The fuzz input as a stream of choices; past its end every choice is 0."""

    def __init__(self, data):
        self.data, self.pos = data, 0

    def byte(self):
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def below(self, n):
        return self.byte() % n

    def pick(self, seq):
        return seq[self.below(len(seq))]

    def word(self, nbytes):
        v = 0
        for _ in range(nbytes):
            v = v << 8 | self.byte()
        return v

    def int(self):
        kind = self.below(6)
        if kind == 0:
            return self.below(12) - 3
        if kind == 1:
            return self.pick(SPECIAL_INTS)
        if kind == 2:
            return self.word(8) - 2**63
        if kind == 3:
            return np.int64(self.below(8) - 2)
        if kind == 4:
            return torch.tensor(self.below(6) - 1)
        return self.below(40)

    def float(self):
        kind = self.below(3)
        if kind == 0:
            return self.pick(SPECIAL_FLOATS)
        if kind == 1:
            return float(np.frombuffer(self.word(8).to_bytes(8, "little"), dtype="<f8")[0])
        return (self.below(200) - 100) / 8

    def scalar(self):
        kind = self.below(4)
        return self.int() if kind == 0 else self.float() if kind == 1 else bool(self.below(2)) if kind == 2 \
            else self.below(10)

    def size(self):
        n = self.below(5)
        sizes = [self.int() if self.below(4) == 0 else self.below(6) for _ in range(n)]
        form = self.below(4)
        if form == 0 and n == 1:
            return sizes[0]
        return tuple(sizes) if form == 1 else torch.Size(sizes) if form == 2 and all(isinstance(s, int) for s in sizes) \
            else sizes

    def nested(self, depth=0):
        kind = self.below(8)
        if depth > 6 or kind < 3:
            return self.scalar()
        if kind == 3:  # deep
            v = self.scalar()
            for _ in range(self.word(2) % 300):
                v = [v]
            return v
        if kind == 4:  # a list that contains itself
            a = [self.scalar()]
            a.append(a)
            return [a] if self.below(2) else a
        if kind == 5:  # one list many times
            v = [self.scalar(), self.scalar()]
            for _ in range(self.below(64)):
                v = [v, v]
            return v
        items = [self.nested(depth + 1) for _ in range(self.below(4))]
        return tuple(items) if self.below(2) else items

    def index_item(self, t):
        kind = self.below(8)
        if kind == 0:
            return self.int()
        if kind == 1:
            return slice(self.pick([None, self.int()]), self.pick([None, self.int()]),
                         self.pick([None, self.int(), sys.maxsize, -1]))
        if kind == 2:
            return None
        if kind == 3:
            return Ellipsis
        if kind == 4:
            return [self.int() for _ in range(self.below(4))]
        if kind == 5:
            return [bool(self.below(2)) for _ in range(self.below(5))]
        if kind == 6:
            return torch.tensor([self.below(8) - 4 for _ in range(self.below(4))], dtype=torch.int64)
        return torch.tensor([bool(self.below(2)) for _ in range(t.shape[0] if t.dim() else 1)])

    def index(self, t):
        n = self.below(4)
        if n == 0:
            return self.index_item(t)
        return tuple(self.index_item(t) for _ in range(n))

    def tensor(self):
        shape = [self.below(4) + (self.below(2)) for _ in range(self.below(4))]
        dtype = self.pick([torch.float32, torch.float64, torch.int64, torch.bool])
        n = 1
        for s in shape:
            n *= s
        values = torch.arange(float(n)).reshape(shape) if shape else torch.tensor(1.5)
        return values.to(dtype)

    def array(self):
        dtype = np.dtype(self.pick(NP_DTYPES))
        shape = tuple(self.below(4) for _ in range(self.below(3)))
        a = np.zeros(shape, dtype=dtype)
        if self.below(3) == 0 and a.ndim:
            a = a[::2]
        if self.below(3) == 0:
            a.flags.writeable = False
        if self.below(4) == 0:
            a = np.frombuffer(bytes(8 * (self.below(4) + 1)), dtype="<f8")
        return a


def _elements(sizes):
    """The element count of a size argument when it is ints (else None: the call refuses it)."""
    if isinstance(sizes, (int, np.integer)) and not isinstance(sizes, bool):
        sizes = [int(sizes)]
    try:
        sizes = [int(s) for s in sizes]
    except (TypeError, ValueError):
        return None
    n = 1
    for s in sizes:
        if s < 0:
            return None
        n *= s
    return n


def _affordable(elements, itemsize=8):
    """Whether a call making `elements` elements may run: within the budget, or beyond any machine."""
    if elements is None:
        return True
    nbytes = elements * itemsize
    return nbytes <= BUDGET_BYTES or nbytes >= NO_MACHINE_BYTES


def _nested_elements(v, depth=0):
    """The element count the first path of nested lists describes (what tensor() sizes first)."""
    n = 1
    while isinstance(v, (list, tuple)) and depth < 200:
        n *= len(v)
        if not v:
            return 0
        v, depth = v[0], depth + 1
    return n


def _arange_count(start, end, step):
    try:
        s, e, st = float(start), float(end), float(step)
        count = math.ceil((e - s) / st)
    except (TypeError, ValueError, OverflowError, ZeroDivisionError):
        return None
    return count if count > 0 else 0


def _call(r):
    op = r.below(24)
    if op == 0:
        data = r.nested()
        if _affordable(_nested_elements(data), 24):
            torch.tensor(data, dtype=r.pick(DTYPES), device=r.pick(DEVICES))
    elif op == 1:
        size = r.size()
        if _affordable(_elements(size)):
            r.pick([torch.zeros, torch.ones, torch.empty, torch.rand, torch.randn])(size, dtype=r.pick(DTYPES[:4]),
                                                                               device=r.pick(DEVICES))
    elif op == 2:
        size, value = r.size(), r.scalar()
        if _affordable(_elements(size)):
            torch.full(size, value, dtype=r.pick(DTYPES))
    elif op == 3:
        start, end, step = r.scalar(), r.scalar(), r.scalar()
        if _affordable(_arange_count(start, end, step)):
            torch.arange(start, end, step, dtype=r.pick(DTYPES[:5]))
    elif op == 4:
        steps = r.int()
        if _affordable(_elements([steps])):
            torch.linspace(r.float(), r.float(), steps)
    elif op == 5:
        n, m = r.int(), r.pick([None, r.int()])
        if _affordable(_elements([n, n if m is None else m])):
            torch.eye(n, m)
    elif op == 6:
        low, high, size = r.int(), r.int(), r.size()
        if _affordable(_elements(size)):
            torch.randint(low, high, size)
    elif op == 7:
        t = r.tensor()
        t[r.index(t)]
    elif op == 8:
        t = r.tensor()
        with torch.no_grad():
            t[r.index(t)] = r.pick([r.scalar(), r.tensor()])
    elif op == 9:
        t = r.tensor()
        r.pick([t.sum, t.mean, t.amax, t.argmax, t.max, t.min, t.size, t.stride, t.unsqueeze, t.squeeze,
                t.flatten, t.softmax, t.cumsum if hasattr(t, "cumsum") else t.sum])(r.int())
    elif op == 10:
        t = r.tensor()
        r.pick([t.sum, t.mean, t.permute, t.reshape, t.view, t.flip])(r.size())
    elif op == 11:
        t = r.tensor()
        r.pick([t.narrow, t.transpose])(r.int(), r.int(), *([r.int()] if r.below(2) else []))
    elif op == 12:
        t = r.tensor()
        size = r.size()
        if _affordable(_elements(size)):
            t.expand(size)
    elif op == 13:
        t = r.tensor()
        pieces, dim = r.pick([r.int(), r.size()]), r.int()
        try:  # an empty dim gives `pieces` empty pieces, as torch: a real allocation of that many
            empty = t.numel() == 0
            many = isinstance(pieces, (int, np.integer)) and not isinstance(pieces, bool) and int(pieces) > 1 << 20
        except (TypeError, ValueError):
            empty = many = False
        if not (empty and many):
            r.pick([t.split, t.chunk])(pieces, dim)
    elif op == 14:
        t = r.tensor()
        t.unflatten(r.int(), r.size())
    elif op == 15:
        classes = torch.tensor([r.int() if r.below(3) == 0 else r.below(5) for _ in range(r.below(4))])
        n = r.pick([-1, r.int(), 3])
        width = n if n != -1 else (max(classes.tolist()) + 1 if classes.numel() else 0)
        if _affordable(_elements([max(classes.numel(), 1), width])):
            F.one_hot(classes, n)
    elif op == 16:
        a = r.array()
        r.pick([torch.from_numpy, torch.as_tensor, torch.tensor, torch.from_dlpack])(a).fill_(1)
    elif op == 17:
        t = r.tensor()
        back = pickle.loads(pickle.dumps(t))
        if back.shape != t.shape or back.dtype != t.dtype:
            raise Finding(f"pickle changed {t.shape} {t.dtype} into {back.shape} {back.dtype}")
    elif op == 18:
        p = torch.nn.Parameter(torch.ones(r.below(5) + 1))
        opt = r.pick([torch.optim.SGD, torch.optim.AdamW])([p], lr=0.1)
        (p * 2).sum().backward()
        p.data = r.pick([r.tensor(), torch.ones(r.below(6)), 3])
        r.pick([opt.step, lambda: (p * 2).sum().backward()])()
    elif op == 19:
        t = r.tensor()
        with torch.no_grad():
            t.fill_(r.scalar())
    elif op == 20:
        t = r.tensor()
        r.pick([lambda: t + r.scalar(), lambda: t * r.scalar(), lambda: r.scalar() - t, lambda: t / r.scalar(),
                lambda: t ** r.scalar(), lambda: t.clamp(min=r.scalar()), lambda: t.masked_fill(t > 1, r.scalar())])()
    elif op == 21:
        t = r.tensor()
        t.to(r.pick(DEVICES))
    elif op == 22:
        torch.device(r.pick(DEVICES))
    else:
        t = r.tensor()
        size = r.size()
        if _affordable(_elements(size)):
            r.pick([t.new_zeros, t.new_ones, t.new_empty])(size)


def fuzz_one(data):
    """Makes the call `data` describes; returns normally unless the binding misbehaved."""
    torch.manual_seed(0)
    r = Reader(bytes(data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _call(r)
        except ALLOWED as e:
            text = str(e)
            if any(bad in text for bad in FORBIDDEN_TEXT):
                raise Finding(f"the binding failed instead of refusing: {type(e).__name__}: {text}") from e
