"""``Tensor.__array__`` (NumPy 2's protocol, with ``copy``), ``numpy()``/``from_numpy`` and the missing
``__array_namespace__``, as PyTorch's tensors behave."""
from __future__ import annotations

import numpy as np
import pytest

import ember

OPENCL = ember.backends.available().get("opencl", "unavailable: not registered")


def test_asarray_shares_a_cpu_tensors_memory():
    t = ember.zeros(2, 3)[:, 1:]
    array = np.asarray(t)
    array[...] = 5.0
    assert t.tolist() == [[5.0, 5.0], [5.0, 5.0]]
    t[0, 0] = -1.0
    assert array[0, 0] == -1.0


def test_dtype_and_copy_arguments():
    t = ember.arange(3.0)
    assert np.asarray(t, dtype=np.int64).tolist() == [0, 1, 2]
    assert np.shares_memory(np.asarray(t, dtype=np.float32), t.numpy())  # its own dtype: no copy
    copied = np.array(t, copy=True)
    copied[0] = 9.0
    assert t[0].item() == 0.0
    with pytest.raises(ValueError, match="copy=False"):
        np.asarray(t, dtype=np.int64, copy=False)
    assert np.shares_memory(np.asarray(t, copy=False), t.numpy())


def test_bfloat16_and_bool_keep_their_dtype():
    assert np.asarray(ember.ones(2, dtype=ember.bfloat16)).dtype.name == "bfloat16"
    assert np.asarray(ember.ones(2, dtype=ember.bool)).dtype == np.bool_


def test_requires_grad_refuses_with_torchs_message():
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Can't call numpy\(\) on Tensor that requires grad"):
        np.asarray(x)
    assert np.asarray(x.detach()).tolist() == [1.0, 1.0]


def test_matches_torch():
    torch = pytest.importorskip("torch")
    values = [[1.5, -2.0], [0.0, 3.25]]
    ours, theirs = np.asarray(ember.tensor(values)), np.asarray(torch.tensor(values))
    assert ours.dtype == theirs.dtype and ours.tolist() == theirs.tolist()
    with pytest.raises(RuntimeError) as their_error:
        np.asarray(torch.ones(1, requires_grad=True))
    with pytest.raises(RuntimeError) as our_error:
        np.asarray(ember.ones(1, requires_grad=True))
    assert str(our_error.value) == str(their_error.value)
    assert hasattr(ember.Tensor, "__array_namespace__") == hasattr(torch.Tensor, "__array_namespace__")


def test_numpy_and_from_numpy_share_memory_as_in_pytorch():
    array = np.arange(4, dtype=np.int32)
    t = ember.from_numpy(array)
    t[0] = 7
    assert array[0] == 7
    assert np.shares_memory(t.numpy(), array)
    x = ember.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        x.numpy()
    assert x.numpy(force=True).tolist() == [1.0, 1.0]


def test_no_array_namespace_like_torch_2_13():
    assert not hasattr(ember.ones(1), "__array_namespace__")


@pytest.mark.skipif(OPENCL != "available", reason=f"opencl {OPENCL}")
def test_other_devices_arrive_as_host_copies():
    t = ember.arange(3.0, device="opencl")
    array = np.asarray(t)
    assert array.tolist() == [0.0, 1.0, 2.0]
    array[0] = 5.0
    assert t[0].item() == 0.0
    with pytest.raises(ValueError, match="copy=False.*opencl:0"):
        np.asarray(t, copy=False)
