"""Comparing attograd's observations of an upstream case with torch's (fixtures/upstream.json):
numbers to float32 round-off (the cases run in float64 except where upstream uses float32),
exceptions by type and by torch's message, which attograd's must start with (it may say more
after it), warnings by category and message, the rest exactly."""

import json
import math
import os
import re

FIXTURE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fixtures", "upstream.json")


def load():
    with open(FIXTURE) as f:
        return json.load(f)


def _number(x):
    if isinstance(x, str) and x in ("nan", "inf", "-inf"):
        return float(x)
    return x


def _message(expected, got):
    """attograd's message starts with torch's (its type names spelled attograd.Size, attograd.FloatTensor)."""
    return got.startswith(expected) or got.startswith(re.sub(r"\btorch\.(?=[A-Z])", "attograd.", expected))


def same(expected, got, where="", rtol=1e-5, atol=1e-7):
    """Raises AssertionError naming the first place they differ."""
    if isinstance(expected, dict):
        assert isinstance(got, dict), f"{where}: {got!r} is not a dict"
        assert sorted(expected) == sorted(got), f"{where}: keys {sorted(got)} vs torch's {sorted(expected)}"
        if set(expected) == {"error", "message"} or set(expected) == {"error"}:
            assert got["error"] == expected["error"], f"{where}: raised {got} where torch raised {expected}"
            if "message" in expected:
                assert _message(expected["message"], got["message"]), \
                    f"{where}: message {got['message']!r} does not start with torch's {expected['message']!r}"
            return
        for k in expected:
            same(expected[k], got[k], f"{where}.{k}", rtol, atol)
        return
    if isinstance(expected, list) and len(expected) == 2 and isinstance(expected[0], str) and \
            expected[0].endswith("Warning") and isinstance(expected[1], str) and isinstance(got, list):
        assert len(got) == 2 and got[0] == expected[0] and _message(expected[1], got[1]), \
            f"{where}: {got} vs torch's {expected}"
        return
    if isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), f"{where}: {got!r} vs torch's {expected!r}"
        for i, (e, g) in enumerate(zip(expected, got)):
            same(e, g, f"{where}[{i}]", rtol, atol)
        return
    expected, got = _number(expected), _number(got)
    if isinstance(expected, float) or (isinstance(expected, int) and isinstance(got, float) and
                                       not isinstance(expected, bool)):
        assert isinstance(got, (int, float)) and not isinstance(got, bool), f"{where}: {got!r} vs torch's {expected!r}"
        if math.isnan(expected):
            assert math.isnan(got), f"{where}: {got} vs torch's nan"
            return
        assert abs(got - expected) <= atol + rtol * abs(expected), f"{where}: {got!r} vs torch's {expected!r}"
        return
    assert got == expected, f"{where}: {got!r} vs torch's {expected!r}"


def plain(x):
    """Observations as JSON reads them back (tuples as lists, non-finite floats as strings)."""
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, float) and not math.isfinite(x):
        return repr(x)
    return x
