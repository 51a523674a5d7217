"""The nn ops (conv, pooling, pad, softmax, one_hot, activations) against NumPy references and PyTorch.

Every value test runs twice: through the CPU backend's NumPy override and through the composite
definition in Ember ops (what other backends run), so both paths stay correct.
"""
from __future__ import annotations

import contextlib
import math

import numpy as np
import pytest

import ember
from ember.dispatch import OPS, DtypeError, ShapeError, clear_plans, use_composite
from ember.conformance.checks import call as sample_call
from ember.dispatch.ops import F

torch = pytest.importorskip("torch")
TF = torch.nn.functional

NN_OPS = sorted(name for name, op in OPS.items() if op.category == "nn")
OVERRIDDEN = ("conv1d", "conv2d", "conv_transpose2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d",
              "softmax", "log_softmax", "pad", "relu", "leaky_relu", "elu", "gelu", "silu", "mish", "softplus",
              "hardtanh", "logsigmoid")
TOL = {"float32": dict(rtol=1e-5, atol=1e-5), "float64": dict(rtol=1e-10, atol=1e-10)}


@pytest.fixture(params=["kernel", "composite"])
def path(request, monkeypatch):
    """Run the nn ops through the CPU override ("kernel") or through their Ember-op composites."""
    with contextlib.ExitStack() as stack:
        if request.param == "composite":
            for name in NN_OPS:
                stack.enter_context(use_composite(name, "cpu"))
        yield request.param


def make_factory(seed=0, default_dtype=ember.float32):
    """The conformance protocol's ``make`` (the suite's own), on cpu, for every dtype."""
    from types import SimpleNamespace

    from ember.conformance.make import Maker
    from ember.dispatch.schema.dtypes import ALL_DTYPES
    return Maker(SimpleNamespace(device=ember.device("cpu"), dtypes=frozenset(ALL_DTYPES)), default_dtype, seed)


def to_numpy(value):
    if isinstance(value, ember.Tensor):
        return value.numpy()
    if isinstance(value, (list, tuple)):
        return type(value)(to_numpy(v) for v in value)
    return value


def to_torch(value):
    if isinstance(value, np.ndarray):
        return torch.from_numpy(np.array(value))
    return value


def assert_close(actual, expected, dtype_name):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), equal_nan=True,
                               **TOL.get(dtype_name, dict(rtol=0, atol=0)))


class Attr(tuple):
    """A tuple attribute (stride=(2, 1) given positionally), not a tensor shape."""


def test_make_keeps_zero_dim_shapes():
    assert make_factory()(()).ndim == 0


def _materialize(args, make, dtype):
    return [a if isinstance(a, Attr) or not isinstance(a, tuple) else make(a, dtype=dtype) for a in args]


def _check_torch(name, shapes_, kwargs, dtype_name):
    make = make_factory(1)
    dtype = getattr(ember, dtype_name)
    args = _materialize(shapes_, make, dtype)
    out = getattr(ember, name)(*args, **kwargs)
    expected = getattr(TF, name)(*[to_torch(to_numpy(a)) for a in args], **kwargs)
    assert out.dtype == dtype
    assert_close(out.numpy(), expected.numpy(), dtype_name)


# -- every declared sample against the op's NumPy reference -------------------------------------------

def _sample_cases():
    for name in NN_OPS:
        op = OPS[name]
        real = op.dtypes.partition("+")[0]  # complex ones: tests/test_complex_nn.py
        dtypes = {"float": ["float32", "float64"], "int": ["int64", "int32"],
                  "numeric": ["float32", "float64", "int64"], "all": ["float32", "float64", "int64"]}[real]
        for dtype in dtypes:
            yield pytest.param(name, dtype, id=f"{name}-{dtype}")


