"""The CPU's faster paths give the answers of the paths they replaced.

- a stack of matrices times one matrix runs as one GEMM over the stack's rows (``stacked_times_matrix``);
- gelu and gelu_backward run their formula as one numba pass (``formula_kernels``), NumPy otherwise;
- gelu's gradient is the ``gelu_backward`` op; causal attention adds a -inf bias; dropout draws float32.
"""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.backends.arraykernels import build_kernels
from ember.backends.arraykernels.linalg import stacked_times_matrix
from ember.backends.cpu import formula_kernels
from ember.backends.cpu.kernels import KERNELS
from ember.backends.cpu.library import NUMPY

NUMPY_KERNELS = build_kernels(NUMPY)


def _random(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("a_shape, b_shape", [((4, 3, 5), (5, 2)), ((2, 3, 4, 5), (5, 6)), ((0, 3, 5), (5, 2)),
                                              ((3, 0, 5), (5, 2)), ((2, 3, 0), (0, 4)), ((3, 5), (5, 2)),
                                              ((2, 3, 5), (2, 5, 4)), ((5,), (5, 2))])
def test_stacked_times_matrix_is_matmul(a_shape, b_shape):
    a, b = _random(a_shape), _random(b_shape, seed=1)
    np.testing.assert_allclose(stacked_times_matrix(np, a, b), np.matmul(a, b), rtol=1e-6, atol=1e-6)


def test_stacked_times_matrix_takes_non_contiguous_stacks_and_transposed_matrices():
    a = _random((5, 4, 6)).transpose(1, 0, 2)  # (4, 5, 6), not contiguous
    b = _random((3, 6), seed=1).T
    out = stacked_times_matrix(np, a, b)
    assert out.shape == (4, 5, 3)
    np.testing.assert_allclose(out, np.matmul(a, b), rtol=1e-6, atol=1e-6)


def test_linear_and_its_gradients_over_batch_dims_match_torch():
    torch = pytest.importorskip("torch")
    x, w, bias, grad = _random((4, 7, 5)), _random((3, 5), seed=1), _random((3,), seed=2), _random((4, 7, 3), seed=3)
    ex, ew, eb = (ember.tensor(v, requires_grad=True) for v in (x, w, bias))
    tx, tw, tb = (torch.tensor(v, requires_grad=True) for v in (x, w, bias))
    ember.nn.functional.linear(ex, ew, eb).backward(ember.tensor(grad))
    torch.nn.functional.linear(tx, tw, tb).backward(torch.tensor(grad))
    for mine, theirs in ((ex, tx), (ew, tw), (eb, tb)):
        np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [7, 4096, 70000])
def test_formula_kernels_agree_with_the_numpy_kernels(dtype, size):
    x, grad = _random(size, dtype) * 3, _random(size, dtype, seed=1)
    tolerance = 1e-6 if dtype == np.float32 else 1e-12
    for name, args in (("gelu", (x, "none")), ("gelu_backward", (grad, x, "none")),
                       ("threshold_backward", (grad, x, 0.5))):
        out = KERNELS[name](*args)
        assert out.dtype == dtype and out.shape == x.shape
        np.testing.assert_allclose(out, NUMPY_KERNELS[name](*args), rtol=tolerance, atol=tolerance)


def test_formula_kernels_keep_shapes_and_take_non_contiguous_input():
    x = _random((6, 5, 4)).transpose(2, 0, 1)
    grad = _random((4, 6, 5), seed=1)
    out = KERNELS["gelu_backward"](grad, x, "none")
    assert out.shape == (4, 6, 5)
    np.testing.assert_allclose(out, NUMPY_KERNELS["gelu_backward"](grad, x, "none"), rtol=1e-6, atol=1e-6)


def test_formula_kernels_leave_other_calls_to_numpy():
    kernel = formula_kernels.formula_kernel("gelu_backward", lambda *args: "numpy")
    x = _random((3, 4))
    assert kernel(x.astype(np.float16), x.astype(np.float16), "none") == "numpy"  # half types
    assert kernel(x[:1], x, "none") == "numpy"  # shapes that broadcast
    assert kernel(x.astype(np.float64), x, "none") == "numpy"  # mixed dtypes


