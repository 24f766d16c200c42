"""Hardening, class 4: `p.data = x`. As torch: the assignment itself takes any tensor (another
shape, another dtype), refusing only what torch refuses there (no tensor; an integer tensor on a
parameter that requires grad); a shape that no longer matches p's .grad or an optimizer's state
is torch's size mismatch where they meet: the next backward's accumulation into .grad, the next
optimizer step. Before, the step or the backward wrote past the old buffers (a segfault) or kept
a gradient of the old shape in silence. Each case runs in its own process."""

import pytest

from isolated import raises, returns

MISMATCH = "must match the size of tensor"


@pytest.mark.parametrize("new_size", [4, 2])
def test_data_of_another_size_then_backward_is_a_size_mismatch(new_size):
    raises(f"""
        p = torch.nn.Parameter(torch.ones(3))
        p.sum().backward()
        p.data = torch.ones({new_size})
        (p * 2).sum().backward()
    """, "RuntimeError", [f"The size of tensor a (3) must match the size of tensor b ({new_size}) at non-singleton "
                          "dimension 0", ".data"])


@pytest.mark.parametrize("optimizer", ["SGD(ps, lr=0.1)", "SGD(ps, lr=0.1, momentum=0.9)", "Adam(ps, lr=0.1)",
                                       "AdamW(ps, lr=0.1)"])
def test_an_optimizer_step_after_data_of_another_shape_is_a_size_mismatch(optimizer):
    # A gradient of 100000 elements for a parameter now of 2: the step read and wrote past it.
    raises(f"""
        p = torch.nn.Parameter(torch.ones(100000))
        ps = [p]
        opt = torch.optim.{optimizer}
        p.sum().backward()
        p.data = torch.ones(2)
        opt.step()
    """, "RuntimeError", [MISMATCH, ".step"])


def test_an_optimizer_state_of_the_old_shape_is_a_size_mismatch():
    raises("""
        p = torch.nn.Parameter(torch.ones(3))
        opt = torch.optim.AdamW([p], lr=0.1)
        p.sum().backward(); opt.step(); opt.zero_grad()
        p.data = torch.ones(100000)
        p.sum().backward()
        opt.step()
    """, "RuntimeError", ["The size of tensor a (3) must match the size of tensor b (100000)", "state"])


def test_a_non_contiguous_data_is_refused_by_the_step():
    raises("""
        p = torch.nn.Parameter(torch.ones(3, 4))
        opt = torch.optim.SGD([p], lr=0.1)
        p.data = torch.zeros(4, 3).t()
        p.sum().backward()
        opt.step()
    """, "RuntimeError", "not contiguous")


def test_what_torch_refuses_at_the_assignment():
    raises("p = torch.nn.Parameter(torch.ones(3)); p.data = 3", "TypeError", "Variable data has to be a tensor, but got int")
    raises("p = torch.nn.Parameter(torch.ones(3)); p.data = torch.ones(3, dtype=torch.int64)", "RuntimeError",
           "must be floating point")


def test_data_of_the_same_shape_still_trains():
    out = returns("""
        p = torch.nn.Parameter(torch.ones(3))
        opt = torch.optim.SGD([p], lr=0.5)
        p.data = torch.full((3,), 2.0)
        (p * p).sum().backward()
        opt.step()
        print(p.tolist())
        q = torch.ones(2)
        q.data = torch.arange(4.)
        print(q.shape)
    """)
    assert out.splitlines() == ["[0.0, 0.0, 0.0]", "attograd.Size([4])"]
