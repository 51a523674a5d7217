"""``ember.testing.assert_close`` against ``torch.testing.assert_close``: the same inputs pass or fail
alike, with the same exception type and message (PyTorch's "torch." names read "ember." here)."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.testing import assert_close

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")


def to_torch(value):
    """The same structure with every Ember tensor replaced by an equal torch tensor."""
    if isinstance(value, ember.Tensor):
        t = torch.from_numpy(np.array(value.float().tolist() if value.dtype is ember.bfloat16 else value.tolist(),
                                      dtype=np.float32 if value.dtype is ember.bfloat16 else (
                                          np.bool_ if value.dtype is ember.bool else value.dtype.name)))
        t = t.to(torch.bfloat16) if value.dtype is ember.bfloat16 else t
        if value.ndim >= 2 and value.stride() != tuple(value.contiguous().stride()):
            t = t.t().contiguous().t() if value.ndim == 2 else t
        return t
    if isinstance(value, dict):
        return {k: to_torch(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(to_torch(v) for v in value)
    return value


def outcome(function, *args, **kwargs):
    try:
        function(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the outcome is what we compare
        return type(exc), str(exc)
    return None


def check(actual, expected, **kwargs):
    ours = outcome(assert_close, actual, expected, **kwargs)
    theirs = outcome(torch.testing.assert_close, to_torch(actual), to_torch(expected), **kwargs)
    if theirs is not None:
        theirs = (theirs[0], theirs[1].replace("torch.", "ember.").replace("<class 'ember.Tensor'>",
                                                                            "<class 'ember.tensor.Tensor'>"))
    assert ours == theirs
    return ours


t = ember.tensor

CASES = [
    ("close floats", t([1.0, 2.0, 3.0]), t([1.0, 2.0 + 1e-7, 3.0]), {}),
    ("one mismatch", t([1.0, 2.0, 3.0]), t([1.0, 2.5, 3.0]), {}),
    ("2-d mismatch", t([[1.0, 2.0], [3.0, 4.0]]), t([[1.0, 2.0], [3.0, 5.0]]), {}),
    ("integers", t([1, 2, 3]), t([1, 5, 3]), {}),
    ("uint8 without wrap-around", t([1, 2], dtype=ember.uint8), t([3, 2], dtype=ember.uint8), {}),
    ("bools", t([True]), t([False]), {}),
    ("0-d floats", t(1.0), t(2.0), {}),
    ("0-d integers", t(3), t(4), {}),
    ("0-d bools", t(True), t(False), {}),
    ("shape", ember.ones(2), ember.ones(3), {}),
    ("dtype", ember.ones(2), ember.ones(2, dtype=ember.float64), {}),
    ("dtype unchecked", ember.ones(2), ember.ones(2, dtype=ember.float64), {"check_dtype": False}),
    ("dtype unchecked, mixed", t([1, 2], dtype=ember.int32), t([1.0, 2.5], dtype=ember.float16),
     {"check_dtype": False}),
    ("float16 defaults", ember.ones(2, dtype=ember.float16), ember.ones(2, dtype=ember.float16) * 1.001, {}),
    ("bfloat16 defaults", ember.ones(2, dtype=ember.bfloat16), ember.ones(2, dtype=ember.bfloat16) * 1.01, {}),
    ("float64 defaults", t([1.0], dtype=ember.float64), t([1.0 + 1e-6], dtype=ember.float64), {}),
    ("explicit tolerances", t([1.0, 2.0]), t([1.0, 3.0]), {"rtol": 0.1, "atol": 0.1}),
    ("only matching elements masked", t([0.001, 100.0]), t([0.0015, 100.5]), {"rtol": 0.0, "atol": 0.001}),
    ("nan and a mismatch", t([1.0, NAN, 5.0]), t([1.0, 2.0, 9.0]), {}),
    ("nan vs nan", t([NAN]), t([NAN]), {}),
    ("nan vs nan, equal_nan", t([NAN]), t([NAN]), {"equal_nan": True}),
    ("infinity", t([1.0, INF]), t([1.0, 2.0]), {}),
    ("zero expected", t([0.0, 1.0]), t([0.0, 0.0]), {}),
    ("empty", ember.ones(0), ember.ones(0), {}),
    ("strides unchecked", ember.ones(4, 2).t(), ember.ones(2, 4), {}),
    ("requires_grad ignored", ember.ones(2, requires_grad=True), ember.ones(2), {}),
    ("numpy arrays", np.ones(2), np.ones(2), {}),
    ("numpy arrays differ", np.array([1.0, 2.0]), np.array([1.0, 2.5]), {}),
    ("tensor vs numpy", ember.ones(2), np.ones(2), {}),
    ("tensor vs list", ember.ones(2), [1.0, 1.0], {}),
    ("int vs float", 1, 1.0, {}),
    ("int vs float unchecked", 1, 2.0, {"check_dtype": False}),
    ("floats", 1.0, 1.5, {}),
    ("ints", 1, 2, {}),
    ("bools", True, False, {}),
    ("number vs tensor", 1.0, t(1.0), {}),
    ("strings", "a", "a", {}),
    ("None", None, None, {}),
    ("sequences", [1.0, 2.0], [1.0, 2.5], {}),
    ("tuple vs list", (1, 2), [1, 2], {}),
    ("lengths", [1.0, 2.0], [1.0], {}),
    ("mapping keys", {"a": 1.0}, {"b": 1.0}, {}),
    ("nested", {"a": [ember.ones(2)]}, {"a": [ember.zeros(2)]}, {}),
    ("nested pass", {"a": [ember.ones(2), 3]}, {"a": [ember.ones(2), 3]}, {}),
    ("custom message", ember.ones(2), ember.zeros(2), {"msg": "custom"}),
    ("message callable", ember.ones(2), ember.zeros(2), {"msg": lambda m: "X" + m[:10]}),
    ("rtol alone", ember.ones(2), ember.ones(2), {"rtol": 0.0}),
    ("atol alone", ember.ones(2), ember.ones(2), {"atol": 0.0}),
]


@pytest.mark.parametrize("actual,expected,kwargs", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_assert_close_matches_torch(actual, expected, kwargs):
    check(actual, expected, **kwargs)


def test_failures_raise_assertion_error_with_pytorchs_report():
    result = check(t([1.0, 2.0, 3.0]), t([1.0, 2.5, 3.0]))
    assert result[0] is AssertionError
    assert result[1].splitlines()[:3] == ["Tensor-likes are not close!", "", "Mismatched elements: 1 / 3 (33.3%)"]
    assert "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)" in result[1]


def test_stride_check_compares_strides():
    base = ember.ones(4, 2)
    ours = outcome(assert_close, base.t(), ember.ones(2, 4), check_stride=True)
    theirs = outcome(torch.testing.assert_close, torch.ones(4, 2).t(), torch.ones(2, 4), check_stride=True)
    assert ours == theirs


def test_device_check_and_unchecked_device():
    device = ember.accelerator.current_accelerator()
    if device is None:
        pytest.skip("no second device type here")
    x = ember.tensor([1.0, 2.0])
    with pytest.raises(AssertionError, match=f"The values for attribute 'device' do not match: cpu != {device}"):
        assert_close(x, x.to(device))
    assert_close(x, x.to(device), check_device=False)
    with pytest.raises(AssertionError, match="Mismatched elements: 1 / 2"):
        assert_close(x, (x + ember.tensor([0.0, 1.0])).to(device), check_device=False)
