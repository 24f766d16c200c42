"""Hardening, class 3: NumPy memory that must not be written, and memory of another byte order.
from_numpy shares an array's memory; a read-only array (a read-only memory map, np.frombuffer over
an immutable bytes object) is copied instead, with a warning that says why, so that no in-place
op writes where nothing may. A big-endian array is refused with torch's message naming the byte
order (tensor() converts it, as it copies anyway). The first case once segfaulted; each runs in
its own process."""

import numpy as np
import pytest

from isolated import raises, returns


def test_a_read_only_memory_map_is_copied_and_never_written(tmp_path):
    path = tmp_path / "weights.bin"
    np.arange(4, dtype=np.float32).tofile(path)
    out = returns(f"""
        import warnings
        import numpy as np
        m = np.memmap({str(path)!r}, dtype=np.float32, mode="r")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = torch.from_numpy(m)
        print(len(caught), "not writable" in str(caught[0].message), "copied" in str(caught[0].message))
        t.fill_(7)
        print(t.tolist(), m.tolist())
    """)
    assert out.splitlines() == ["1 True True", "[7.0, 7.0, 7.0, 7.0] [0.0, 1.0, 2.0, 3.0]"]
    assert np.fromfile(path, dtype=np.float32).tolist() == [0.0, 1.0, 2.0, 3.0]


def test_an_immutable_bytes_object_is_never_rewritten():
    out = returns("""
        import warnings
        import numpy as np
        raw = bytes(16)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = torch.from_numpy(np.frombuffer(raw, dtype=np.float32))
            u = torch.as_tensor(np.frombuffer(raw, dtype=np.float32))
        t.fill_(1)
        u.fill_(1)
        print(raw == bytes(16), t.tolist())
    """)
    assert out.splitlines()[-1] == "True [1.0, 1.0, 1.0, 1.0]"


def test_a_writable_array_is_still_shared():
    out = returns("""
        import numpy as np
        a = np.zeros(3, dtype=np.float32)
        torch.from_numpy(a).fill_(2)
        print(a.tolist())
    """)
    assert out.splitlines()[-1] == "[2.0, 2.0, 2.0]"


@pytest.mark.parametrize("dtype", [">f4", ">f8", ">i8"])
def test_from_numpy_of_a_big_endian_array_names_the_byte_order(dtype):
    raises(f"import numpy as np; torch.from_numpy(np.arange(4, dtype={dtype!r}))", "ValueError",
           ["byte order different from the native byte order", "newbyteorder"])


def test_tensor_of_a_big_endian_array_converts_it():
    out = returns("""
        import numpy as np
        print(torch.tensor(np.arange(3, dtype='>f8')).tolist(), torch.as_tensor(np.arange(3, dtype='>i8')).tolist())
    """)
    assert out.splitlines()[-1] == "[0.0, 1.0, 2.0] [0, 1, 2]"
