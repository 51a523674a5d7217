"""The row kernels' backward ops (layer_norm_backward, softmax_backward, log_softmax_backward) and the CPU's
numba loops (those, softmax, log_softmax, cross-entropy): gradients against PyTorch, the shared NumPy kernels
against the schema's references, and the numba loops against the NumPy kernels."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.backends.arraykernels import build_kernels
from ember.backends.cpu import row_kernels
from ember.backends.cpu.dtypes import NUMPY_DTYPE
from ember.backends.cpu.library import NUMPY
from ember.dispatch import dtypes as d
from ember.dispatch.schema.errors import ShapeError

NUMPY_KERNELS = build_kernels(NUMPY)
RNG = np.random.default_rng(0)
TOLERANCE = {d.float16: 1e-2, d.bfloat16: 4e-2, d.float32: 2e-5, d.float64: 1e-12}
DTYPES = [d.float32, d.float64, d.float16, d.bfloat16]


def _random(shape, dtype=np.float32, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def _close(actual, expected, tol):
    """Same dtype and shape, values within ``tol`` relative to the largest magnitude (sums over many rows are
    large), NaN where the other has NaN."""
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    expected = expected.astype(np.float64)
    scale = max(1.0, float(np.nanmax(np.abs(expected), initial=0.0)))
    np.testing.assert_allclose(actual.astype(np.float64), expected, rtol=tol, atol=tol * scale)


# -- gradients against PyTorch -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape, normalized, affine", [
    ((64, 32, 48), (48,), (True, True)), ((1024, 128), (128,), (True, True)), ((2, 3, 4), (3, 4), (True, False)),
    ((4, 6), (6,), (False, True)), ((5,), (5,), (True, True)), ((3, 7), (7,), (False, False))])
def test_layer_norm_gradients_match_torch(dtype, shape, normalized, affine):
    torch = pytest.importorskip("torch")
    x, g = _random(shape, dtype, 3.0) + 1, _random(shape, dtype)
    params = [_random(normalized, dtype) if on else None for on in affine]
    ours = [ember.tensor(a, requires_grad=True) if a is not None else None for a in (x, *params)]
    theirs = [torch.tensor(a, requires_grad=True) if a is not None else None for a in (x, *params)]
    ember.nn.functional.layer_norm(ours[0], normalized, ours[1], ours[2], 1e-5).backward(ember.tensor(g))
    torch.nn.functional.layer_norm(theirs[0], normalized, theirs[1], theirs[2], 1e-5).backward(torch.tensor(g))
    tol = 1e-4 if dtype == "float32" else 1e-10
    for mine, reference in zip(ours, theirs):
        if mine is not None:
            np.testing.assert_allclose(mine.grad.numpy(), reference.grad.numpy(), rtol=tol, atol=tol)


def test_layer_norm_double_backward_matches_torch():
    """create_graph records layer_norm_backward's composite, so the gradient is differentiable in turn."""
    torch = pytest.importorskip("torch")
    x, g = _random((4, 6), np.float64), _random((4, 6), np.float64)
    w, b = _random(6, np.float64), _random(6, np.float64)

    def second(lib, functional):
        leaves = [lib.tensor(a, requires_grad=True) for a in (x, w, b)]
        out = functional.layer_norm(leaves[0], (6,), leaves[1], leaves[2], 1e-5)
        grads = lib.autograd.grad(out, leaves, lib.tensor(g), create_graph=True)
        sum(((t * t).sum() for t in grads), lib.tensor(0.0, dtype=leaves[0].dtype)).backward()
        return [t.grad.numpy() for t in leaves[:2]], leaves[2].grad
    (mine, bias_grad), (reference, torch_bias_grad) = (second(ember, ember.nn.functional),
                                                       second(torch, torch.nn.functional))
    for ours, theirs in zip(mine, reference):
        np.testing.assert_allclose(ours, theirs, rtol=1e-9, atol=1e-9)
    # the bias's gradient (grad summed over rows) does not depend on the leaves: no second-order gradient
    assert bias_grad is None and torch_bias_grad is None


