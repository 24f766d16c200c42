"""examples/attention_walk.ipynb runs: every code cell in order in one namespace, as a kernel would
run it, and each cell's last expression shown as Jupyter shows it (its _repr_html_, _repr_svg_ or
_repr_png_ called and checked). No Jupyter is needed: a notebook is JSON."""

import ast
import contextlib
import io
import json
import os

import pytest

NOTEBOOK = os.path.join(os.environ.get("ATTOGRAD_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                        "examples", "attention_walk.ipynb")


def run_cell(source, namespace):
    """Runs the cell; returns its last expression's value (None when it ends in a statement) and its output."""
    tree = ast.parse(source, NOTEBOOK)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(tree, NOTEBOOK, "exec"), namespace)
        value = eval(compile(ast.Expression(last.value), NOTEBOOK, "eval"), namespace) if last else None
    return value, out.getvalue()


def shown(value):
    """What Jupyter would display for value: (mime type, data)."""
    for method, mime in (("_repr_html_", "text/html"), ("_repr_svg_", "image/svg+xml"), ("_repr_png_", "image/png")):
        if hasattr(value, method):
            return mime, getattr(value, method)()
    return "text/plain", repr(value)


def test_every_cell_runs_and_shows_its_result(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with open(NOTEBOOK, encoding="utf-8") as f:
        nb = json.load(f)
    assert nb["nbformat"] == 4
    cells = [("".join(c["source"]), c) for c in nb["cells"] if c["cell_type"] == "code"]
    assert len(cells) >= 8, "the notebook lost its cells"
    namespace = {"__name__": "__main__"}
    pictures = {}
    for n, (source, cell) in enumerate(cells, 1):
        assert not cell["outputs"], f"cell {n} is committed with outputs: clear them (the tests make them)"
        try:
            value, printed = run_cell(source, namespace)
        except Exception as e:  # name the cell
            raise AssertionError(f"code cell {n} of {NOTEBOOK} failed: {e!r}\n{source}") from e
        if value is not None:
            mime, data = shown(value)
            assert data, f"cell {n} shows nothing"
            pictures[mime] = data
    # The walk's page, the graph, the explorer page and the attention maps were shown.
    assert "<math" in pictures["text/html"] or "<iframe" in pictures["text/html"]
    assert pictures["image/svg+xml"].lstrip().startswith(("<svg", "<?xml"))
    assert pictures["image/png"][:8] == b"\x89PNG\r\n\x1a\n"
    assert namespace["walk"].agrees()
    assert namespace["run"]["val_loss"] < 2.5
    assert os.path.exists(os.path.join(namespace["run"]["out_dir"], "model.safetensors"))
