"""Hardening, class 1: sizes that do not fit. Every tensor's size goes through one checked
computation (autograd/tensor.cpp: Tensor::empty, make_view), so a shape whose element count or
byte count does not fit int64 is torch's RuntimeError, and one larger than the machine's memory
attograd.OutOfMemoryError (a RuntimeError and a MemoryError), before anything is allocated.
Each case once crashed the interpreter or returned a wrong tensor; each runs in its own process
(isolated.py)."""

import pytest

from isolated import raises, returns

OVERFLOW = "Storage size calculation overflowed"


@pytest.mark.parametrize("snippet, sizes", [
    ("torch.empty(2**62).fill_(1)", "sizes=[4611686018427387904]"),
    ("torch.zeros(2**62)[2**61]", "sizes=[4611686018427387904]"),
    ("torch.ones(2**31, 2**31)", "sizes=[2147483648, 2147483648]"),
    ("torch.randint(0, 10, (2**62,))", "sizes=[4611686018427387904]"),
    ("torch.ones(1).expand(2**62).contiguous()", "sizes=[4611686018427387904]"),
    ("torch.eye(2**32)", "sizes=[4294967296, 4294967296]"),
    ("torch.zeros(2**32, 2**32).numel()", "sizes=[4294967296, 4294967296]"),
    ("torch.full((2**40, 2**40), 1.0)", "sizes=[1099511627776, 1099511627776]"),
    ("torch.randn(2**62)", "sizes=[4611686018427387904]"),
    ("torch.linspace(0, 1, 2**62)", "sizes=[4611686018427387904]"),
    ("torch.zeros(2**62, 2**62, 0)", "sizes=[4611686018427387904, 4611686018427387904, 0]"),
])
def test_a_size_beyond_int64_bytes_is_refused(snippet, sizes):
    raises(snippet, "RuntimeError", [OVERFLOW, sizes])


def test_a_zero_size_shape_whose_strides_overflow_is_refused():
    raises("torch.zeros(0, 2**62, 2**62)", "RuntimeError", "Stride calculation overflowed")


@pytest.mark.parametrize("snippet, message", [
    ("torch.arange(0, float('inf'))", "unsupported range: 0.0 -> inf"),
    ("torch.arange(0, float('nan'))", "unsupported range: 0.0 -> nan"),
    ("torch.arange(float('-inf'), 5.0)", "unsupported range: -inf -> 5.0"),
    ("torch.arange(0, 5, float('inf'))", "step must be finite"),
    ("torch.arange(0, 2**63 - 1)", OVERFLOW),
    ("torch.arange(0.0, 1e30)", "invalid size, possible overflow?"),
    ("torch.arange(0, 10, 1e-300)", "invalid size, possible overflow?"),
])
def test_arange_refuses_a_count_that_is_not_a_size(snippet, message):
    raises(snippet, "RuntimeError", message)


def test_arange_counts_exactly_near_int64s_ends():
    out = returns("""
        t = torch.arange(-2**63, 2**63 - 1, 2**62)
        print(t.tolist())
        print(torch.arange(2**63 - 3, 2**63 - 1).tolist())
        print(torch.arange(5, -6, -5).tolist())
    """)
    assert out.splitlines() == [str([-2**63, -2**62, 0, 2**62]), str([2**63 - 3, 2**63 - 2]), "[5, 0, -5]"]


def test_more_memory_than_the_machine_has_is_an_out_of_memory_error():
    r = raises("torch.empty(2**45)", "MemoryError", ["can't allocate memory", "you tried to allocate 140737488355328 bytes"])
    assert "RuntimeError" in r.types and "OutOfMemoryError" in r.types


def test_a_negative_size_names_it():
    raises("torch.empty(3, -1)", "RuntimeError", "Trying to create tensor with negative dimension -1: [3, -1]")
    raises("torch.eye(-1)", "RuntimeError", "n must be greater or equal to 0, got -1")
    raises("torch.eye(3, -2)", "RuntimeError", "m must be greater or equal to 0, got -2")


def test_a_model_whose_block_size_does_not_fit_is_refused():
    raises("torch.models.make('abc', n_layer=1, n_head=1, n_embd=8, block_size=2**62)", "RuntimeError", OVERFLOW)


def test_every_tensor_is_intact_after_a_refusal():
    out = returns("""
        a = torch.arange(6.).reshape(2, 3)
        for make in (lambda: torch.empty(2**62), lambda: torch.ones(2**31, 2**31), lambda: torch.arange(0, float('inf')),
                     lambda: torch.empty(2**45)):
            try:
                make()
            except RuntimeError:
                pass
        print(a.sum().item(), torch.zeros(3).numel())
    """)
    assert out.splitlines()[-1] == "15.0 3"


def test_chunk_counts_as_torch_without_overflow_or_unbounded_memory():
    out = returns("""
        print(len(torch.zeros(5).chunk(2**62)), len(torch.zeros(5).chunk(2**63 - 1)), len(torch.zeros(0).chunk(3)))
    """)
    assert out.splitlines()[-1] == "5 5 3"
    raises("torch.zeros(0).chunk(2**62)", "MemoryError", "empty pieces of an empty dim")