def test_layer_norm_sums_for_a_float32_weight_beside_a_bfloat16_input_are_not_rounded():
    """As under autocast: the weight's and bias's gradients are float32 sums, not sums rounded to bfloat16."""
    x, g = (ember.tensor(_random((256, 16), scale=2.0)).to(ember.bfloat16) for _ in range(2))
    weight, bias = (ember.tensor(_random(16), requires_grad=True) for _ in range(2))
    ember.nn.functional.layer_norm(x, (16,), weight, bias).backward(g)
    assert weight.grad.dtype is ember.float32 and bias.grad.dtype is ember.float32
    np.testing.assert_allclose(bias.grad.numpy(), g.to(ember.float64).numpy().sum(0), rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape, dim", [((192, 32, 32), -1), ((4, 5, 6), 1), ((3, 10), 0), ((8,), 0)])
def test_softmax_gradients_match_torch(name, shape, dim):
    torch = pytest.importorskip("torch")
    x, g = _random(shape, scale=3.0), _random(shape)
    mine, theirs = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours_out, their_out = getattr(ember, name)(mine, dim), getattr(torch, name)(theirs, dim)
    ours_out.backward(ember.tensor(g))
    their_out.backward(torch.tensor(g))
    np.testing.assert_allclose(ours_out.detach().numpy(), their_out.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_double_backward_matches_torch(name):
    torch = pytest.importorskip("torch")
    x, g = _random((3, 5), np.float64), _random((3, 5), np.float64)

    def second(lib):
        leaf = lib.tensor(x, requires_grad=True)
        (grad,) = lib.autograd.grad(getattr(lib, name)(leaf, -1), [leaf], lib.tensor(g), create_graph=True)
        (grad * grad).sum().backward()
        return leaf.grad.numpy()
    np.testing.assert_allclose(second(ember), second(torch), rtol=1e-9, atol=1e-9)


def test_backward_ops_refuse_mismatched_shapes():
    F = ember.nn.functional
    with pytest.raises(ShapeError, match=r"layer_norm_backward: grad_output must have the input's shape"):
        F.layer_norm_backward(ember.ones(3, 4), ember.ones(3, 5), (5,))
    with pytest.raises(ShapeError, match=r"layer_norm_backward: expected an input whose last dims"):
        F.layer_norm_backward(ember.ones(3, 4), ember.ones(3, 4), (5,))
    with pytest.raises(ShapeError, match=r"softmax_backward: grad_output and output must have one shape"):
        F.softmax_backward(ember.ones(2, 3), ember.ones(3, 2), 1)


# -- the shared NumPy kernels (what the CPU runs without numba) against the schema's references -----------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numpy_kernels_match_the_references(dtype):
    from ember.dispatch import OPS
    x, g, w = _random((6, 4, 8), dtype, 2.0), _random((6, 4, 8), dtype), _random((4, 8), dtype)
    y = RNG.uniform(0, 1, (6, 4, 8)).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    calls = [("layer_norm_backward", (g, x, (4, 8), w, 1e-5)), ("layer_norm_backward", (g, x, (8,), None, 0.1)),
             ("softmax_backward", (g, y, 2)), ("softmax_backward", (g, y, 0)),
             ("log_softmax_backward", (g, np.log(y), 1))]
    for name, args in calls:
        actual, expected = NUMPY_KERNELS[name](*args), OPS[name].reference(*args)
        if not isinstance(actual, tuple):  # one output
            actual, expected = (actual,), (expected,)
        for mine, reference in zip(actual, expected):
            _close(mine, reference.astype(dtype), tol)


# -- the numba loops against the NumPy kernels ------------------------------------------------------------

numba_only = pytest.mark.skipif(not row_kernels.fusion.numba_available(), reason="numba is not installed")
ROWS = row_kernels.build(NUMPY_KERNELS) if row_kernels.fusion.numba_available() else {}


@numba_only
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda dt: dt.name)
@pytest.mark.parametrize("shape, normalized, weighted", [
    ((2048, 48), (48,), True), ((2, 3, 4), (3, 4), False), ((5,), (5,), True), ((3, 1), (1,), True),
    ((0, 4), (4,), True)])
def test_layer_norm_backward_loop_matches_numpy(dtype, shape, normalized, weighted):
    x, g = (_random(shape, NUMPY_DTYPE[dtype], 2.0) for _ in range(2))
    w = _random(normalized, NUMPY_DTYPE[dtype]) if weighted else None
    expected = NUMPY_KERNELS["layer_norm_backward"](g, x, normalized, w, 1e-5)
    actual = ROWS["layer_norm_backward"](g, x, normalized, w, 1e-5)
    for mine, reference in zip(actual, expected):
        _close(mine, reference, TOLERANCE[dtype])


@numba_only
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda dt: dt.name)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(64, 64, 64), (192, 32, 32), (3, 1), (7,)])
def test_softmax_loops_match_numpy(dtype, name, shape):
    x = _random(shape, NUMPY_DTYPE[dtype], 4.0)
    _close(ROWS[name](x, x.ndim - 1, None), NUMPY_KERNELS[name](x, x.ndim - 1, None), TOLERANCE[dtype])


