"""The shared kernels for NumPy-compatible libraries: the CPU backend runs them as built, and the choices
the CuPy library makes (window views from as_strided, topk by sorting) agree with NumPy's own."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from ember.backends.arraykernels import build_kernels, strided_windows
from ember.backends.cpu.kernels import FUSED_ATTENTION_BACKWARD, KERNELS
from ember.backends.cpu.library import NUMPY


def test_cpu_backend_runs_the_shared_kernels_as_built():
    shared = build_kernels(NUMPY)
    # left out by measurement: in training the op-by-op composite is faster on NumPy
    assert FUSED_ATTENTION_BACKWARD not in KERNELS
    del shared[FUSED_ATTENTION_BACKWARD]
    assert len(shared) > 100 and set(shared) <= set(KERNELS)
    for name, kernel in shared.items():
        code = getattr(kernel, "__code__", None)
        if code is None:  # a library function used as is (np.tril, np.argwhere)
            assert KERNELS[name] is kernel, name
        elif KERNELS[name].__module__.startswith("ember.backends.cpu."):
            pass  # the CPU's own faster kernel (numba row loops), chosen by measurement over the shared one
        else:
            assert KERNELS[name].__code__ is code, f"{name}: the CPU table does not use the shared kernel"
    for name in set(KERNELS) - set(shared):  # anything else is the CPU's own, and lives in the CPU package
        assert KERNELS[name].__module__.startswith("ember.backends.cpu"), name


def test_arraykernels_is_not_a_plugin():
    from importlib.metadata import entry_points
    assert all("arraykernels" not in ep.value for ep in entry_points(group="ember.backends"))


def _as_strided(a, shape, strides, writeable):
    return np.lib.stride_tricks.as_strided(a, shape=shape, strides=strides, writeable=writeable)


@pytest.mark.parametrize("shape, window, axis", [
    ((7,), 3, 0), ((4, 6), 2, 1), ((4, 6), (2, 3), (0, 1)), ((2, 3, 8, 9), (3, 2), (2, 3)), ((5, 4), 5, 0),
    ((3, 4, 5), 2, -1),
])
@pytest.mark.parametrize("transposed", [False, True])
def test_strided_windows_match_numpy(shape, window, axis, transposed):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    if transposed:  # non-contiguous input: the windows must follow its strides
        a = a.T
        axis = tuple(a.ndim - 1 - x % a.ndim for x in axis) if isinstance(axis, tuple) else a.ndim - 1 - axis % a.ndim
    ours = strided_windows(_as_strided)(a, window, axis)
    theirs = np.lib.stride_tricks.sliding_window_view(a, window, axis=axis)
    assert ours.shape == theirs.shape and np.array_equal(ours, theirs)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_topk_by_sorting_matches_topk_by_partition(largest, k):
    sorting = build_kernels(dataclasses.replace(NUMPY, extra={"topk_by_sort": True}))["topk"]
    partition = build_kernels(NUMPY)["topk"]
    rng = np.random.default_rng(k)
    a = rng.integers(0, 4, (6, 11)).astype(np.float32)  # many ties
    a[1, 3] = a[4, 0] = a[4, 7] = np.nan
    for dim in (0, 1):
        if k > a.shape[dim]:
            continue
        v1, i1 = sorting(a, k, dim, largest, True)
        v2, i2 = partition(a, k, dim, largest, True)
        assert np.array_equal(v1, v2, equal_nan=True) and np.array_equal(i1, i2)
        assert i1.dtype == np.int64


def _cuda_astype(a: np.ndarray, dtype) -> np.ndarray:
    """``a.astype(dtype)`` as CUDA converts: a float to an unsigned type saturates (the H200 stored
    threshold's -2.0 as 0 in uint8), where x86, and so NumPy, wraps it (254); other casts as NumPy's."""
    dtype = np.dtype(dtype)
    if a.dtype.kind == "f" and dtype.kind == "u":
        info = np.iinfo(dtype)
        a = np.clip(np.trunc(a), info.min, info.max)
    return a.astype(dtype)


class _SaturatingArray(np.ndarray):
    """A NumPy array that casts as CuPy's do on the GPU (``_cuda_astype``). CuPy needs a GPU, and NumPy's own
    casts wrap, which hides the difference: this stand-in lets the shared kernels' casts fail here as they
    failed on CUDA."""

    def astype(self, dtype, *args, **kwargs):
        return _cuda_astype(self.view(np.ndarray), dtype).view(_SaturatingArray)


class _SaturatingNumPy:
    """NumPy as the kernels' ``xp``, with ``copyto`` casting as ``_SaturatingArray`` does."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def copyto(dst, src, casting="same_kind"):
        np.copyto(dst, _cuda_astype(np.asarray(src), dst.dtype), casting=casting)


@pytest.mark.parametrize("library", ["numpy", "saturating"])
@pytest.mark.parametrize("source", [np.float16, np.float32, np.float64])
def test_float_to_uint8_casts_wrap_as_pytorch_does(library, source):
    """PyTorch converts floats to uint8 through int64 on every device (c10's cast): -2.0 -> 254, 300.5 -> 44.
    The shared ``to_dtype`` and ``copy_`` must give that on a library whose direct conversion saturates too."""
    torch = pytest.importorskip("torch")
    from ember.dispatch.schema.dtypes import uint8
    values = np.array([-2.0, -1.5, -300.7, -0.0, 2.7, 255.0, 256.0, 300.5, 1000.0, -1000.0], dtype=source)
    expected = torch.from_numpy(values).to(torch.uint8).numpy()
    xp, array = (np, values) if library == "numpy" else (_SaturatingNumPy(), values.view(_SaturatingArray))
    if library == "saturating":  # the stand-in does saturate, so the checks below can fail
        assert array.astype(np.uint8)[0] == 0 and expected[0] == 254
    kernels = build_kernels(dataclasses.replace(NUMPY, xp=xp))
    assert np.array_equal(kernels["to_dtype"](array, uint8), expected)
    copied = np.zeros(values.shape, np.uint8)
    kernels["copy_"](copied, array)
    assert np.array_equal(copied, expected)
