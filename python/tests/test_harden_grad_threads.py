"""Hardening, class 12: two Python threads calling backward into the same leaf. The engine adds
into a leaf's .grad under the leaf's lock (autograd/grad_lock.h), as torch's AccumulateGrad does,
and Tensor.grad is read under it; before, concurrent accumulations lost updates with no error.
Runs in its own process, with a time limit."""

from isolated import returns


def test_concurrent_backward_calls_into_one_leaf_lose_no_update():
    out = returns("""
        import threading
        # One pool thread: each add into .grad runs on its caller's thread, all of them at once
        # (the pool runs one job at a time, which would line the adds up by itself).
        torch.set_num_threads(1)
        w = torch.zeros(1_000_000, dtype=torch.float64, requires_grad=True)
        threads, calls, start = 4, 25, threading.Barrier(4)

        def work():
            start.wait()
            for _ in range(calls):
                (w * 1.0).sum().backward()  # adds 1 to every element of w.grad

        ts = [threading.Thread(target=work) for _ in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        g = w.grad
        print(g.min().item(), g.max().item())
    """, timeout=300)
    assert out.splitlines()[-1] == "100.0 100.0"


def test_reading_and_assigning_grad_while_another_thread_accumulates():
    # The getter and setter take the lock the engine holds (GIL and lock never wait on each
    # other): neither a deadlock nor a torn .grad.
    out = returns("""
        import threading
        w = torch.zeros(50000, requires_grad=True)
        done = threading.Event()

        def work():
            for _ in range(100):
                (w * 1.0).sum().backward()
            done.set()

        t = threading.Thread(target=work)
        t.start()
        seen = 0
        while not done.is_set():
            g = w.grad
            if g is not None:
                seen = max(seen, g[0].item())
            w.grad = w.grad  # replaced while the other thread adds into it
        t.join()
        print(w.grad[0].item() <= 100.0, w.grad.shape)
    """, timeout=300)
    assert out.splitlines()[-1] == "True attograd.Size([50000])"
