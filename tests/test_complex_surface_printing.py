"""``repr`` of tensors, complex ones above all, character for character as PyTorch prints them (Ember says
``ember.`` where PyTorch says ``torch.``)."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")


def _assert_prints_like_torch(values, dtype: str, **options) -> None:
    array = np.asarray(values).astype(dtype)
    ember.set_printoptions(**options)
    torch.set_printoptions(**options)
    try:
        expected = repr(torch.tensor(array)).replace("torch.", "ember.")
        assert repr(ember.tensor(array)) == expected
    finally:
        ember.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")


COMPLEX_VALUES = {
    "plain": [1 + 2j, 3 - 1j],
    "fractions": [0.5j, 2],
    "matrix": [[1.5 + 2j, -3.25 - 1j], [0, 1e-5j]],
    "large": [1e10 + 1j, 2],
    "nan-inf": [complex(NAN, 1), complex(1, INF), complex(-INF, NAN)],
    "negative-zero": [complex(-0.0, -0.0), 1j],
    "one": [1 + 1j],
    "nested": [[[1 + 2j]]],
    "zero": [0j],
    "precision": [1.123456789 + 2.5j, -100 - 100j],
    "0-d": 2 - 3j,
    "empty": np.zeros((0, 3)),
    "wide": (np.arange(40) + 1j * np.arange(40)[::-1]) / 3,
    "summarized": np.arange(3000) * (1 + 0.5j),
}


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("name", COMPLEX_VALUES)
def test_complex_tensors_print_like_torch(name, dtype):
    _assert_prints_like_torch(COMPLEX_VALUES[name], dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int64", "int32", "bool", "complex64",
                                   "complex128"])
@pytest.mark.parametrize("shape", [(), (3,), (4, 5), (2, 3, 4), (40,), (30, 40), (5, 0), (0,), (2000,), (50, 50)])
def test_random_tensors_print_like_torch(shape, dtype):
    rng = np.random.default_rng(zlib.crc32(repr((shape, dtype)).encode()))
    values = rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 6)
    if dtype.startswith("complex"):
        values = values + 1j * rng.standard_normal(shape)
    _assert_prints_like_torch(values, dtype)


@pytest.mark.parametrize("values", [[1.0, 2.0], [1.23456, 100.5], [0.0, NAN], [1e-5, 1.0], [INF, -2.0], [-0.0],
                                    [1e8, 1.0], [[2.0, -1.0], [0.5, 0.0]]])
def test_real_float_tensors_print_like_torch(values):
    _assert_prints_like_torch(values, "float32")


@pytest.mark.parametrize("options", [{"precision": 2}, {"sci_mode": True}, {"sci_mode": False},
                                     {"linewidth": 40}, {"threshold": 5, "edgeitems": 1}, {"profile": "short"}])
def test_print_options_apply_to_complex_like_torch(options):
    _assert_prints_like_torch(np.arange(12).reshape(3, 4) * (0.37 - 1.5j), "complex64", **options)


def test_dtype_suffix_follows_the_default_dtype():
    """complex64 is the default complex dtype under float32, complex128 under float64, as in PyTorch."""
    assert repr(ember.tensor([1 + 2j])) == "tensor([1.+2.j])"
    assert repr(ember.tensor([1 + 2j], dtype=ember.complex128)) == "tensor([1.+2.j], dtype=ember.complex128)"
    previous = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert repr(ember.tensor([1 + 2j], dtype=ember.complex128)) == "tensor([1.+2.j])"
        assert repr(ember.tensor([1 + 2j], dtype=ember.complex64)) == "tensor([1.+2.j], dtype=ember.complex64)"
    finally:
        ember.set_default_dtype(previous)


def test_autograd_suffixes_follow_the_values():
    x = ember.tensor([1 + 2j], requires_grad=True)
    assert repr(x) == "tensor([1.+2.j], requires_grad=True)"
    assert repr(ember.view_as_real(x)) == "tensor([[1., 2.]], grad_fn=<ViewAsRealBackward>)"  # torch: ...Backward0


def test_empty_tensors_name_every_dtype_but_the_default_like_torch():
    for dtype in ("int64", "complex64", "float32"):
        _assert_prints_like_torch(np.zeros((0,)), dtype)
        _assert_prints_like_torch(np.zeros((2, 0)), dtype)