@pytest.mark.parametrize("name, dtype_name", list(_sample_cases()))
def test_samples_match_reference(name, dtype_name, path, monkeypatch):
    op = OPS[name]
    dtype = getattr(ember, dtype_name)
    shapes = []
    meta = op.meta
    monkeypatch.setattr(op, "meta", lambda *values: shapes.append(meta(*values)) or shapes[-1])
    samples = list(op.samples(make_factory(0, dtype), dtype))
    assert samples, f"{name} declares no samples"
    for sample in samples:
        clear_plans()  # a cached plan would skip the meta recorded here
        expected = op.reference(*to_numpy(sample.args), **to_numpy(sample.kwargs))
        out = sample_call(op, sample)  # the op (ember.embedding is torch-level); a list writer: the tensors written
        if isinstance(out, tuple):  # the main output; the conformance suite checks every output
            out, expected, shapes[-1] = out[0], expected[0], shapes[-1][0]
        assert tuple(out.shape) == shapes[-1], f"{name}: meta disagrees with the output ({sample.note})"
        assert out.dtype == (ember.int64 if name == "one_hot" else dtype)
        assert_close(out.numpy(), expected, dtype_name)


def test_every_nn_op_is_a_composite_with_reference_and_samples():
    for name in NN_OPS:
        op = OPS[name]
        assert op.kind == "composite" and op.reference is not None and op.samples is not None, name
    assert set(OVERRIDDEN) <= set(NN_OPS)
    from ember.backends.cpu.kernels import KERNELS
    assert all(name in KERNELS for name in OVERRIDDEN)


# -- against PyTorch ---------------------------------------------------------------------------------------

CONV2D_CASES = [
    (((2, 3, 7, 6), (4, 3, 3, 3), (4,)), {}),
    (((2, 3, 7, 6), (4, 3, 3, 2)), {"stride": 2, "padding": 1}),
    (((1, 2, 9, 8), (3, 2, 2, 3)), {"stride": (2, 1), "padding": (1, 2), "dilation": (2, 3)}),
    (((2, 4, 6, 6), (6, 2, 3, 3), (6,)), {"groups": 2, "padding": 1}),
    (((1, 4, 5, 5), (4, 1, 3, 3)), {"groups": 4}),
    (((3, 6, 5), (2, 3, 1, 2)), {}),
    (((1, 2, 5, 6), (3, 2, 2, 3)), {"padding": "same", "dilation": 2}),
    (((1, 2, 5, 6), (3, 2, 4, 4)), {"padding": "same"}),
    (((1, 2, 5, 6), (3, 2, 3, 3)), {"padding": "valid"}),
    (((0, 2, 5, 6), (3, 2, 3, 3)), {}),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("shapes_, kwargs", CONV2D_CASES)
def test_conv2d_matches_torch(shapes_, kwargs, dtype_name, path):
    _check_torch("conv2d", shapes_, kwargs, dtype_name)


CONV1D_CASES = [
    (((2, 3, 9), (4, 3, 3), (4,)), {}),
    (((2, 4, 9), (2, 2, 2)), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}),
    (((3, 8), (5, 3, 4)), {"padding": "same"}),
    (((1, 3, 10), (2, 3, 3)), {"padding": (2,), "stride": (3,)}),
]


@pytest.mark.filterwarnings("ignore:Using padding='same'")
@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("shapes_, kwargs", CONV1D_CASES)
def test_conv1d_matches_torch(shapes_, kwargs, dtype_name, path):
    _check_torch("conv1d", shapes_, kwargs, dtype_name)


CONV_T_CASES = [
    (((2, 3, 4, 5), (3, 2, 3, 3), (2,)), {}),
    (((2, 3, 4, 4), (3, 2, 3, 2)), {"stride": 2, "padding": 1, "output_padding": 1}),
    (((1, 4, 3, 5), (4, 3, 2, 3), (6,)), {"stride": (2, 3), "padding": (1, 0), "output_padding": (1, 2),
                                          "groups": 2, "dilation": (2, 1)}),
    (((2, 4, 3), (2, 3, 3, 3)), {"dilation": 2}),
    (((1, 1, 1, 1), (1, 1, 5, 5)), {"padding": 2}),
    (((1, 2, 3, 3), (2, 1, 3, 3)), {"stride": 1, "dilation": 2, "output_padding": 1}),
    (((1, 2, 4, 4), (2, 3, 3, 3)), {"stride": 3, "padding": 4, "output_padding": 2}),
]


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("shapes_, kwargs", CONV_T_CASES)
def test_conv_transpose2d_matches_torch(shapes_, kwargs, dtype_name, path):
    _check_torch("conv_transpose2d", shapes_, kwargs, dtype_name)


