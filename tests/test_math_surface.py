"""Parity with PyTorch of the elementwise math names: values (special values included), gradients, dtypes,
aliases, in-place forms and the bitwise operators."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember

torch = pytest.importorskip("torch")

SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.5, -3.75, 1e-3, 1e-300, 700.0, -30.0]


def _pair(values, dtype="float64"):
    array = np.array(values, dtype=dtype)
    return ember.tensor(array), torch.tensor(array)


def _same(ours, theirs, rtol=1e-12, atol=0.0, signed_zeros=False):
    ours, theirs = ours.numpy(), theirs.numpy()
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True)
    if signed_zeros:
        zeros = theirs == 0
        np.testing.assert_array_equal(np.signbit(ours[zeros]), np.signbit(theirs[zeros]))


UNARY = ["acos", "asin", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "deg2rad", "rad2deg", "log10", "trunc",
         "frac", "square", "signbit", "isposinf", "isneginf", "isreal", "nan_to_num"]


@pytest.mark.parametrize("name", UNARY)
def test_unary_values_match_torch_on_special_values(name):
    ours, theirs = _pair(SPECIALS)
    _same(getattr(ember, name)(ours), getattr(torch, name)(theirs), rtol=1e-13, signed_zeros=True)


BINARY = ["atan2", "hypot", "fmod", "copysign", "nextafter", "logaddexp", "logaddexp2", "fmax", "fmin", "heaviside",
          "float_power", "ldexp"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_values_match_torch_on_every_pair_of_special_values(name):
    x, tx = _pair(SPECIALS)
    y, ty = _pair(SPECIALS)
    ours = getattr(ember, name)(ember.unsqueeze(x, 1), ember.unsqueeze(y, 0))
    theirs = getattr(torch, name)(tx[:, None], ty[None, :])
    _same(ours, theirs, rtol=1e-13, atol=1e-15 if name == "logaddexp2" else 0.0,
          signed_zeros=name in ("atan2", "fmod", "copysign", "nextafter"))


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_nextafter_steps_one_representable_value_in_each_float_dtype(dtype):
    values = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, 1e-3, math.inf, -math.inf, 65504.0 if dtype == "float16" else 1e30]
    x, tx = _pair(values, dtype)
    for target in (math.inf, -math.inf, 0.0):
        _same(ember.nextafter(x, target), torch.nextafter(tx, torch.tensor(target, dtype=tx.dtype)), rtol=0)


def test_frexp_matches_torch_and_rebuilds_its_input():
    x, tx = _pair(SPECIALS + [1e-310, 2.0 ** 1023 * 1.5, 0.75, 1024.0])
    mantissa, exponent = ember.frexp(x)
    expected = torch.frexp(tx)
    _same(mantissa, expected.mantissa, rtol=0, signed_zeros=True)
    _same(exponent, expected.exponent, rtol=0)
    assert exponent.dtype is ember.int32
    _same(ember.ldexp(mantissa, exponent), torch.ldexp(expected.mantissa, expected.exponent), rtol=0)


def test_integer_and_float_dtype_rules_follow_torch():
    ints, tints = _pair([3, -7, 0, 12], "int32")
    assert ember.atan2(ints, ints).dtype is ember.float32  # integers compute in the default float dtype
    assert ember.float_power(ints, 2).dtype is ember.float64
    assert ember.copysign(ints, -1).dtype is ember.float32
    _same(ember.fmod(ints, 5), torch.fmod(tints, 5), rtol=0)
    _same(ember.trunc(ints), torch.trunc(tints), rtol=0)
    _same(ember.square(ints), torch.square(tints), rtol=0)
    for name in ("frac", "logaddexp", "hypot", "nextafter"):
        with pytest.raises(ember.dispatch.DtypeError, match=name):
            getattr(ember, name)(*([ints] * (1 if name == "frac" else 2)))
    for name in ("gcd", "bitwise_and", "bitwise_left_shift"):
        with pytest.raises(ember.dispatch.DtypeError, match=name):
            getattr(ember, name)(ember.tensor([1.0]), ember.tensor([2.0]))


GRADIENTS = {
    "acos": ([-0.7, 0.1, 0.6],), "asin": ([-0.7, 0.1, 0.6],), "atan": ([-3.0, 0.2, 1.5],),
    "sinh": ([-2.0, 0.3, 1.5],), "cosh": ([-2.0, 0.3, 1.5],), "asinh": ([-2.0, 0.3, 1.5],),
    "acosh": ([1.2, 2.0, 4.0],), "atanh": ([-0.7, 0.1, 0.6],), "log10": ([0.3, 2.0, 9.0],),
    "deg2rad": ([10.0, -3.0, 0.5],), "square": ([-1.5, 0.0, 2.0],), "frac": ([-1.5, 0.25, 2.75],),
    "atan2": ([-1.0, 0.5, 2.0], [0.7, -1.5, 0.3]), "hypot": ([-1.0, 0.5, 2.0], [0.7, -1.5, 0.3]),
    "fmod": ([-5.5, 4.25, 7.0], [2.0, -1.5, 3.0]), "copysign": ([-1.0, 0.5, 2.0], [0.7, -1.5, -0.3]),
    "logaddexp": ([-1.0, 0.5, 20.0], [0.7, -1.5, 2.0]), "logaddexp2": ([-1.0, 0.5, 20.0], [0.7, -1.5, 2.0]),
    "fmax": ([-1.0, math.nan, 2.0], [0.7, -1.5, 2.0]), "fmin": ([-1.0, math.nan, 2.0], [0.7, -1.5, 2.0]),
    "float_power": ([0.5, 1.5, 2.0], [2.0, -1.0, 0.5]), "ldexp": ([0.5, -1.5, 2.0], [2.0, -1.0, 3.0]),
}


@pytest.mark.parametrize("name", sorted(GRADIENTS))
def test_gradients_match_torch(name):
    operands = GRADIENTS[name]
    ours = [ember.tensor(np.array(v), requires_grad=True) for v in operands]
    theirs = [torch.tensor(np.array(v), requires_grad=True) for v in operands]
    out, expected = getattr(ember, name)(*ours), getattr(torch, name)(*theirs)
    weights = np.array([0.3, -1.2, 2.0])
    (out * ember.tensor(weights)).sum().backward()
    (expected * torch.tensor(weights)).sum().backward()
    for mine, reference in zip(ours, theirs):
        if reference.grad is not None:
            np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=1e-10, atol=1e-12)


ALIASES = {"arccos": "acos", "arcsin": "asin", "arctan": "atan", "arctan2": "atan2", "arccosh": "acosh",
           "arcsinh": "asinh", "arctanh": "atanh", "fix": "trunc", "absolute": "abs",
           "negative": "neg", "multiply": "mul", "divide": "div", "subtract": "sub", "true_divide": "div",
           "greater": "gt", "less": "lt", "not_equal": "ne", "clip": "clamp"}


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_aliases_are_the_op_itself(alias):
    name = ALIASES[alias]
    assert getattr(ember, alias) is getattr(ember, name)
    assert getattr(ember.Tensor, alias) is getattr(ember.Tensor, name)
    if hasattr(ember.Tensor, name + "_"):
        assert getattr(ember.Tensor, alias + "_") is getattr(ember.Tensor, name + "_")


@pytest.mark.parametrize("name", ["abs_", "arccos_", "cosh_", "relu_", "sigmoid_", "trunc_", "square_", "clamp_min_",
                                  "nan_to_num_", "log10_", "deg2rad_", "neg_", "round_", "sqrt_"])
def test_torch_level_inplace_functions_write_into_their_input(name):
    values = np.array([0.25, 0.5, 0.75])
    ours, theirs = ember.tensor(values), torch.tensor(values)
    extra = (0.5,) if name == "clamp_min_" else ()
    returned = getattr(ember, name)(ours, *extra)
    getattr(torch, name)(theirs, *extra)
    assert returned is ours
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12)


def test_inplace_methods_of_new_ops_match_torch():
    values = np.array([-2.5, 0.3, 1.7])
    other = torch.tensor([0.5, -2.0, 1.5], dtype=torch.float64)
    for name, args in [("atan2_", (other,)), ("hypot_", (other,)), ("fmod_", (1.5,)), ("copysign_", (-1.0,)),
                       ("frac_", ()), ("asinh_", ()), ("float_power_", (2.0,)), ("nan_to_num_", ()),
                       ("ldexp_", (torch.tensor(3),)), ("heaviside_", (torch.tensor(0.5, dtype=torch.float64),))]:
        ours, theirs = ember.tensor(values), torch.tensor(values)
        ember_args = tuple(ember.tensor(a.numpy()) if isinstance(a, torch.Tensor) else a for a in args)
        assert getattr(ours, name)(*ember_args) is ours
        getattr(theirs, name)(*args)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-12, err_msg=name)


INT_DTYPES = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_bitwise_ops_and_shifts_match_torch(dtype):
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    a = np.concatenate([rng.integers(info.min, info.max, 40, endpoint=True), [info.min, info.max, 0, 1]]).astype(dtype)
    b = np.concatenate([rng.integers(info.min, info.max, 40, endpoint=True), [info.max, info.min, 0, 7]]).astype(dtype)
    ea, eb, ta, tb = ember.tensor(a), ember.tensor(b), torch.tensor(a), torch.tensor(b)
    keep = (a != info.min) & (b != info.min)  # |min| overflows, and PyTorch's gcd of it is no gcd
    for ours, theirs in [(ea & eb, ta & tb), (ea | eb, ta | tb), (ea ^ eb, ta ^ tb), (~ea, ~ta),
                         (ember.bitwise_not(ea), torch.bitwise_not(ta)),
                         (ember.gcd(ember.tensor(a[keep]), ember.tensor(b[keep])),
                          torch.gcd(torch.tensor(a[keep]), torch.tensor(b[keep])))]:
        _same(ours, theirs, rtol=0)
    shifts = np.arange(-2, 70, dtype=np.int64) % (info.bits + 3) - 1  # negative, in range and beyond the width
    shift = shifts[:44].astype(dtype) if dtype != "uint8" else (shifts[:44] % 10).astype(dtype)
    es, ts = ember.tensor(shift), torch.tensor(shift)
    _same(ea << es, ta << ts, rtol=0)
    _same(ea >> es, ta >> ts, rtol=0)


def test_bool_bitwise_ops_are_logical_and_floats_are_refused():
    x, y = ember.tensor([True, False, True]), ember.tensor([True, True, False])
    assert (x & y).tolist() == [True, False, False] and (x | y).tolist() == [True, True, True]
    assert (x ^ y).tolist() == [False, True, True] and (~x).tolist() == [False, True, False]
    with pytest.raises(ember.dispatch.DtypeError, match="bitwise_and"):
        ember.tensor([1.0]) & ember.tensor([2.0])


def test_inplace_and_reflected_bitwise_operators():
    x = ember.tensor([5, 12, -3])
    same = x
    x <<= 2
    x >>= 1
    x &= 14
    x |= 1
    x ^= 3
    assert x is same
    t = torch.tensor([5, 12, -3])
    t <<= 2
    t >>= 1
    t &= 14
    t |= 1
    t ^= 3
    assert x.tolist() == t.tolist()
    assert (1 << ember.tensor([3, 4])).tolist() == [8, 16] and (64 >> ember.tensor([3, 4])).tolist() == [8, 4]
    assert (6 & ember.tensor([3])).tolist() == [2]


def test_lcm_and_gcd_of_zeros_and_negatives():
    a, b = _pair([0, -4, 6, 0, 21], "int64")
    c, d = _pair([0, 6, -4, 5, -14], "int64")
    _same(ember.gcd(a, c), torch.gcd(b, d), rtol=0)
    _same(ember.lcm(a, c), torch.lcm(b, d), rtol=0)


def test_positive_returns_its_input_and_refuses_bool():
    x = ember.tensor([1.0, -2.0])
    assert ember.positive(x) is x and x.positive() is x
    with pytest.raises(ember.dispatch.DtypeError, match="positive"):
        ember.positive(ember.tensor([True]))


def test_clamp_min_and_clamp_max_with_tensors_and_numbers():
    x, tx = _pair([-2.0, 0.5, 3.0, math.nan])
    bound, tbound = _pair([0.0, 1.0, 1.0, 0.0])
    _same(ember.clamp_min(x, 0.6), torch.clamp_min(tx, 0.6))
    _same(ember.clamp_max(x, bound), torch.clamp_max(tx, tbound))
    _same(x.clamp_min(bound), tx.clamp_min(tbound))


def test_float_power_in_place_needs_a_float64_tensor():
    x = ember.tensor([1.5, 2.0], dtype=ember.float64)
    assert x.float_power_(2) is x and x.tolist() == [2.25, 4.0]
    with pytest.raises(ember.dispatch.DtypeError, match="float_power_"):
        ember.tensor([1.5, 2.0]).float_power_(2)
