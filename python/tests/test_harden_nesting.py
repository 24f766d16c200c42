"""Hardening, class 2: nested input to tensor(). The walk over nested lists and tuples is bounded
(torch's 128 levels: "too many dimensions"), refuses a list that contains itself, and checks the
size the first path describes before it walks the rest (a list that holds one list many times
describes 2^60 numbers in a few lines). Each case once overflowed the C++ stack (a segfault); each
runs in its own process."""

from isolated import raises, returns


def test_a_very_deep_list_is_too_many_dimensions():
    raises("""
        deep = [1.0]
        for _ in range(100000):
            deep = [deep]
        torch.tensor(deep)
    """, "ValueError", "too many dimensions 'list'")


def test_128_levels_are_taken_and_129_are_not():
    out = returns("""
        deep = 1
        for _ in range(128):
            deep = [deep]
        print(torch.tensor(deep).dim())
    """)
    assert out.splitlines()[-1] == "128"
    raises("""
        deep = 1
        for _ in range(129):
            deep = (deep,)
        torch.tensor(deep)
    """, "ValueError", "too many dimensions 'tuple'")


def test_a_list_that_contains_itself_is_refused():
    raises("a = []; a.append(a); torch.tensor(a)", "TypeError", "self-referential")
    raises("a = [1, 2]; a.append(a); torch.tensor(a)", "TypeError", "self-referential")
    # Deeper down (torch 2.15 itself segfaults on this one).
    raises("b = [[1, 2], [3]]; b[1].append(b); torch.tensor(b)", "TypeError", "self-referential")


def test_a_list_shared_many_times_is_sized_before_it_is_walked():
    raises("""
        shared = [1]
        for _ in range(62):
            shared = [shared, shared]
        torch.tensor(shared)
    """, "RuntimeError", "Storage size calculation overflowed")
    r = raises("""
        shared = [1]
        for _ in range(40):
            shared = [shared, shared]
        torch.tensor(shared)
    """, "MemoryError", "can't allocate memory")
    assert "RuntimeError" in r.types


def test_a_list_repeated_without_a_cycle_still_works():
    out = returns("""
        row = [1, 2, 3]
        print(torch.tensor([row, row, (4, 5, 6)]).tolist())
        print(torch.tensor([[], []]).shape, torch.tensor([]).shape)
    """)
    assert out.splitlines() == ["[[1, 2, 3], [1, 2, 3], [4, 5, 6]]", "attograd.Size([2, 0]) attograd.Size([0])"]
