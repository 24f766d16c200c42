"""The seed walk of ``attograd explain attention`` as Python objects."""

from .. import _C
from ._html import iframe

__all__ = ["AttentionWalk", "WalkStep", "explain_attention"]


class WalkStep:
    """One quantity of the backward walk: its formula, and the matrix three ways (float64 Tensors)."""

    def __init__(self, step):
        self.quantity = step.quantity
        self.formula = step.formula
        self.formula_mathml = step.formula_mathml
        self.by_hand = step.by_hand
        self.engine = step.engine
        self.finite_diff = step.finite_diff
        self.engine_diff = step.engine_diff
        self.fd_diff = step.fd_diff
        self.fd_floor = step.fd_floor
        self.agrees = step.agrees()

    def as_dict(self):
        return {k: (v.tolist() if isinstance(v, _C.Tensor) else v) for k, v in vars(self).items()}

    def __repr__(self):
        return (f"WalkStep({self.quantity} = {self.formula}, engine_diff={self.engine_diff:.1e}, "
                f"fd_diff={self.fd_diff:.1e}, agrees={self.agrees})")


class AttentionWalk:
    """S = Q·Kᵀ/√d, A = softmax(S), C = A·V, L = Σ C ⊙ G, then dL/dC, dL/dV, dL/dA, dL/dS, dL/dQ,
    dL/dK, each by hand, by attograd's engine and by central differences."""

    def __init__(self, walk):
        self._walk = walk
        self.q, self.k, self.v, self.g = walk.q, walk.k, walk.v, walk.g
        self.scores, self.weights, self.context = walk.scores, walk.weights, walk.context
        self.loss = walk.loss
        self.fd_step = walk.fd_step
        self.steps = [WalkStep(s) for s in walk.steps]

    def step(self, quantity):
        """The step of ``quantity`` ("dL/dS", ...)."""
        for s in self.steps:
            if s.quantity == quantity:
                return s
        raise KeyError(f"no step {quantity!r}; the steps are {[s.quantity for s in self.steps]}")

    def agrees(self):
        """Every step agrees: the engine to 1e-12 and finite differences to 1e-6 (scaled)."""
        return self._walk.agrees()

    def __str__(self):
        return self._walk.text()

    def __repr__(self):
        return f"AttentionWalk(loss={self.loss:.6g}, {len(self.steps)} steps, agrees={self.agrees()})"

    def html(self):
        """The page of ``attograd explain attention --html`` (self-contained, formulas in MathML)."""
        return self._walk.html()

    def _repr_html_(self):
        return iframe(self.html(), 900)


def explain_attention(q=None, k=None, v=None, g=None, mask=None, causal=False):
    """The walk for Q (L, d), K (S, d), V (S, dv), G (L, dv) (any not given: the README's seed
    example's), a bool mask (L, S) true where a query may NOT attend, and the causal rule."""

    def matrix(x):
        return None if x is None else (x if isinstance(x, _C.Tensor) else _C._tensor(x, _C.float64, False))

    return AttentionWalk(_C._attention_walk(matrix(q), matrix(k), matrix(v), matrix(g),
                                            None if mask is None else _C._tensor(mask, _C.bool, False), causal))
