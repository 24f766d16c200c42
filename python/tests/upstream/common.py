"""What the upstream cases share. A case is a function of ``T`` (the framework: torch when
make_upstream_fixtures.py records it, attograd when the tests replay it) that returns what it
observed: numbers, lists of them, strings, and the exceptions and warnings raised (``outcome``).
The tests compare attograd's observations with torch's, recorded in fixtures/upstream.json.

A case is filed under the name of the upstream test it restates (its provenance; the module's
docstring names the upstream file), while the function itself is named for what it checks."""

import warnings

import numpy as np


def registry():
    """The cases of one module and the decorator that files a case under an upstream test's name."""
    cases = {}

    def upstream(test_name):
        def file(fn):
            assert test_name not in cases, f"{test_name} is restated twice"
            cases[test_name] = fn
            return fn

        return file

    return cases, upstream


def values(t):
    """A tensor's values as nested lists (None for None), its dtype's kind aside."""
    if t is None:
        return None
    return t.detach().double().tolist() if t.dtype.is_floating_point else t.detach().tolist()


def outcome(fn):
    """What fn() did: {"error": None, "result": ...}, or the exception's type and first line."""
    try:
        result = fn()
    except Exception as e:  # noqa: BLE001 (the type is what is compared)
        return {"error": type(e).__name__, "message": str(e).splitlines()[0] if str(e) else ""}
    return {"error": None}


def warned(fn):
    """The categories and first lines of the warnings fn() gave, in order."""
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        fn()
    return [[w.category.__name__, str(w.message).splitlines()[0]] for w in ws]


def arange(T, *shape, dtype=None, scale=0.1, offset=0.0):
    """Deterministic inputs of any shape, the same in both frameworks: values spread by a sine."""
    n = int(np.prod(shape)) if shape else 1
    data = (np.sin(np.arange(n) * 1.3 + 0.7) * scale * 10 + offset).reshape(shape)
    return T.tensor(data, dtype=dtype or T.float64)


class Fixed:
    """Deterministic stand-ins for torch.randn(*shape) in a case: draws from one NumPy generator,
    seeded per case, so both frameworks see the same numbers."""

    def __init__(self, T, seed=0):
        self.T = T
        self.rng = np.random.default_rng(seed)

    def randn(self, *shape, dtype=None, requires_grad=False):
        return self.T.tensor(self.rng.standard_normal(shape), dtype=dtype or self.T.float64,
                             requires_grad=requires_grad)

    def rand(self, *shape, dtype=None, requires_grad=False):
        return self.T.tensor(self.rng.uniform(0, 1, shape), dtype=dtype or self.T.float64, requires_grad=requires_grad)

    def leaf(self, *shape):
        """A float64 leaf that requires grad, normally distributed."""
        return self.randn(*shape, requires_grad=True)

    def leaves(self, count, *shape):
        """count such leaves of one shape, drawn one after the other."""
        return [self.leaf(*shape) for _ in range(count)]
