"""``attograd.study``: attograd's study tools as Python objects and notebook pictures.

- ``explain_attention()``: the backward pass of one attention head, step by step, each step's
  formula and its matrices by hand, by the engine and by finite differences (``attograd explain
  attention``); ``_repr_html_`` shows the page the command writes.
- ``attention(model, text)``: a model's attention weights, its dLoss/dWeights and signed
  dLoss/dScores per layer and head, as arrays; ``_repr_png_`` draws them.
- ``graph(tensor)``: the autograd graph behind a tensor; ``_repr_svg_`` draws it (with Graphviz's
  ``dot`` when it is installed, else with attograd's own layout).
- ``explore(fn, leaves)``: one forward and backward pass node by node (``attograd explore``);
  ``_repr_html_`` is the explorer page, offline.
- ``grad_report(model)``: norms of every parameter and its gradient, as a dict.
"""

from .attention import AttentionMaps, attention
from .explore import Explore, explore
from .graph import Graph, graph
from .grad_report import grad_report
from .walk import AttentionWalk, explain_attention

__all__ = ["AttentionMaps", "AttentionWalk", "Explore", "Graph", "attention", "explain_attention", "explore", "graph",
           "grad_report"]
