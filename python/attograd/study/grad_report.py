"""The gradient report of ``attograd train --grad-report`` after any backward, as a dict."""

from .. import _C

__all__ = ["grad_report"]


class GradReport(dict):
    """{"params": [...], "layers": [...], "total": {...}, "without_grad", "max_ratio", "text",
    "summary"}: each row name, shape, numel, value_norm, grad_norm and ratio = grad_norm /
    value_norm (the scale of a plain SGD step at lr 1)."""

    def __str__(self):
        return self["text"]

    def _repr_pretty_(self, p, cycle):
        p.text(self["text"])


def grad_report(model):
    """The report of a Module's parameters (or (name, tensor) pairs) and their .grad."""
    pairs = model.named_parameters() if hasattr(model, "named_parameters") else model
    return GradReport(_C._grad_report([(n, p) for n, p in pairs]))
