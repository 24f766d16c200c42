"""The autograd graph behind a tensor as a picture: DOT text (``attograd graph``'s), and SVG
drawn by Graphviz when its ``dot`` program is installed, else by attograd's own layered layout
(the explore page's), so a notebook always shows it."""

import subprocess

from .. import _C

__all__ = ["Graph", "graph"]


class Graph:
    """Boxes for the ops (the root in red) and the leaves that require grad (parameters by
    name: ``nn.Module`` names them when the graph is drawn), arrows from inputs to the ops that use them."""

    def __init__(self, root, title=""):
        self.title = title
        self.op_nodes, self.leaf_nodes, self.edges = _C._graph_stats(root)
        self.dot = _C._graph_dot(root, title, False)
        self._own_svg = _C._graph_svg(root, title)

    def svg(self, renderer="auto"):
        """SVG text: renderer "dot" (Graphviz, which must be installed), "attograd" (no Graphviz
        needed), or "auto" (dot when found)."""
        if renderer not in ("auto", "dot", "attograd"):
            raise ValueError(f"renderer must be 'auto', 'dot' or 'attograd', got {renderer!r}")
        dot = _C._find_dot() if renderer != "attograd" else ""
        if renderer == "dot" and not dot:
            raise RuntimeError("Graphviz's dot is not installed (apt-get install graphviz); renderer='attograd' "
                               "draws without it")
        if dot:
            done = subprocess.run([dot, "-Tsvg"], input=self.dot.encode(), capture_output=True, check=True)
            return done.stdout.decode()
        return self._own_svg

    def _repr_svg_(self):
        return self.svg()

    def __repr__(self):
        return f"Graph({self.op_nodes} ops, {self.leaf_nodes} leaves, {self.edges} edges)"


def graph(tensor, title="", names=None):
    """The graph behind ``tensor`` (which must require grad). ``names``: a Module, or
    (name, tensor) pairs, whose parameters the leaves' boxes are labelled with."""
    if names is not None:
        pairs = names.named_parameters() if hasattr(names, "named_parameters") else names
        for name, p in pairs:
            p.name = name
    return Graph(tensor, title)