@pytest.mark.parametrize("approximate", ["none", "tanh"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_gelu_gradient_matches_torch(approximate, dtype):
    torch = pytest.importorskip("torch")
    x = _random((64, 40), np.float64) * 3
    grad = _random((64, 40), np.float64, seed=1)
    mine = ember.tensor(x, dtype=getattr(ember, dtype), requires_grad=True)
    theirs = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    ember.nn.functional.gelu(mine, approximate=approximate).backward(ember.tensor(grad, dtype=mine.dtype))
    torch.nn.functional.gelu(theirs, approximate=approximate).backward(torch.tensor(grad, dtype=theirs.dtype))
    tolerance = {"float32": 1e-5, "float64": 1e-10, "float16": 2e-2}[dtype]
    np.testing.assert_allclose(mine.grad.numpy().astype(np.float64), theirs.grad.float().numpy().astype(np.float64)
                               if dtype == "float16" else theirs.grad.numpy(), rtol=tolerance, atol=tolerance)


def test_gelu_double_backward_matches_torch():
    torch = pytest.importorskip("torch")
    x = _random((5, 6), np.float64)
    mine, theirs = ember.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (g,) = ember.autograd.grad(ember.nn.functional.gelu(mine).sum(), mine, create_graph=True)
    (tg,) = torch.autograd.grad(torch.nn.functional.gelu(theirs).sum(), theirs, create_graph=True)
    g.sum().backward()
    tg.sum().backward()
    np.testing.assert_allclose(mine.grad.numpy(), theirs.grad.numpy(), rtol=1e-10, atol=1e-10)


def test_gelu_backward_refuses_mismatched_shapes_by_name():
    with pytest.raises(ember.dispatch.ShapeError, match="gelu_backward"):
        ember.gelu_backward(ember.ones(3), ember.ones(4))
    with pytest.raises(ValueError, match="approximate"):
        ember.gelu_backward(ember.ones(3), ember.ones(3), approximate="fast")


@pytest.mark.parametrize("queries, keys", [(5, 5), (6, 3), (3, 6)])
def test_causal_attention_matches_torch_with_gradients(queries, keys):
    torch = pytest.importorskip("torch")
    q, k, v = _random((2, 3, queries, 4)), _random((2, 3, keys, 4), seed=1), _random((2, 3, keys, 4), seed=2)
    mine = [ember.tensor(a, requires_grad=True) for a in (q, k, v)]
    theirs = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = ember.nn.functional.scaled_dot_product_attention(*mine, is_causal=True)
    expected = torch.nn.functional.scaled_dot_product_attention(*theirs, is_causal=True)
    np.testing.assert_allclose(out.detach().numpy(), expected.detach().numpy(), rtol=1e-5, atol=1e-6)
    out.sum().backward()
    expected.sum().backward()
    for a, b in zip(mine, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16])
def test_dropout_keeps_the_rate_and_scales_what_it_keeps(dtype):
    ember.manual_seed(0)
    x = ember.ones(200_000, dtype=dtype, requires_grad=True)
    out = ember.nn.functional.dropout(x, 0.3)
    assert out.dtype == dtype
    values = out.detach().float().numpy()
    kept = values != 0
    assert abs(kept.mean() - 0.7) < 0.005
    np.testing.assert_allclose(values[kept], 1 / 0.7, rtol=1e-3)
    out.sum().backward()
    np.testing.assert_array_equal(x.grad.float().numpy(), values)  # d out / d x is the scaled mask


def test_dropout_is_reproducible_from_the_seed():
    x = ember.ones(1000)
    ember.manual_seed(7)
    first = ember.nn.functional.dropout(x, 0.5)
    ember.manual_seed(7)
    np.testing.assert_array_equal(ember.nn.functional.dropout(x, 0.5).numpy(), first.numpy())
