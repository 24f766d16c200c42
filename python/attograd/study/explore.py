"""One forward and backward pass node by node (``attograd explore``): each op's value, the
gradient it received and sent, the engine's order, the backward formula its source states, and
a finite-difference check of each node's local backward; ``_repr_html_`` is the explorer page
(one self-contained HTML file: no network, no server)."""

from .. import _C
from ._html import iframe

__all__ = ["Explore", "explore"]


class Explore:
    def __init__(self, capture, command):
        self._capture = capture
        self._command = command
        self.title = capture.title
        self.loss = capture.loss
        self.order = list(capture.order)
        self.nodes = capture.nodes()

    @property
    def fd_failures(self):
        """How many nodes' finite-difference checks failed (0: every checked backward agrees)."""
        return self._capture.fd_failures()

    @property
    def fd_tolerance(self):
        return self._capture.fd_tolerance()

    def json(self):
        """The page's data (JSON text)."""
        return self._capture.json()

    def html(self):
        return self._capture.html(self._command)

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write(self.html())

    def _repr_html_(self):
        return iframe(self.html(), 760)

    def __repr__(self):
        ops = sum(1 for n in self.nodes if not n["leaf"])
        return (f"Explore({self.title!r}: loss {self.loss:.6g}, {ops} ops, {len(self.nodes) - ops} leaves, "
                f"{self.fd_failures} finite-difference failures)")


def explore(forward, leaves, title="", seed=1, fd_step=0.0, names=None):
    """Runs ``forward()`` (no arguments, deterministic, returning a one-element loss whose leaves
    that require grad are all in ``leaves``), its backward and the finite-difference replays.
    The leaves' .grad holds the pass's gradient after. ``names``: a Module, or (name, tensor)
    pairs, naming the leaves."""
    if names is not None:
        pairs = names.named_parameters() if hasattr(names, "named_parameters") else names
        for name, p in pairs:
            p.name = name
    leaves = list(leaves.parameters()) if hasattr(leaves, "parameters") else list(leaves)
    return Explore(_C._explore(forward, leaves, title, seed, fd_step), "attograd.study.explore(...)")