POOL_CASES = [
    ((2, 3, 6, 6), {"kernel_size": 2}),
    ((2, 3, 7, 8), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ((2, 5, 5), {"kernel_size": 2, "ceil_mode": True}),
    ((1, 1, 6, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ((1, 1, 5, 5), {"kernel_size": 2, "stride": 3, "ceil_mode": True}),
    ((1, 2, 9, 8), {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 0)}),
    ((1, 1, 10, 10), {"kernel_size": 4, "stride": 3, "padding": 2, "ceil_mode": True}),
    ((0, 2, 6, 6), {"kernel_size": 2}),
]


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("shape, kwargs", POOL_CASES + [
    ((1, 2, 9, 8), {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 0), "dilation": (2, 3)}),
    ((1, 1, 9, 9), {"kernel_size": 3, "padding": 1, "dilation": 2, "ceil_mode": True, "stride": 2}),
])
def test_max_pool2d_matches_torch(shape, kwargs, dtype_name, path):
    _check_torch("max_pool2d", (shape,), kwargs, dtype_name)


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("include_pad", [True, False])
@pytest.mark.parametrize("shape, kwargs", POOL_CASES + [
    ((1, 2, 6, 6), {"kernel_size": 3, "padding": 1, "divisor_override": 5}),
])
def test_avg_pool2d_matches_torch(shape, kwargs, include_pad, dtype_name, path):
    _check_torch("avg_pool2d", (shape,), dict(kwargs, count_include_pad=include_pad), dtype_name)


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("shape, size", [
    ((2, 3, 6, 6), 3), ((2, 3, 7, 5), Attr((3, 2))), ((3, 5, 7), Attr((4, None))), ((1, 2, 5, 5), 1),
    ((1, 2, 3, 2), Attr((5, 4))), ((1, 1, 10, 13), Attr((7, 7))), ((2, 2, 4, 4), Attr((0, 2))),
])
def test_adaptive_avg_pool2d_matches_torch(shape, size, dtype_name, path):
    _check_torch("adaptive_avg_pool2d", (shape, size), {}, dtype_name)


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, dim", [((3, 5), 1), ((3, 5), 0), ((2, 3, 4), -2), ((), 0), ((0, 4), 1),
                                        ((4,), -1)])
def test_softmax_matches_torch(name, shape, dim, dtype_name, path):
    _check_torch(name, (shape, dim), {}, dtype_name)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_is_stable_and_follows_torch_on_infinities(name, path):
    data = np.array([[1000.0, 0.0, -1000.0], [-np.inf, 0.0, 1.0], [-np.inf, -np.inf, -np.inf],
                     [np.inf, 1.0, 2.0], [88.0, 89.0, 90.0]], np.float32)
    out = getattr(ember, name)(ember.from_numpy(data), 1).numpy()
    expected = getattr(TF, name)(torch.from_numpy(data), 1).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6, equal_nan=True)
    assert np.isfinite(out[0]).all()  # 1000 and -1000 in one row: no overflow


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_dtype_argument(name, path):
    x = ember.tensor([[1, 2, 3], [4, 5, 9]])
    with pytest.raises(DtypeError, match=f"{name}: not supported for dtype int64"):
        getattr(ember, name)(x, 1)
    out = getattr(ember, name)(x, 1, dtype=ember.float64)
    expected = getattr(TF, name)(torch.tensor([[1, 2, 3], [4, 5, 9]]), 1, dtype=torch.float64)
    assert out.dtype == ember.float64
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12)
    half = getattr(ember, name)(ember.tensor([[1.0, 2.0, 3.0]]), 1, dtype=ember.float16)
    assert half.dtype == ember.float16
    assert x.softmax(1, dtype=ember.float32).dtype == ember.float32


