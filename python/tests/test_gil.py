"""The GIL across the boundary: released during backward and large matrix products, taken back
by the Python code the engine calls (hooks, Functions), and safe with several Python threads.

Whether the GIL was released is observed, not timed: with a switch interval far longer than the
test, Python never takes the GIL from a thread by itself, so the main thread can run while the
worker is inside C++ only if C++ released it."""

import sys
import threading
import time

import pytest

import attograd


@pytest.fixture
def no_forced_switches():
    before = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    yield
    sys.setswitchinterval(before)


def released(cpp_call, seconds=10.0):
    """True when the main thread ran while a worker thread was inside cpp_call(), which the worker
    repeats until that has happened or `seconds` have passed. Without a release the worker holds
    the GIL from before its first call to after its last, so this is False for certain; with one,
    the main thread (woken, and waiting for the GIL) takes it during one of the calls, however long
    its wake-up takes on a loaded machine. (A fixed number of tries once failed at a load of 13
    on 2 cores: the main thread's wake-up outlasted three 0.5 ms products.)"""
    entered, main_ran, inside, result = threading.Event(), [False], [False], []

    def worker():
        inside[0] = True
        entered.set()
        deadline = time.monotonic() + seconds
        while not main_ran[0] and time.monotonic() < deadline:
            cpp_call()
        inside[0] = False
        result.append(main_ran[0])

    t = threading.Thread(target=worker)
    t.start()
    entered.wait()  # blocks without the GIL; continuing needs it back
    if inside[0]:
        main_ran[0] = True
    t.join()
    return result[0]


def test_matmul_releases_the_gil(no_forced_switches):
    a = attograd.randn(1000, 1000)
    assert released(lambda: a @ a)


def test_small_ops_keep_the_gil(no_forced_switches):
    a = attograd.randn(4, 4)

    def many_small():
        for _ in range(200):
            a @ a + 1  # too small to pay for a release

    assert not released(many_small, seconds=0.5)


def test_backward_releases_the_gil(no_forced_switches):
    w = attograd.randn(1000, 1000, requires_grad=True)
    loss = (w @ w).sum()  # the graph is made here; only backward runs on the worker
    assert released(lambda: loss.backward(retain_graph=True))


def test_threads_backward_their_own_graphs():
    results, errors = {}, []

    def train(k):
        try:
            x = attograd.full((50, 50), float(k), requires_grad=True)
            for _ in range(20):
                x.grad = None
                y = (x @ x).sum()
                y.register_hook(lambda g: g * 1.0)  # a Python hook in each pass
                y.backward()
            results[k] = x.grad.sum().item()
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=train, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k in range(1, 5):
        # d/dx sum(x @ x) = 1·xᵀ + xᵀ·1 summed: 2 · 50 · 50 · 50 · k
        assert results[k] == pytest.approx(2 * 50 ** 3 * k)


def test_grad_mode_is_per_thread():
    seen = []

    def other():
        seen.append(attograd.is_grad_enabled())

    with attograd.no_grad():
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert not attograd.is_grad_enabled()
    assert seen == [True]


def test_a_models_forward_and_an_optimizer_step_release_the_gil(no_forced_switches):
    model = attograd.models.make([chr(c) for c in range(32, 97)], n_layer=2, n_head=2, n_embd=64, block_size=64,
                                 seed=1)
    ids = attograd.randint(0, 65, (8, 64))
    assert released(lambda: model.loss(ids, ids))
    model.loss(ids, ids).backward()
    opt = attograd.optim.AdamW(model.parameters())
    assert released(opt.step)
    lin = attograd.nn.Linear(512, 512)
    assert released(lambda: lin(attograd.randn(256, 512)))


def test_a_training_run_releases_the_gil(no_forced_switches, tmp_path):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("abcdefgh ijklmnop\n" * 200)
    assert released(lambda: attograd.training.train(data=corpus, out=tmp_path / "run", iters=20, layers=1, heads=2,
                                                    embd=32, block=16, batch=8, eval_iters=1, sample_tokens=0,
                                                    quiet=True, overwrite=True))
