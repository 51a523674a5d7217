"""The CPU's fast convolution and pooling paths: the numba max-pooling loops (backends/cpu/pool_kernels.py)
against the shared NumPy kernels they replace, the weight-gradient kernel (``convolution_backward_weight``)
against its composite in Ember ops, and training gradients against PyTorch at shapes other than the
benchmark's."""
from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.backends.arraykernels import build_kernels
from ember.backends.cpu import conv_kernels, pool_kernels
from ember.backends.cpu.library import NUMPY

NUMPY_KERNELS = build_kernels(NUMPY)
RNG = np.random.default_rng(0)
conv_ops = importlib.import_module("ember.dispatch.ops.nn.conv")

# (input shape, kernel_size, stride, padding, dilation, ceil_mode)
POOLINGS = [
    ((4, 3, 8, 8), (2, 2), (2, 2), (0, 0), (1, 1), False),
    ((2, 5, 9, 7), (3, 3), (2, 2), (1, 1), (1, 1), False),
    ((2, 3, 11, 10), (3, 2), (2, 1), (1, 1), (2, 1), True),
    ((3, 7, 6), (2, 3), (1, 2), (0, 1), (1, 1), True),
    ((1, 2, 9, 9), (5, 5), (1, 1), (2, 2), (1, 1), False),
    ((2, 2, 5, 5), (1, 1), (1, 1), (0, 0), (1, 1), False),
]


def _numba_pooling():
    pytest.importorskip("numba")
    return pool_kernels.build(NUMPY_KERNELS)


def _with_specials(x: np.ndarray) -> np.ndarray:
    """Ties, -inf windows and NaNs: the cases where which element a window picks matters."""
    x = np.round(x)  # many ties
    flat = x.reshape(-1)
    flat[::7] = -np.inf
    flat[3::11] = np.nan
    flat[5::13] = np.nan
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("special", [False, True], ids=["plain", "ties-nan-inf"])
@pytest.mark.parametrize("shape, kernel, stride, padding, dilation, ceil", POOLINGS)
def test_max_pool_loops_match_the_numpy_kernels(shape, kernel, stride, padding, dilation, ceil, special, dtype):
    loops = _numba_pooling()
    x = RNG.standard_normal(shape).astype(dtype)
    if special:
        x = _with_specials(x)
    args = (kernel, stride, padding, dilation, ceil)
    expected = NUMPY_KERNELS["max_pool2d"](x, *args)
    actual = loops["max_pool2d"](x, *args)
    assert actual.dtype == expected.dtype
    np.testing.assert_array_equal(actual, expected)
    grad = RNG.standard_normal(expected.shape).astype(dtype)
    expected = NUMPY_KERNELS["max_pool2d_backward"](grad, x, *args)
    actual = loops["max_pool2d_backward"](grad, x, *args)
    assert actual.shape == x.shape and actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-6)


def test_max_pool_window_of_minus_infinity_routes_its_gradient_inside_the_input():
    """A padded window whose elements are all -inf: PyTorch picks its first element inside the input, never the
    padding (whose value is -inf too)."""
    loops = _numba_pooling()
    x = np.full((1, 1, 4, 4), -np.inf, np.float32)
    args = ((3, 3), (2, 2), (1, 1), (1, 1), False)
    grad = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 2, 2)
    actual = loops["max_pool2d_backward"](grad, x, *args)
    np.testing.assert_array_equal(actual, NUMPY_KERNELS["max_pool2d_backward"](grad, x, *args))
    assert actual.sum() == grad.sum()  # every window's gradient landed on the input


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.int8])
def test_max_pool_loops_take_integers(dtype):
    loops = _numba_pooling()
    x = RNG.integers(0, 100, (2, 3, 7, 6)).astype(dtype)
    for args in (((2, 2), (2, 2), (0, 0), (1, 1), False), ((3, 3), (2, 1), (1, 1), (1, 2), True)):
        np.testing.assert_array_equal(loops["max_pool2d"](x, *args), NUMPY_KERNELS["max_pool2d"](x, *args))


