"""Hardening, class 9: Python ints beyond int64. Every int that crosses into C++ as an index, a
dim, a size or an int64 element is converted exactly (python/src/ints.h): out of range is torch's
exception naming the value, never a wrapped value or RuntimeError("std::bad_cast")."""

import pytest

from isolated import raises, returns


@pytest.mark.parametrize("snippet", [
    "torch.tensor(2**63)",
    "torch.tensor(-2**63 - 1)",
    "torch.tensor([1, 2**64])",
    "torch.tensor([True, 2**64])",
    "torch.arange(5)[2**64]",
    "torch.arange(5)[2**63]",
    "torch.arange(5)[-2**63 - 1]",
    "torch.arange(5.)[[2**64]]",
    "torch.arange(5.).sum(2**64)",
    "torch.arange(5.).sum((0, 2**63))",
    "torch.arange(5.).size(2**64)",
    "torch.arange(5.).max(2**64)",
    "torch.arange(5.).argmax(2**64)",
])
def test_an_int_beyond_int64_is_a_value_error(snippet):
    raises(snippet, "ValueError", "Overflow when unpacking long long")


def test_a_size_beyond_int64_is_a_type_error():
    raises("torch.zeros((2**64,))", "TypeError", "Overflow when unpacking long long")
    raises("torch.ones(3).reshape(2**64)", "TypeError", "Overflow when unpacking long long")


def test_full_and_fill_take_ints_exactly_or_refuse():
    raises("torch.full((2,), 2**64)", "OverflowError", "int too big to convert")
    raises("torch.full((2,), 2**63)", "RuntimeError", "value cannot be converted to type int64_t without overflow")
    raises("torch.full((2,), float('nan'), dtype=torch.int64)", "RuntimeError", "value cannot be converted")
    raises("torch.ones(2) * 2**70", "OverflowError", "int too big to convert")
    out = returns("""
        print(torch.full((1,), 2**62 + 1).tolist(), torch.tensor([2**62 + 1, -2**63]).tolist())
        print(torch.tensor([1.5, 2**64]).dtype, torch.tensor(2**63, dtype=torch.float64).item())
        print(torch.full((1,), 2.0**63, dtype=torch.float64).item())
    """)
    assert out.splitlines() == [f"[{2**62 + 1}] [{2**62 + 1}, {-2**63}]", "attograd.float32 9.223372036854776e+18",
                                "9.223372036854776e+18"]


def test_a_float_into_an_int64_tensor_is_checked():
    raises("torch.tensor([1e300], dtype=torch.int64)", "RuntimeError", "value cannot be converted")
    raises("torch.tensor([float('nan')], dtype=torch.int64)", "RuntimeError", "value cannot be converted")
    assert returns("print(torch.tensor([2.7, -2.7], dtype=torch.int64).tolist())").splitlines()[-1] == "[2, -2]"


def test_randint_over_the_whole_int64_range():
    out = returns("""
        torch.manual_seed(0)
        values = torch.randint(-2**63, 2**63 - 1, (1000,)).tolist()
        print(min(values) < -2**60, max(values) > 2**60)
    """)
    assert out.splitlines()[-1] == "True True"
