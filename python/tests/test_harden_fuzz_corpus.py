"""The seeds of fuzz_py_args (tests/fuzz/corpus_py) and every input it ever failed on
(tests/fuzz/regressions_py) go through its driver (tests/fuzz/py_args_driver.py) on every test
run, each in its own process: the call each describes must return or raise what torch raises
for bad input, never crash the interpreter."""

import os

import pytest

from isolated import returns

SOURCE = os.environ.get("ATTOGRAD_SOURCE_DIR") or os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FUZZ = os.path.join(SOURCE, "tests", "fuzz")
INPUTS = sorted(os.path.join(sub, name) for sub in ("corpus_py", "regressions_py")
                if os.path.isdir(os.path.join(FUZZ, sub)) for name in os.listdir(os.path.join(FUZZ, sub))
                if name != "README.md")


def test_there_are_seeds():
    assert len(INPUTS) >= 10


@pytest.mark.parametrize("name", INPUTS)
def test_the_driver_survives_each_stored_input(name):
    returns(f"""
        import sys
        sys.path.insert(0, {FUZZ!r})
        import py_args_driver
        py_args_driver.fuzz_one(open({os.path.join(FUZZ, name)!r}, "rb").read())
    """)
