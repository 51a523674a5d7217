"""Moving tensors between the host and the device, and reading values back, for every dtype."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.conformance.cases import dtype_params
from ember.conformance.oracle import host, numpy_dtype


def pytest_generate_tests(metafunc) -> None:
    if "dtype" in metafunc.fixturenames:
        metafunc.parametrize("dtype", dtype_params(metafunc.config))


def _cpu_supports(dtype) -> bool:
    return dtype in ember.dispatch.registry.get_backend("cpu").supported_dtypes(None)


def test_round_trip(dtype, device):
    """cpu -> device -> cpu keeps dtype and values."""
    if not _cpu_supports(dtype):
        pytest.skip(f"the cpu backend lacks {dtype.name}")
    values = np.arange(-3, 9).reshape(3, 4) % (2 if dtype is ember.bool else 256)
    if dtype.is_complex:  # the parts must not trade places or merge on the way
        values = values + 1j * (values[::-1] - 5)
    start = ember.tensor(values, dtype=dtype)
    there = start.to(device)
    assert there.device == device and there.dtype is dtype and tuple(there.shape) == (3, 4)
    back = there.to("cpu")
    assert back.device == ember.device("cpu") and back.dtype is dtype
    np.testing.assert_array_equal(back.numpy(), start.numpy())
    np.testing.assert_array_equal(there.cpu().numpy(), start.numpy())


def test_tensor_on_device(dtype, device):
    """ember.tensor(..., device=) stores the values in the dtype asked for."""
    data = [[1, 0, 3], [4, 5, 1]]
    t = ember.tensor(data, dtype=dtype, device=device)
    assert t.device == device and t.dtype is dtype
    stored = host(t)
    assert stored.dtype == numpy_dtype(dtype)
    np.testing.assert_array_equal(stored, np.array(data).astype(numpy_dtype(dtype)))


def test_item_and_tolist(dtype, make):
    t = make((2, 3), dtype=dtype, low=0, high=50)
    expected = host(t)
    kind = {"bool": bool, "float": float, "complex": complex}.get(dtype.kind, int)
    listed = t.tolist()
    assert len(listed) == 2 and all(len(row) == 3 for row in listed)
    assert all(type(v) is kind for row in listed for v in row)
    np.testing.assert_array_equal(np.array(listed, dtype=np.complex128), expected.astype(np.complex128))
    single = t[1, 2].item()
    assert type(single) is kind and single == expected[1, 2].item()
    assert type(make((), dtype=dtype).item()) is kind


def test_numpy_on_cpu_shares_memory(dtype, backend):
    if backend.device.type != "cpu":
        pytest.skip("numpy() shares memory only for cpu tensors")
    t = ember.tensor([1, 0, 1], dtype=dtype)
    array = t.numpy()
    assert array.dtype == numpy_dtype(dtype)
    array[1] = 1
    assert t[1].item() == array[1].item()


def test_numpy_refuses_device_tensor(device):
    if device.type == "cpu":
        pytest.skip("cpu tensors convert to NumPy directly")
    with pytest.raises(TypeError, match="cpu"):
        ember.zeros(3, device=device).numpy()


def test_item_refuses_many_elements(make):
    with pytest.raises(ValueError, match="item"):
        make((2,)).item()
