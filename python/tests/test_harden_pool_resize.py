"""Hardening, class 5: set_num_threads while another Python thread is inside a matrix product.
The pool is shared by the jobs running on it and ends after the last of them (autograd/
parallel.cpp), so a resize neither frees it under a running job nor waits on one. Before, the
other thread stalled for good (or crashed). Runs in its own process, with a time limit."""

from isolated import returns


def test_resizing_the_pool_while_another_thread_multiplies():
    out = returns("""
        import threading
        torch.manual_seed(0)
        a = torch.randn(256, 256, dtype=torch.float64)
        expected = (a @ a).sum().item()
        results, stop = [], threading.Event()

        def multiply():
            while not stop.is_set() or len(results) < 200:
                results.append((a @ a).sum().item())

        workers = [threading.Thread(target=multiply, daemon=True) for _ in range(2)]
        for w in workers:
            w.start()
        for n in [1, 3, 2, 4] * 500:  # a stall showed within a few hundred resizes
            torch.set_num_threads(n)
        stop.set()
        for w in workers:
            w.join(timeout=30)
        print(any(w.is_alive() for w in workers), len(results) >= 200,
              all(abs(r - expected) <= 1e-9 * abs(expected) for r in results), torch.get_num_threads())
    """, timeout=300)
    assert out.splitlines()[-1] == "False True True 4"