PAD_CASES = [
    ((2, 3, 4), (1, 2), "constant", None),
    ((2, 3, 4), (1, 0, 0, 2), "constant", 3.5),
    ((2, 5, 6), (-1, 2, 2, -2), "constant", None),
    ((2, 3, 4), (0, 0, 0, 0, 1, 1), "constant", -1.0),
    ((5,), (-3, -2), "constant", None),
]
for _mode in ("reflect", "replicate", "circular"):
    PAD_CASES += [((2, 3, 5), (2, 3), _mode, None), ((1, 2, 4, 5), (1, 2, 3, 0), _mode, None),
                  ((4, 5), (-1, 2), _mode, None), ((1, 2, 3, 3, 4), (1, 1, 1, 2, 2, 1), _mode, None),
                  ((1, 5), (-3, 2), _mode, None)]
PAD_CASES += [((1, 1, 5), (-3, 3), "reflect", None), ((1, 1, 5), (-6, 3), "replicate", None),
              ((1, 1, 5), (4, 4), "reflect", None), ((1, 1, 5), (5, 5), "circular", None)]


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("shape, pad, mode, value", PAD_CASES)
def test_pad_matches_torch(shape, pad, mode, value, dtype_name, path):
    _check_torch("pad", (shape, Attr(pad)), {"mode": mode, "value": value}, dtype_name)


def test_pad_integers_and_bools(path):
    x = ember.arange(6).view(2, 3)
    out = ember.pad(x, (1, 1), value=2.7)
    assert out.dtype == ember.int64
    assert out.tolist() == TF.pad(torch.arange(6).view(2, 3), (1, 1), value=2.7).tolist()
    assert ember.pad(x, (2, 1), mode="reflect").tolist() == \
        TF.pad(torch.arange(6).view(2, 3), (2, 1), mode="reflect").tolist()
    flags = ember.pad(ember.tensor([True, False]), (1, 0), value=1)
    assert flags.dtype == ember.bool and flags.tolist() == [True, True, False]


ACTIVATIONS = [
    ("relu", {}), ("leaky_relu", {}), ("leaky_relu", {"negative_slope": 0.2}), ("elu", {}),
    ("elu", {"alpha": 0.5}), ("gelu", {}), ("gelu", {"approximate": "tanh"}), ("silu", {}), ("mish", {}),
    ("softplus", {}), ("softplus", {"beta": 2.0, "threshold": 5.0}), ("hardtanh", {}),
    ("hardtanh", {"min_val": -2.0, "max_val": 0.5}), ("logsigmoid", {}),
]


@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("name, kwargs", ACTIVATIONS)
def test_activations_match_torch(name, kwargs, dtype_name, path):
    np_dtype = np.dtype(dtype_name)
    data = np.concatenate([np.linspace(-30, 30, 121), [-1000, -88, -20.5, -1e-3, 0, 1e-3, 20.5, 88, 1000,
                                                       np.inf, -np.inf, np.nan]]).astype(np_dtype)
    out = getattr(ember, name)(ember.from_numpy(data), **kwargs)
    expected = getattr(TF, name)(torch.from_numpy(data), **kwargs)
    if name == "gelu" and not kwargs and dtype_name == "float32":
        assert out.numpy()[-3] == np.inf  # PyTorch's vectorised float32 erf gives gelu(inf) = nan
        expected[-3] = np.inf
    assert out.dtype == getattr(ember, dtype_name)
    assert_close(out.numpy(), expected.numpy(), dtype_name)


@pytest.mark.parametrize("name", ["relu", "hardtanh"])
def test_integer_activations_keep_their_dtype(name, path):
    out = getattr(ember, name)(ember.tensor([-3, -1, 0, 2, 5]))
    expected = getattr(TF, name)(torch.tensor([-3, -1, 0, 2, 5]))
    assert out.dtype == ember.int64 and out.tolist() == expected.tolist()