@numba_only
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda dt: dt.name)
@pytest.mark.parametrize("name, low, high", [("softmax_backward", 0, 1), ("log_softmax_backward", -5, 0)])
@pytest.mark.parametrize("shape", [(64, 64, 64), (6, 10), (5,)])
def test_softmax_backward_loops_match_numpy(dtype, name, low, high, shape):
    g = _random(shape, NUMPY_DTYPE[dtype])
    y = RNG.uniform(low, high, shape).astype(NUMPY_DTYPE[dtype])
    _close(ROWS[name](g, y, y.ndim - 1), NUMPY_KERNELS[name](g, y, y.ndim - 1), TOLERANCE[dtype])


@numba_only
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_loops_propagate_nan_and_infinities_as_numpy(name):
    x = _random((6, 8), scale=3.0)
    x[0, 3], x[1, :], x[2, 4], x[3, 0] = np.nan, -np.inf, np.inf, -np.inf
    with np.errstate(invalid="ignore"):
        expected = NUMPY_KERNELS[name](x, 1, None)
    actual = ROWS[name](x, 1, None)
    np.testing.assert_allclose(actual, expected, rtol=1e-5, atol=1e-6)  # NaN exactly where NumPy has NaN
    assert np.isnan(actual[:3]).all() and np.isfinite(actual[3, 1:]).all()


@numba_only
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda dt: dt.name)
@pytest.mark.parametrize("shape, weighted, smoothing, reduction", [
    ((2048, 65), False, 0.0, "mean"), ((64, 10), True, 0.1, "sum"), ((4, 5, 3, 2), True, 0.0, "none")])
def test_cross_entropy_loops_match_numpy(dtype, shape, weighted, smoothing, reduction):
    x = _random(shape, NUMPY_DTYPE[dtype], 3.0)
    target = RNG.integers(0, shape[1], (shape[0],) + shape[2:])
    target.reshape(-1)[::7] = -100  # ignored
    weight = RNG.uniform(0.5, 2, shape[1]).astype(NUMPY_DTYPE[dtype]) if weighted else None
    loss_args = (target, weight, -100, smoothing, reduction)
    _close(ROWS["cross_entropy_indices"](x, *loss_args), NUMPY_KERNELS["cross_entropy_indices"](x, *loss_args),
           TOLERANCE[dtype])
    grad = np.asarray(_random(target.shape if reduction == "none" else (), NUMPY_DTYPE[dtype]))
    _close(ROWS["cross_entropy_indices_backward"](grad, x, *loss_args),
           NUMPY_KERNELS["cross_entropy_indices_backward"](grad, x, *loss_args), TOLERANCE[dtype])


@numba_only
def test_other_dims_strides_and_empty_arrays_take_the_numpy_kernels():
    x = _random((4, 6, 5), scale=2.0)[:, ::2]  # non-contiguous
    for dim in (0, 1, 2):
        _close(ROWS["softmax"](x, dim, None), NUMPY_KERNELS["softmax"](x, dim, None), 1e-6)
    g = _random(x.shape)
    _close(ROWS["softmax_backward"](g, x, 1), NUMPY_KERNELS["softmax_backward"](g, x, 1), 1e-6)
    empty = np.zeros((0, 3), np.float32)
    assert ROWS["log_softmax"](empty, 1, None).shape == (0, 3)
    assert [t.shape for t in ROWS["layer_norm_backward"](empty, empty, (3,), None, 1e-5)] == [(0, 3), (3,), (3,)]


@numba_only
def test_the_cpu_backend_uses_the_loops():
    from ember.backends.cpu.kernels import KERNELS
    for name in ("layer_norm_backward", "softmax", "log_softmax", "softmax_backward", "log_softmax_backward"):
        assert KERNELS[name].__module__ == row_kernels.__name__, name
    # the cross-entropy kernels are the shared ones built again around the loops: they own no module
    assert {"cross_entropy_indices", "cross_entropy_indices_backward"} <= ROWS.keys()
