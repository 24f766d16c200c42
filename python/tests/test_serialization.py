"""save and load: safetensors files holding a tensor or a dict of tensors."""

import json
import os
import struct

import pytest

import attograd


def test_round_trip(tmp_path):
    state = {"w": attograd.randn(3, 4), "b": attograd.arange(3), "m": attograd.tensor([True, False]),
             "d": attograd.ones(2, dtype=attograd.float64)}
    path = tmp_path / "state.safetensors"
    attograd.save(state, path)
    back = attograd.load(path)
    assert sorted(back) == sorted(state)
    for k, v in state.items():
        assert back[k].dtype == v.dtype and attograd.equal(back[k], v)
    attograd.save(attograd.tensor([1.5, 2.5]), str(tmp_path / "t.safetensors"))
    t = attograd.load(str(tmp_path / "t.safetensors"))
    assert isinstance(t, attograd.Tensor) and t.tolist() == [1.5, 2.5]


def test_the_file_is_plain_safetensors(tmp_path):
    path = tmp_path / "x.safetensors"
    attograd.save({"a": attograd.zeros(2, 3)}, path, metadata={"note": "hi"})
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert header["a"] == {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}
    assert header["__metadata__"]["note"] == "hi"
    obj, meta = attograd.load(path, with_metadata=True)
    assert meta == {"note": "hi"} and obj["a"].shape == (2, 3)


def test_errors(tmp_path):
    with pytest.raises(TypeError, match="a Tensor or a dict"):
        attograd.save([1, 2], tmp_path / "x")
    with pytest.raises(TypeError, match="str -> Tensor"):
        attograd.save({"a": 1}, tmp_path / "x")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"\x01\x00")
    with pytest.raises(RuntimeError, match="bad.safetensors"):
        attograd.load(bad)
    with pytest.raises(RuntimeError):
        attograd.load(os.path.join(str(tmp_path), "missing"))
