"""attograd.study: the attention walk as data, the graph as SVG without Graphviz, the explorer page
of a Python function's pass, the gradient report, and a model's attention maps as arrays."""

import numpy as np
import pytest

import attograd
from attograd import study


def test_the_seed_walk_forward_and_backward():
    w = study.explain_attention()
    assert w.agrees() and [s.quantity for s in w.steps] == ["dL/dcontext", "dL/dV", "dL/dA", "dL/dS", "dL/dQ", "dL/dK"]
    A = w.weights.numpy()
    assert np.allclose(A.sum(1), 1) and w.loss == pytest.approx((w.context.numpy() * w.g.numpy()).sum())
    dS = w.step("dL/dS")
    assert dS.formula == "A ⊙ (dL/dA − rowsum(A ⊙ dL/dA))" and np.allclose(dS.by_hand.numpy().sum(1), 0)
    assert dS.engine_diff <= 1e-12 and dS.agrees
    assert "<math" in w.html() and "dL/dS" in str(w) and w._repr_html_().startswith("<iframe")
    masked = study.explain_attention(mask=[[False, False, True], [True, False, False]])
    assert masked.weights.numpy()[0, 2] == 0 and masked.agrees()
    with pytest.raises(ValueError, match=r"K \(1, 1\) must have as many columns as Q"):
        study.explain_attention(q=[[1.0, 2.0]], k=[[1.0]])


def leaves():
    q = attograd.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=attograd.float64, requires_grad=True)
    k = attograd.tensor([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]], dtype=attograd.float64, requires_grad=True)
    return q, k


def test_graph_draws_without_graphviz():
    q, k = leaves()
    loss = attograd.softmax(q @ k.T, dim=-1).sum()
    g = study.graph(loss, title="tiny", names=[("q", q), ("k", k)])
    assert (g.op_nodes, g.leaf_nodes) == (4, 2)
    svg = g.svg(renderer="attograd")
    assert svg.startswith("<svg") and ">softmax</text>" in svg and ">q</text>" in svg and "tiny" in svg
    assert 'label="q\\n[2, 2]"' in g.dot
    assert g._repr_svg_().lstrip().startswith(("<svg", "<?xml"))
    with pytest.raises(RuntimeError, match="does not require grad"):
        study.graph(attograd.ones(2))


def test_explore_a_python_function():
    q, k = leaves()
    page = study.explore(lambda: (attograd.softmax(q @ k.T, dim=-1) * 3).sum(), [q, k], title="walk")
    assert page.fd_failures == 0 and q.grad is not None
    ops = [n["op"] for n in page.nodes if not n["leaf"]]
    assert "softmax" in ops and len(page.order) == len(ops)
    html = page.html()
    assert html.startswith("<!DOCTYPE html>") and "http://" not in html.replace("http://www.w3.org", "")
    assert page._repr_html_().startswith("<iframe")


def test_grad_report_and_model_attention():
    model = attograd.models.make("abcdef \n", n_layer=2, n_head=2, n_embd=8, block_size=8, seed=1)
    x = attograd.tensor([model.encode("abc def")])
    model.loss(x[:, :-1], x[:, 1:]).backward()
    r = study.grad_report(model)
    assert r["without_grad"] == 0 and len(r["params"]) == len(list(model.parameters()))
    assert r["total"]["grad_norm"] > 0 and "grad norm" in r["summary"] and str(r) == r["text"]
    maps = study.attention(model, "abc de")
    assert (maps.n_layer, maps.n_head) == (2, 2) and maps.chars == list("abc de")
    A = maps.weights[1].numpy()
    assert A.shape == (2, 6, 6) and np.allclose(A.sum(-1), 1, atol=1e-5) and np.all(np.triu(A, 1) == 0)
    assert np.allclose(maps.score_grads[0].numpy().sum(-1), 0, atol=1e-6)
    assert maps.png()[:4] == b"\x89PNG"
    assert all(p.grad is not None for p in model.parameters())  # the maps' gradients leave .grad alone