@pytest.mark.parametrize("name", ["gelu", "softplus", "silu", "mish", "logsigmoid", "elu"])
def test_half_precision_activations_compute_in_float32(name, path):
    data = np.array([-60.0, -12.0, -1.0, 0.0, 0.5, 12.0, 60.0], np.float32)
    out = getattr(ember, name)(ember.from_numpy(data.astype(np.float16)))
    expected = getattr(TF, name)(torch.from_numpy(data.astype(np.float16)))
    assert out.dtype == ember.float16 and np.isfinite(out.numpy()).all()
    np.testing.assert_allclose(out.numpy().astype(np.float32), expected.numpy().astype(np.float32), rtol=2e-3,
                               atol=1e-3)


def test_relu_method_and_inplace():
    x = ember.tensor([-1.0, 0.0, 2.0, float("nan")])
    assert np.array_equal(x.relu().numpy(), [0.0, 0.0, 2.0, np.nan], equal_nan=True)
    same = x.relu_()
    assert same is x and np.array_equal(x.numpy(), [0.0, 0.0, 2.0, np.nan], equal_nan=True)
    assert not hasattr(ember.Tensor, "conv2d") and hasattr(ember.Tensor, "log_softmax")


def test_one_hot_matches_torch(path):
    labels = [[0, 3, 1], [2, 2, 0]]
    assert ember.one_hot(ember.tensor(labels)).tolist() == TF.one_hot(torch.tensor(labels)).tolist()
    out = ember.one_hot(ember.tensor(labels), 6)
    assert out.dtype == ember.int64 and tuple(out.shape) == (2, 3, 6)
    assert out.tolist() == TF.one_hot(torch.tensor(labels), 6).tolist()
    assert ember.one_hot(ember.tensor(2), 4).tolist() == [0, 0, 1, 0]
    assert tuple(ember.one_hot(ember.zeros(0, dtype=ember.int64), 3).shape) == (0, 3)
    assert ember.one_hot(ember.tensor([1, 0], dtype=ember.int32)).tolist() == [[0, 1], [1, 0]]


# -- special values ---------------------------------------------------------------------------------------

def test_max_pool2d_propagates_nan_and_handles_integers(path):
    data = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    data[0, 0, 0, 1] = np.nan
    out = ember.max_pool2d(ember.from_numpy(data), 2, padding=1).numpy()
    expected = TF.max_pool2d(torch.from_numpy(data), 2, padding=1).numpy()
    np.testing.assert_array_equal(out, expected)
    assert np.isnan(out[0, 0, 0, 1]) and not np.isnan(out[0, 0, 0, 0])
    ints = ember.arange(-20, 5).view(1, 5, 5).to(ember.int32)
    assert ember.max_pool2d(ints, 3, 2, 1).tolist() == \
        TF.max_pool2d(torch.arange(-20, 5, dtype=torch.int32).view(1, 5, 5), 3, 2, 1).tolist()


@pytest.mark.parametrize("stride", [1, 2])
def test_conv2d_without_input_channels_gives_the_bias(stride, path):
    # PyTorch returns an empty (N, 0, H, W) tensor here; the sum over no channels is 0, so Ember gives the bias
    out = ember.conv2d(ember.ones(2, 0, 5, 6), ember.ones(3, 0, 3, 3), ember.tensor([1.0, 2.0, 3.0]), stride,
                       padding=1)
    assert tuple(out.shape) == ((2, 3, 5, 6) if stride == 1 else (2, 3, 3, 3))
    assert np.array_equal(out.numpy(), np.broadcast_to(np.array([1.0, 2.0, 3.0]).reshape(3, 1, 1), out.shape))


@pytest.mark.parametrize("size", [(1, 2), (1, 3), (1, 1)])
def test_adaptive_avg_pool2d_infinities_stay_in_their_bins(size, path):
    data = np.array([[[1.0, np.inf, 2.0, 3.0, 4.0, -1.0]]], np.float32)
    out = ember.adaptive_avg_pool2d(ember.from_numpy(data), size).numpy()
    np.testing.assert_array_equal(out, TF.adaptive_avg_pool2d(torch.from_numpy(data), size).numpy())


