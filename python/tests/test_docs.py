"""docs/python.md runs: every `python` block in order, in one namespace, and the `text` block
right after one is what it prints, whichever GEMM provider runs it.

What a block prints must not depend on the last bits of float32, which differ between GEMM
kernels (OpenBLAS's per CPU, oneDNN's): a loss printed to three decimals comes from a training
loop whose trajectory is stable. (The first block's fit once ran at lr 0.2, passed through a
loss spike near step 150 and printed 0.010 or 0.011 depending on the kernels.)"""

import contextlib
import io
import os
import re

import pytest

DOC = os.path.join(os.environ.get("ATTOGRAD_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", "..")),
                   "docs", "python.md")


def blocks():
    text = open(DOC).read()
    found = re.findall(r"```(\w+)\n(.*?)```", text, re.S)
    out = []
    for i, (lang, body) in enumerate(found):
        if lang != "python":
            continue
        expected = found[i + 1][1] if i + 1 < len(found) and found[i + 1][0] == "text" else None
        out.append((body, expected))
    return out


@pytest.fixture(params=["openblas", "onednn"])
def gemm_provider(request):
    import attograd

    if attograd.backends.gemm_providers()[request.param] is not None:
        pytest.skip(f"{request.param} does not run here")
    before = attograd.backends.get_gemm_provider()
    attograd.backends.set_gemm_provider(request.param)
    yield request.param
    attograd.backends.set_gemm_provider(before)


def test_every_block_runs_and_prints_what_the_page_says(gemm_provider):
    pytest.importorskip("numpy")
    found = blocks()
    assert len(found) >= 5, "docs/python.md lost its examples"
    namespace = {"__name__": "python_md", "__file__": DOC}
    for n, (code, expected) in enumerate(found, 1):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, DOC, "exec"), namespace)
        if expected is not None:
            assert out.getvalue() == expected, f"block {n} of docs/python.md printed:\n{out.getvalue()}"