def test_max_pool_half_precision_falls_back_to_numpy():
    loops = _numba_pooling()
    x = RNG.standard_normal((2, 2, 6, 6)).astype(np.float16)
    args = ((2, 2), (2, 2), (0, 0), (1, 1), False)
    np.testing.assert_array_equal(loops["max_pool2d"](x, *args), NUMPY_KERNELS["max_pool2d"](x, *args))


def test_compiled_kernels_need_numba(monkeypatch):
    """Without numba the CPU backend keeps the NumPy kernels (build offers nothing)."""
    monkeypatch.setitem(sys.modules, "numba", None)  # how an import of numba is blocked
    assert pool_kernels.build(NUMPY_KERNELS) == {}
    assert conv_kernels.build(NUMPY_KERNELS) == {}


# (input shape, weight shape, stride, padding, output_padding, groups, dilation) of conv_transpose2d
TRANSPOSED = [
    ((16, 6, 5, 4), (6, 3, 3, 3), (1, 1), (1, 1), (0, 0), 1, (1, 1)),
    ((17, 4, 4, 5), (4, 2, 3, 2), (2, 3), (1, 0), (1, 2), 2, (1, 1)),
    ((16, 3, 3, 3), (3, 2, 5, 5), (2, 2), (2, 2), (1, 1), 1, (1, 1)),
    ((20, 2, 4, 3), (2, 3, 3, 2), (1, 1), (0, 1), (1, 0), 1, (2, 3)),
    ((16, 2, 2, 2), (2, 1, 7, 7), (3, 1), (3, 3), (0, 0), 1, (1, 1)),
    ((3, 4, 5, 5), (4, 2, 3, 3), (1, 1), (1, 1), (0, 0), 1, (1, 1)),  # a small batch: NumPy's col2im
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("x_shape, w_shape, stride, padding, output_padding, groups, dilation", TRANSPOSED)
def test_transposed_convolution_col2im_loop_matches_numpy(x_shape, w_shape, stride, padding, output_padding, groups,
                                                          dilation, dtype):
    pytest.importorskip("numba")
    kernel = conv_kernels.build(NUMPY_KERNELS)["conv_transpose2d"]
    x = RNG.standard_normal(x_shape).astype(dtype)
    w = RNG.standard_normal(w_shape).astype(dtype)
    bias = RNG.standard_normal(w_shape[1] * groups).astype(dtype)
    args = (x, w, bias, stride, padding, output_padding, groups, dilation)
    expected, actual = NUMPY_KERNELS["conv_transpose2d"](*args), kernel(*args)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


# (input shape, weight shape, stride, padding, dilation, groups): both layouts of the weight gradient (many
# output positions per sample or few), stride 1 (im2col by runs) and strided, kernels 1 to 7
CONVOLUTIONS = [
    ((3, 1, 24, 24), (4, 1, 3, 3), 1, 1, 1, 1),
    ((2, 4, 24, 23), (4, 2, 3, 3), 1, 1, 1, 2),
    ((4, 6, 5, 5), (8, 6, 3, 3), 1, 1, 1, 1),
    ((4, 6, 5, 6), (6, 2, 3, 2), 1, (1, 0), (2, 1), 3),
    ((2, 3, 17, 16), (5, 3, 7, 7), 2, 3, 1, 1),
    ((5, 8, 4, 4), (3, 8, 1, 1), 1, 0, 1, 1),
    ((2, 4, 9, 8), (6, 2, 5, 5), (2, 1), 2, 1, 2),
    ((1, 2, 18, 18), (3, 2, 3, 3), 1, "same", 2, 1),
]


@pytest.mark.parametrize("x_shape, w_shape, stride, padding, dilation, groups", CONVOLUTIONS)
def test_weight_gradient_kernel_matches_its_composite(x_shape, w_shape, stride, padding, dilation, groups):
    x = ember.from_numpy(RNG.standard_normal(x_shape).astype(np.float64))
    w = ember.from_numpy(RNG.standard_normal(w_shape).astype(np.float64))
    out = F.conv2d(x, w, None, stride, padding, dilation, groups)
    grad = ember.from_numpy(RNG.standard_normal(tuple(out.shape)).astype(np.float64))
    kernel = tuple(w_shape[2:])
    pads = conv_ops._conv_padding("conv2d", padding, kernel, (stride,) * 2 if isinstance(stride, int) else stride,
                                  (dilation,) * 2 if isinstance(dilation, int) else dilation)
    attrs = ((stride,) * 2 if isinstance(stride, int) else stride, pads,
             (dilation,) * 2 if isinstance(dilation, int) else dilation, groups)
    kernel_result = ember.convolution_backward_weight(grad, x, kernel, *attrs)
    composite = conv_ops._convolution_backward_weight(grad, x, kernel, *attrs)
    assert tuple(kernel_result.shape) == w_shape
    np.testing.assert_allclose(kernel_result.numpy(), composite.numpy(), rtol=1e-10, atol=1e-10)


def test_weight_gradient_when_the_gradient_covers_fewer_windows():
    """A transposed convolution's weight gradient: the input has windows no output of grad reaches."""
    x = ember.from_numpy(RNG.standard_normal((2, 3, 9, 8)))
    grad = ember.from_numpy(RNG.standard_normal((2, 4, 5, 4)))
    attrs = ((1, 1), ((1, 1), (1, 1)), (1, 1), 1)
    np.testing.assert_allclose(ember.convolution_backward_weight(grad, x, (3, 3), *attrs).numpy(),
                               conv_ops._convolution_backward_weight(grad, x, (3, 3), *attrs).numpy(),
                               rtol=1e-10, atol=1e-10)


def test_weight_gradient_rejects_mismatched_shapes():
    x, grad = ember.zeros(2, 3, 8, 8), ember.zeros(2, 4, 9, 9)
    with pytest.raises(ember.dispatch.ShapeError, match="convolution_backward_weight"):
        ember.convolution_backward_weight(grad, x, (3, 3), 1, 0)
    with pytest.raises(ember.dispatch.ShapeError, match="groups=2"):
        ember.convolution_backward_weight(ember.zeros(2, 3, 6, 6), x, (3, 3), 1, 0, 1, 2)


HELD_OUT = [  # other models' layers: channels, strides, kernel sizes 1/5/7, batch sizes, pooling
    ((8, 3, 32, 32), dict(out_channels=12, kernel_size=5, padding=2), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 3, 40, 40), dict(out_channels=8, kernel_size=7, stride=2, padding=3), dict(kernel_size=3, stride=2)),
    ((16, 8, 10, 10), dict(out_channels=16, kernel_size=1), dict(kernel_size=2, ceil_mode=True)),
    ((4, 6, 12, 12), dict(out_channels=6, kernel_size=3, padding=1, groups=3), dict(kernel_size=2, dilation=2)),
]


@pytest.mark.parametrize("shape, conv, pool", HELD_OUT)
def test_conv_relu_pool_gradients_match_torch(shape, conv, pool):
    torch = pytest.importorskip("torch")
    x = RNG.standard_normal(shape).astype(np.float32)
    t_conv = torch.nn.Conv2d(shape[1], **conv)
    e_conv = ember.nn.Conv2d(shape[1], **conv)
    e_conv.load_state_dict({k: ember.from_numpy(v.detach().numpy()) for k, v in t_conv.state_dict().items()})
    tx, ex = torch.tensor(x, requires_grad=True), ember.from_numpy(x).requires_grad_()
    t_out = torch.nn.functional.max_pool2d(torch.relu(t_conv(tx)), **pool)
    e_out = F.max_pool2d(F.relu(e_conv(ex)), **pool)
    weights = RNG.standard_normal(tuple(t_out.shape)).astype(np.float32)
    (t_out * torch.tensor(weights)).sum().backward()
    (e_out * ember.from_numpy(weights)).sum().backward()
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(e_conv.weight.grad.numpy(), t_conv.weight.grad.numpy(), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(e_conv.bias.grad.numpy(), t_conv.bias.grad.numpy(), rtol=1e-3, atol=1e-3)