def test_conv2d_infinite_inputs_stay_local(path):
    data = np.zeros((1, 1, 5, 5), np.float32)
    data[0, 0, 0, 0] = np.inf
    out = ember.conv2d(ember.from_numpy(data), ember.ones(1, 1, 2, 2)).numpy()
    expected = TF.conv2d(torch.from_numpy(data), torch.ones(1, 1, 2, 2)).numpy()
    np.testing.assert_array_equal(out, expected)


# -- errors -------------------------------------------------------------------------------------------------

ERRORS = [
    (lambda: ember.conv2d(ember.ones(4, 4), ember.ones(3, 2, 2, 2)), ShapeError,
     r"conv2d: expected 3-D \(unbatched\) or 4-D \(batched\) input \(tensor\(shape=\(4, 4\)"),
    (lambda: ember.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 2, 2, 2)), ShapeError,
     r"conv2d: weight of shape \(1, 2, 2, 2\) with groups=1 expects input with 2 channels, got 1"),
    (lambda: ember.conv2d(ember.ones(1, 4, 4, 4), ember.ones(3, 2, 2, 2), groups=2), ShapeError,
     r"conv2d: weight's dim 0 must be a positive multiple of groups=2"),
    (lambda: ember.conv2d(ember.ones(1, 1, 4, 4), ember.ones(2, 1, 2, 2), ember.ones(3)), ShapeError,
     r"conv2d: bias must be 1-D with 2 elements"),
    (lambda: ember.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 5, 5)), ShapeError,
     r"conv2d: padded input size \(4, 4\) is smaller than the \(dilated\) kernel size \(5, 5\)"),
    (lambda: ember.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 3, 3), dilation=2), ShapeError,
     r"kernel size \(5, 5\)"),
    (lambda: ember.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 2)), ShapeError, r"conv2d: expected a 4-D weight"),
    (lambda: ember.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 2, 2), stride=0), ValueError,
     r"conv2d: stride must be positive, got stride=\(0, 0\)"),
    (lambda: ember.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 2, 2), padding=-1), ValueError,
     r"conv2d: padding must be non-negative"),
    (lambda: ember.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 2, 2), stride=(1, 2, 3)), ValueError,
     r"conv2d: expected stride to be a single integer or a list of 2 integers, got stride=\[1, 2, 3\]"),
    (lambda: ember.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 2, 2), padding="full"), ValueError,
     r"conv2d: invalid padding string 'full'"),
    (lambda: ember.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 2, 2), padding="same", stride=2), ValueError,
     r"padding='same' is not supported for strided convolutions"),
    (lambda: ember.conv2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 2, 2), groups=0), ValueError,
     r"conv2d: groups must be positive"),
    (lambda: ember.conv2d(ember.ones(1, 1, 4, 4, dtype=ember.int64), ember.ones(1, 1, 2, 2, dtype=ember.int64)),
     DtypeError, r"conv2d: not supported for dtype int64"),
    (lambda: ember.conv1d(ember.ones(1, 3, 5, 1), ember.ones(2, 3, 2)), ShapeError,
     r"conv1d: expected 2-D \(unbatched\) or 3-D \(batched\) input"),
    (lambda: ember.conv_transpose2d(ember.ones(1, 4, 4, 4), ember.ones(3, 2, 2, 2)), ShapeError,
     r"conv_transpose2d: weight of shape \(3, 2, 2, 2\) with groups=1 expects input with 3 channels, got 4"),
    (lambda: ember.conv_transpose2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 3, 3), stride=2, output_padding=2),
     ValueError, r"output_padding must be smaller than either stride or dilation"),
    (lambda: ember.conv_transpose2d(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 3, 3), padding=5), ShapeError,
     r"conv_transpose2d: calculated output size \(-4, -4\) is too small"),
    (lambda: ember.conv_transpose2d(ember.ones(1, 4, 4, 4), ember.ones(4, 2, 2, 2), ember.ones(3), groups=2),
     ShapeError, r"bias must be 1-D with 4 elements"),
    (lambda: ember.max_pool2d(ember.ones(1, 1, 8, 8), 2, padding=2), ValueError,
     r"max_pool2d: padding should be at most half of the kernel size, got padding=\(2, 2\)"),
    (lambda: ember.max_pool2d(ember.ones(1, 1, 4, 4), 5), ShapeError,
     r"max_pool2d: calculated output size \(0, 0\) is too small"),
    (lambda: ember.max_pool2d(ember.ones(8, 8), 2), ShapeError, r"max_pool2d: expected a 3-D \(C, H, W\) or 4-D"),
    (lambda: ember.max_pool2d(ember.ones(1, 1, 8, 8), (1, 2, 3)), ValueError,
     r"expected kernel_size to be a single integer or a list of 2 integers"),
    (lambda: ember.max_pool2d(ember.ones(1, 1, 8, 8), 2, stride=0), ValueError, r"stride must be positive"),
    (lambda: ember.max_pool2d(ember.ones(1, 1, 8, 8), 0), ValueError, r"kernel_size must be positive"),
    (lambda: ember.avg_pool2d(ember.ones(1, 1, 8, 8), 2, divisor_override=0), ValueError,
     r"divisor_override must not be zero"),
    (lambda: ember.avg_pool2d(ember.ones(1, 1, 8, 8, dtype=ember.int64), 2), DtypeError, r"avg_pool2d"),
    (lambda: ember.adaptive_avg_pool2d(ember.ones(1, 1, 0, 2), 2), ShapeError, r"adaptive_avg_pool2d: expected"),
    (lambda: ember.adaptive_avg_pool2d(ember.ones(1, 2, 2), -1), ValueError, r"must be non-negative"),
    (lambda: ember.adaptive_avg_pool2d(ember.ones(1, 2, 2), (1, 2, 3)), ValueError, r"output_size must be an int or 2 values"),
    (lambda: ember.softmax(ember.ones(2, 3), 2), IndexError, r"softmax: dim 2 is out of range"),
    (lambda: ember.one_hot(ember.tensor([-1, 2])), ValueError, r"one_hot: class values must be non-negative"),
    (lambda: ember.one_hot(ember.tensor([1, 5]), 3), ValueError,
     r"one_hot: class values must be smaller than num_classes=3, got 5"),
    (lambda: ember.one_hot(ember.zeros(0, dtype=ember.int64)), ValueError, r"cannot infer the number of classes"),
    (lambda: ember.one_hot(ember.tensor([1.0, 2.0])), DtypeError, r"one_hot: not supported for dtype float32"),
    (lambda: ember.one_hot(ember.tensor([0]), -2), ValueError, r"num_classes must be -1 or non-negative"),
    (lambda: ember.pad(ember.ones(5), (1, 2, 3)), ValueError, r"pad: the padding length must be divisible by 2"),
    (lambda: ember.pad(ember.ones(5), (1, 2, 3, 4)), ValueError, r"pads 2 dimension\(s\) but the input of shape"),
    (lambda: ember.pad(ember.ones(5), (-3, -3)), ShapeError, r"pad: padding \(-3, -3\) would give dim 0 a negative"),
    (lambda: ember.pad(ember.ones(1, 1, 3), (3, 3), mode="reflect"), ShapeError,
     r"reflect padding \(3, 3\) must be smaller than the padded dimension's size 3"),
    (lambda: ember.pad(ember.ones(1, 1, 5), (6, 2), mode="circular"), ShapeError, r"wraps around more than once"),
    (lambda: ember.pad(ember.ones(5), (1, 2), mode="reflect"), ShapeError,
     r"mode 'reflect' with 2 padding values pads the last 1 dim\(s\) of a 2-D or 3-D input"),
    (lambda: ember.pad(ember.ones(1, 5), (1, 2), mode="reflect", value=1.0), ValueError,
     r"mode 'reflect' doesn't take a value"),
    (lambda: ember.pad(ember.ones(1, 5), (1, 2), mode="wrap"), ValueError, r"pad: unknown mode 'wrap'"),
    (lambda: ember.pad(ember.ones(1, 0, 3), (1, 1), mode="replicate"), ShapeError,
     r"mode 'replicate' needs non-empty channel and padded dims"),
    (lambda: ember.pad(ember.ones(1, 2, 0), (1, 1), mode="circular"), ShapeError, r"wraps around more than once"),
    (lambda: ember.gelu(ember.ones(2), approximate="fast"), ValueError, r"gelu: approximate must be 'none' or"),
    (lambda: ember.hardtanh(ember.ones(2), 2.0, 1.0), ValueError, r"min_val cannot be greater than max_val"),
    (lambda: ember.silu(ember.tensor([1, 2])), DtypeError, r"silu: not supported for dtype int64"),
    (lambda: ember.relu(ember.tensor([True])), DtypeError, r"relu: not supported for dtype bool"),
]


