"""Gradient clipping through the multi-tensor ops: one ``_foreach_*`` call per device and dtype, no host read
unless ``error_if_nonfinite=True``, and PyTorch's results for every ``foreach`` setting and norm type."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.dispatch.execution import host_reads
from ember.dispatch.ops import F
from ember.dispatch.schema.errors import ShapeError
from op_names import OpNames

torch = pytest.importorskip("torch")


def _gradients(lib, dtypes=("float32",) * 5, seed=0):
    """Parameters of several shapes (and dtypes) with gradients, one without a gradient."""
    rng = np.random.default_rng(seed)
    shapes = [(4, 3), (3,), (2, 2, 2), (), (5, 1)]
    params = []
    for shape, dtype in zip(shapes, dtypes):
        p = lib.zeros(shape, dtype=getattr(lib, dtype), requires_grad=True)
        p.grad = lib.tensor(rng.standard_normal(shape) * 3, dtype=getattr(lib, dtype))
        params.append(p)
    params.append(lib.zeros(2, requires_grad=True))  # no gradient: skipped
    return params


def _grads(params) -> list[np.ndarray]:
    return [p.grad.detach().numpy() for p in params if p.grad is not None]


@pytest.mark.parametrize("foreach", [None, True, False])
@pytest.mark.parametrize("norm_type", [2.0, math.inf, 1.0, 3.0])
def test_clip_grad_norm_matches_torch(norm_type, foreach):
    ours, theirs = _gradients(ember), _gradients(torch)
    total = nn.utils.clip_grad_norm_(ours, 2.5, norm_type, foreach=foreach)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 2.5, norm_type, foreach=foreach)
    assert isinstance(total, ember.Tensor) and total.shape == () and total.dtype is ember.float32
    np.testing.assert_allclose(total.item(), expected.item(), rtol=1e-6)
    for a, b in zip(_grads(ours), _grads(theirs)):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_clip_grad_norm_with_two_dtypes_matches_torch():
    dtypes = ("float32", "float64", "float32", "float64", "float16")
    ours, theirs = _gradients(ember, dtypes), _gradients(torch, dtypes)
    total = nn.utils.clip_grad_norm_(ours, 1.0)
    expected = torch.nn.utils.clip_grad_norm_(theirs, 1.0)
    assert total.dtype is ember.float64  # the norms of every dtype are stacked, and promoted, as in PyTorch
    np.testing.assert_allclose(total.item(), expected.item(), rtol=1e-6)
    for a, b in zip(_grads(ours), _grads(theirs)):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a.astype(np.float64), b.astype(np.float64), rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("foreach", [None, True, False])
def test_clip_grad_value_matches_torch(foreach):
    ours, theirs = _gradients(ember), _gradients(torch)
    assert nn.utils.clip_grad_value_(ours, 1.5, foreach=foreach) is None
    torch.nn.utils.clip_grad_value_(theirs, 1.5, foreach=foreach)
    for a, b in zip(_grads(ours), _grads(theirs)):
        np.testing.assert_array_equal(a, b)


def test_one_multi_tensor_call_per_device_and_dtype():
    params = _gradients(ember, ("float32", "float64", "float32", "float64", "float32"))
    with OpNames() as seen:
        nn.utils.clip_grad_norm_(params, 1.0)
    assert seen.names.count("_foreach_norm") == 2 and seen.names.count("_foreach_mul_") == 2
    assert "mul" not in seen.names and "copy_" not in seen.names  # no op per gradient
    with OpNames() as seen:
        nn.utils.clip_grad_value_(params, 1.0)
    assert sorted(seen.names) == ["_foreach_clamp_max_"] * 2 + ["_foreach_clamp_min_"] * 2


def test_gradients_keep_their_identity_and_nothing_is_read_to_the_host():
    params = _gradients(ember)
    grads = [p.grad for p in params if p.grad is not None]
    with host_reads.counting() as reads:
        nn.utils.clip_grad_norm_(params, 0.1)
        nn.utils.clip_grad_value_(params, 0.05)
    assert reads.total == 0
    assert all(p.grad is g for p, g in zip(params, grads))
    assert max(np.abs(g.numpy()).max() for g in grads) <= 0.05
    with host_reads.counting() as reads:
        nn.utils.clip_grad_norm_(params, 0.1, error_if_nonfinite=True)
    assert reads.total == 1  # the check asked for


def test_nonfinite_norms_and_empty_inputs_as_torch():
    params = _gradients(ember)
    params[1].grad = ember.tensor([1.0, math.inf, 2.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(params, 1.0, error_if_nonfinite=True)
    assert math.isinf(nn.utils.get_total_norm([p.grad for p in params if p.grad is not None]).item())
    empty = nn.utils.clip_grad_norm_([ember.zeros(2, requires_grad=True)], 1.0)
    assert empty.item() == 0 and empty.dtype is ember.float32
    with pytest.warns(UserWarning, match="empty generator"):
        nn.utils.clip_grad_norm_((p for p in []), 1.0)


def test_foreach_ops_against_torch():
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in [(3, 4), (0,), (5,), ()]]
    ours, theirs = [ember.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]
    for ord in (2.0, 1.0, 3.0):
        for a, b in zip(F._foreach_norm(ours, ord), torch._foreach_norm(theirs, ord)):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6)
    factor = ember.tensor(0.25, dtype=ember.float64)
    F._foreach_mul_(ours, factor)
    torch._foreach_mul_(theirs, torch.tensor(0.25, dtype=torch.float64))
    F._foreach_clamp_min_(ours, -0.3)
    torch._foreach_clamp_min_(theirs, -0.3)
    F._foreach_clamp_max_(ours, 0.2)
    torch._foreach_clamp_max_(theirs, 0.2)
    for a, b in zip(ours, theirs):
        assert a.dtype is ember.float32
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_foreach_norm_errors_name_the_op():
    with pytest.raises(ShapeError, match="_foreach_norm: cannot compute the infinity norm on an empty tensor"):
        F._foreach_norm([ember.ones(2), ember.zeros(0)], math.inf)
    with pytest.raises(ember.dispatch.schema.errors.DtypeError, match="_foreach_mul_: expected floating point"):
        F._foreach_mul_([ember.ones(2, dtype=ember.int64)], 2.0)
