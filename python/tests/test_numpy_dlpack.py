"""NumPy and DLPack without copies, both ways: writes through one side are seen by the other, and
the memory lives as long as either side does."""

import gc

import numpy as np
import pytest

import attograd


def test_from_numpy_shares_memory():
    a = np.arange(6.0).reshape(2, 3)
    t = attograd.from_numpy(a)
    assert t.dtype == attograd.float64 and t.shape == (2, 3)
    t[0, 0] = 100.0
    a[1, 2] = -1.0
    assert a[0, 0] == 100.0 and t[1, 2].item() == -1.0
    assert t.data_ptr() == a.ctypes.data


def test_from_numpy_strided_and_dtypes():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)[::2, 1::2]  # a strided view
    t = attograd.from_numpy(a)
    assert t.tolist() == a.tolist() and t.stride() == (12, 2)
    for np_type, ours in [(np.float32, attograd.float32), (np.int64, attograd.int64), (np.bool_, attograd.bool)]:
        assert attograd.from_numpy(np.zeros(2, dtype=np_type)).dtype == ours
    with pytest.raises(TypeError, match="float64, float32, int64 and bool"):
        attograd.from_numpy(np.zeros(2, dtype=np.int32))
    with pytest.raises(ValueError, match="negative"):
        attograd.from_numpy(np.arange(3.0)[::-1])


def test_the_array_outlives_its_name():
    t = attograd.from_numpy(np.full(1000, 2.5))
    gc.collect()
    assert t.sum().item() == 2500.0


def test_numpy_of_a_tensor_shares_memory():
    t = attograd.zeros(2, 2)
    n = t.numpy()
    n[0, 1] = 5.0
    assert t[0, 1].item() == 5.0
    t.fill_(1.0)
    assert n.sum() == 4.0
    del t
    gc.collect()
    assert n.sum() == 4.0  # the array keeps the tensor's memory alive
    v = attograd.arange(12.0).reshape(3, 4).t()
    assert np.array_equal(v.numpy(), np.arange(12.0).reshape(3, 4).T)


def test_asarray_and_grad():
    t = attograd.tensor([1.0, 2.0])
    a = np.asarray(t)
    a[0] = 9.0
    assert t[0].item() == 9.0
    assert np.array(t).tolist() == [9.0, 2.0] and np.asarray(t, dtype=np.float64).dtype == np.float64
    w = attograd.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Use tensor.detach\\(\\).numpy\\(\\) instead"):
        w.numpy()
    assert w.detach().numpy().tolist() == [1.0, 1.0] and w.numpy(force=True).tolist() == [1.0, 1.0]


def test_dlpack_both_ways():
    t = attograd.arange(6.0).reshape(2, 3)
    a = np.from_dlpack(t)
    a[1, 1] = -7.0
    assert t[1, 1].item() == -7.0
    assert t.__dlpack_device__() == (1, 0)
    b = np.arange(4, dtype=np.int64)
    u = attograd.from_dlpack(b)
    b[0] = 42
    assert u[0].item() == 42
    with pytest.raises(RuntimeError, match="require gradient"):
        attograd.ones(1, requires_grad=True).__dlpack__()


def test_torch_reads_attograd_tensors_without_a_copy():
    torch = pytest.importorskip("torch")  # only where torch is installed
    t = attograd.arange(6.0).reshape(2, 3)
    p = torch.from_dlpack(t)
    p[0, 0] = 11.0
    assert t[0, 0].item() == 11.0
    back = attograd.from_dlpack(p)
    back[1, 2] = -3.0
    assert p[1, 2].item() == -3.0


def test_tensor_from_numpy_copies():
    a = np.array([[1, 2]], dtype=np.int32)
    t = attograd.tensor(a)
    a[0, 0] = 9
    assert t.dtype == attograd.int64 and t.tolist() == [[1, 2]]
    assert attograd.tensor(np.float64(2.5)).dtype == attograd.float64
    s = attograd.as_tensor(np.ones(3))
    assert s.dtype == attograd.float64