@pytest.mark.parametrize("call, error, message", ERRORS)
def test_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_error_messages_name_the_shapes():
    with pytest.raises(ShapeError) as info:
        ember.conv2d(ember.ones(2, 3, 8, 8), ember.ones(4, 2, 3, 3))
    text = str(info.value)
    assert "(2, 3, 8, 8)" in text and "(4, 2, 3, 3)" in text and text.startswith("conv2d:")


def test_unbatched_equals_batched_slice(path):
    make = make_factory(3)
    x, w = make((3, 6, 7)), make((4, 3, 3, 3))
    unbatched = ember.conv2d(x, w, padding=1).numpy()
    batched = ember.conv2d(x.unsqueeze(0), w, padding=1).numpy()[0]
    np.testing.assert_allclose(unbatched, batched, rtol=1e-6)
    assert math.isclose(float(ember.max_pool2d(x, (6, 7)).sum()), float(x.amax((1, 2)).sum()), rel_tol=1e-6)


# -- gradients (through the composites: these ops declare no derivative of their own) ----------------------

GRADIENT_CASES = [
    ("conv2d", [(2, 4, 7, 6), (6, 2, 3, 3), (6,)], {"stride": 2, "padding": 1, "groups": 2, "dilation": (1, 2)}),
    ("conv1d", [(2, 4, 9), (6, 4, 3)], {"padding": "same"}),
    ("conv_transpose2d", [(2, 4, 5, 5), (4, 3, 3, 3), (6,)],
     {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2}),
    ("max_pool2d", [(2, 3, 7, 7)], {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ("avg_pool2d", [(2, 3, 7, 7)], {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                                    "count_include_pad": False}),
    ("adaptive_avg_pool2d", [(2, 3, 7, 5)], {"output_size": (3, 2)}),
    ("softmax", [(3, 5)], {"dim": 1}),
    ("log_softmax", [(3, 5)], {"dim": 0}),
    ("pad", [(2, 3, 5, 6)], {"pad": (2, -1, 1, 2), "mode": "reflect"}),
    ("pad", [(2, 3, 5, 6)], {"pad": (2, -1, 1, 2), "mode": "circular"}),
    ("gelu", [(4, 5)], {"approximate": "tanh"}),
    ("mish", [(4, 5)], {}),
    ("elu", [(4, 5)], {}),
]


@pytest.mark.parametrize("name, shapes_, kwargs", GRADIENT_CASES)
def test_gradients_match_torch(name, shapes_, kwargs):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s) for s in shapes_]
    inputs = [ember.tensor(a, requires_grad=True) for a in arrays]
    t_inputs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out, expected = getattr(ember, name)(*inputs, **kwargs), getattr(TF, name)(*t_inputs, **kwargs)
    grad = rng.standard_normal(tuple(expected.shape))
    out.backward(ember.tensor(grad))
    expected.backward(torch.tensor(grad))
    for mine, theirs in zip(inputs, t_inputs):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_activation_gradients_at_the_kinks():
    points = [-1.0, 0.0, 1.0, 2.0]
    for name in ("relu", "leaky_relu", "hardtanh"):
        x, t = ember.tensor(points, requires_grad=True), torch.tensor(points, requires_grad=True)
        getattr(ember, name)(x).sum().backward()
        getattr(TF, name)(t).sum().backward()
        assert x.grad.tolist() == t.grad.tolist(), name
