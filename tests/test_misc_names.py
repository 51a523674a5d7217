"""Torch-level small names: finfo/iinfo, constants, layouts and memory formats, printing options, threads,
typename, get_device, the deterministic debug mode; compared with torch where torch is installed."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember

FLOATS = ["float16", "bfloat16", "float32", "float64"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]


def test_finfo_and_iinfo_values():
    assert ember.finfo(ember.float32).eps == np.finfo(np.float32).eps
    assert ember.finfo(ember.float64).max == np.finfo(np.float64).max
    assert ember.finfo().dtype == ember.get_default_dtype().name
    assert ember.finfo(ember.bfloat16).eps == 2 ** -7 and ember.finfo(ember.bfloat16).resolution == 0.01
    assert ember.iinfo(ember.int16).min == -32768 and ember.iinfo(ember.uint8).max == 255
    with pytest.raises(TypeError, match="floating point"):
        ember.finfo(ember.int32)
    with pytest.raises(TypeError, match="integer"):
        ember.iinfo(ember.float32)
    with pytest.raises(TypeError, match="not supported"):
        ember.iinfo(ember.bool)


def test_finfo_iinfo_match_torch():
    torch = pytest.importorskip("torch")
    for name in FLOATS:
        ours, theirs = ember.finfo(getattr(ember, name)), torch.finfo(getattr(torch, name))
        for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
            assert getattr(ours, attr) == getattr(theirs, attr), (name, attr)
        assert repr(ours) == repr(theirs)
    for name in INTS:
        ours, theirs = ember.iinfo(getattr(ember, name)), torch.iinfo(getattr(torch, name))
        assert (ours.bits, ours.min, ours.max, ours.dtype) == (theirs.bits, theirs.min, theirs.max, theirs.dtype)


def test_constants():
    assert ember.pi == math.pi and ember.e == math.e and ember.inf == math.inf and math.isnan(ember.nan)
    assert ember.zeros(3)[:, ember.newaxis].shape == (3, 1)


def test_layout_and_memory_formats():
    t = ember.arange(120.0).reshape(2, 3, 4, 5)
    assert t.layout is ember.strided and repr(ember.strided) == "ember.strided"
    assert t.is_contiguous() and not t.is_contiguous(memory_format=ember.channels_last)
    nhwc = t.contiguous(memory_format=ember.channels_last)
    assert nhwc.stride() == (60, 1, 15, 3) and nhwc.is_contiguous(memory_format=ember.channels_last)
    assert ember.equal(nhwc, t) and not nhwc.is_contiguous()
    assert nhwc.contiguous(memory_format=ember.channels_last) is nhwc
    assert nhwc.contiguous().stride() == (60, 20, 5, 1)
    assert t.to(memory_format=ember.channels_last).stride() == (60, 1, 15, 3)
    assert t.to(ember.float64).stride() == (60, 20, 5, 1)  # preserve_format by default
    five = ember.zeros(1, 2, 3, 4, 5).contiguous(memory_format=ember.channels_last_3d)
    assert five.stride() == (120, 1, 40, 10, 2)
    with pytest.raises(RuntimeError, match="rank 4"):
        ember.zeros(2, 3).contiguous(memory_format=ember.channels_last)
    with pytest.raises(RuntimeError, match="preserve"):
        t.contiguous(memory_format=ember.preserve_format)
    with pytest.raises(TypeError, match="memory_format"):
        t.contiguous(memory_format="channels_last")


def test_memory_formats_match_torch_strides():
    torch = pytest.importorskip("torch")
    for shape, fmt in (((2, 3, 4, 5), "channels_last"), ((2, 1, 4, 5), "channels_last"),
                       ((1, 2, 3, 4, 5), "channels_last_3d")):
        ours = ember.zeros(*shape).contiguous(memory_format=getattr(ember, fmt))
        theirs = torch.zeros(*shape).contiguous(memory_format=getattr(torch, fmt))
        assert ours.stride() == theirs.stride()
        assert ours.is_contiguous() == theirs.is_contiguous()


def test_set_printoptions_changes_repr():
    try:
        ember.set_printoptions(precision=2)
        assert repr(ember.tensor([1.23456, 2.0])) == "tensor([1.23, 2.00])"
        ember.set_printoptions(sci_mode=True)
        assert "e+00" in repr(ember.tensor([1.5, 2.0]))
        ember.set_printoptions(threshold=4, edgeitems=1)
        assert "..." in repr(ember.arange(10.0))
        ember.set_printoptions(profile="full")
        assert "..." not in repr(ember.arange(2000.0)) and ember.get_printoptions()["precision"] == 4
        with pytest.raises(ValueError, match="profile"):
            ember.set_printoptions(profile="tiny")
    finally:
        ember.set_printoptions(profile="default")
    assert repr(ember.tensor([1.23456])) == "tensor([1.2346])"


def test_set_printoptions_matches_torch():
    torch = pytest.importorskip("torch")
    values = np.array([[1.123456, 2.5, 0.75], [4.0, 5.5, 6.25]], dtype=np.float32)  # no negatives, no wide range:
    # column padding and the automatic sci_mode rule are the printer's own business, not the options'
    try:
        for options in ({"precision": 2}, {"sci_mode": True}, {"profile": "short"}, {"precision": 6}):
            ember.set_printoptions(**options)
            torch.set_printoptions(**options)
            assert repr(ember.tensor(values)) == repr(torch.tensor(values))
    finally:
        ember.set_printoptions(profile="default")
        torch.set_printoptions(profile="default")


def test_num_threads_reach_blas_and_numba():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    import numba
    before = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        assert ember.get_num_threads() == 1 and numba.get_num_threads() == 1
        assert all(pool["num_threads"] == 1 for pool in threadpoolctl.threadpool_info()
                   if pool["user_api"] == "blas")
    finally:
        ember.set_num_threads(before)
    with pytest.raises(ValueError, match="positive"):
        ember.set_num_threads(0)


def test_typename_get_device_and_deterministic_debug_mode():
    assert ember.typename(ember.zeros(2)) == ember.zeros(2).type()
    assert ember.typename(3) == "int" and ember.typename(ember.nn.Linear(1, 1)).endswith("Linear")
    assert ember.get_device(ember.zeros(1)) == -1 == ember.zeros(1).get_device()
    try:
        ember.set_deterministic_debug_mode("warn")
        assert ember.get_deterministic_debug_mode() == 1 and ember.is_deterministic_algorithms_warn_only_enabled()
        ember.set_deterministic_debug_mode(2)
        assert ember.get_deterministic_debug_mode() == 2 and ember.are_deterministic_algorithms_enabled()
        with pytest.raises(RuntimeError, match="invalid mode"):
            ember.set_deterministic_debug_mode("loud")
    finally:
        ember.set_deterministic_debug_mode(0)
    assert ember.get_deterministic_debug_mode() == 0 and not ember.are_deterministic_algorithms_enabled()


def test_anomaly_switches_follow_torchs_two_flags():
    try:
        with ember.autograd.detect_anomaly(check_nan=False):
            assert ember.is_anomaly_enabled() and not ember.is_anomaly_check_nan_enabled()
        ember.set_anomaly_enabled(True, check_nan=False)
        assert ember.is_anomaly_enabled() and not ember.is_anomaly_check_nan_enabled()
        x = ember.tensor([0.0], requires_grad=True)
        (x.sqrt() * 0).sum().backward()  # a NaN gradient passes unchecked without check_nan
        ember.set_anomaly_enabled(True)
        y = ember.tensor([0.0], requires_grad=True)
        with pytest.raises(RuntimeError, match="nan"):
            (y.sqrt() * 0).sum().backward()
    finally:
        ember.set_anomaly_enabled(False)
    assert not ember.is_anomaly_enabled() and ember.is_anomaly_check_nan_enabled()


def test_return_types_are_the_classes_of_multi_output_results():
    x = ember.tensor([[3.0, 1.0], [0.5, 2.0]])
    result = ember.max(x, 1)
    assert isinstance(result, ember.return_types.max) and ember.return_types.max._fields == ("values", "indices")
    assert isinstance(ember.sort(x), ember.return_types.sort) and "topk" in dir(ember.return_types)
    assert not any(name.startswith("_") for name in dir(ember.return_types))
    with pytest.raises(AttributeError, match="several tensors"):
        ember.return_types.add
