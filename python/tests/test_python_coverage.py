"""docs/python.md's table of the names the surveyed programs use: each one it marks "yes" exists
in attograd, so this fails when one goes missing (the coverage section lists the programs)."""

import importlib
import os
import re

import attograd

DOC = os.path.join(os.environ.get("ATTOGRAD_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                   "docs", "python.md")


def table():
    """(name, status) of every row of the section "The names they use"."""
    text = open(DOC).read()
    section = text.split("### The names they use", 1)[1].split("\n### ", 1)[0]
    return re.findall(r"^\| `([\w.]+)` \| [^|]+ \| ([^|]+?) \|$", section, re.M)


def resolve(name):
    """The object a dotted torch name stands for in attograd: Tensor.x on the class, an
    optimizer's attribute on an SGD, modules imported on the way (torch.utils...)."""
    parts = name.split(".")
    if parts[0] == "Tensor":
        obj, rest = attograd.Tensor, parts[1:]
    elif parts[:3] == ["torch", "optim", "Optimizer"]:
        obj, rest = attograd.optim.SGD([attograd.zeros(1, requires_grad=True)], lr=0.1), parts[3:]
    else:
        obj, rest = attograd, parts[1:]
    for p in rest:
        if hasattr(obj, p):
            obj = getattr(obj, p)
        else:
            obj = importlib.import_module(obj.__name__ + "." + p)
    return obj


def test_the_table_is_there():
    rows = table()
    assert len(rows) > 80, "docs/python.md lost its table of the names the surveyed programs use"
    assert sum(status == "yes" for _, status in rows) > 60


def test_every_name_marked_yes_exists():
    missing = []
    for name, status in table():
        if status != "yes":
            continue
        try:
            resolve(name)
        except (AttributeError, ImportError):
            missing.append(name)
    assert not missing, f"docs/python.md says attograd has these, and it does not: {missing}"
