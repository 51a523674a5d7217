"""PyTorch's ``out=`` keyword on every op that makes new tensors: the result lands in the given tensor,
which is returned; resizing, dtype casting, devices, several outputs and autograd follow PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember
from ember.dispatch.schema import OPS


def test_result_is_written_into_out_and_out_is_returned():
    a = ember.arange(6.0).reshape(2, 3)
    out = ember.empty(2, 3)
    assert ember.add(a, a, alpha=2, out=out) is out
    np.testing.assert_array_equal(out.numpy(), 3 * np.arange(6.0).reshape(2, 3))


def test_out_may_alias_an_input():
    a = ember.arange(4.0)
    ember.mul(a, a, out=a)
    assert a.tolist() == [0.0, 1.0, 4.0, 9.0]


def test_an_empty_out_is_resized_silently_and_a_full_one_with_a_warning():
    a = ember.ones(2, 3)
    empty = ember.empty(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ember.exp(a, out=empty)
    assert empty.shape == (2, 3)
    full = ember.zeros(5)
    with pytest.warns(UserWarning, match=r"sum\(\): An output with one or more elements was resized since it had "
                                         r"shape \[5\], which does not match the required output shape \[3\]") as seen:
        ember.sum(a, 0, out=full)
    assert seen[0].filename == __file__  # points at the caller's line
    assert full.tolist() == [2.0, 2.0, 2.0]


def test_the_result_casts_to_outs_dtype_by_the_same_kind_rule():
    ints = ember.tensor([1, 2, 3])
    wide = ember.empty(3, dtype=ember.float64)
    ember.add(ints, ints, out=wide)
    assert wide.dtype is ember.float64 and wide.tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(ember.DtypeError, match="exp\\(\\): result type float32 can't be cast to the desired output "
                                               "type int64"):
        ember.exp(ember.ones(3), out=ember.empty(3, dtype=ember.int64))


def test_several_outputs_take_a_tuple_and_keep_the_named_fields():
    x = ember.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    values, indices = ember.empty(2), ember.empty(2, dtype=ember.int64)
    result = ember.max(x, 1, out=(values, indices))
    assert result.values is values and result.indices is indices
    assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0]
    with pytest.raises(TypeError, match="out must be a tuple of 2 tensors"):
        ember.max(x, 1, out=values)


def test_python_level_overloads_and_creation_functions_take_out():
    a = ember.ones(2)
    out = ember.empty(0)
    assert ember.cat([a, a], out=out) is out and out.shape == (4,)
    assert ember.zeros(2, 2, out=ember.empty(0)).shape == (2, 2)
    assert ember.arange(3, out=ember.empty(0, dtype=ember.int64)).tolist() == [0, 1, 2]


def test_out_refuses_autograd():
    leaf = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="mul\\(\\): functions with out=... arguments don't support automatic "
                                           "differentiation, but one of the arguments requires grad"):
        ember.mul(leaf, 2, out=ember.empty(3))
    with ember.no_grad():
        out = ember.empty(3)
        ember.mul(leaf, 2, out=out)
    assert out.tolist() == [2.0, 2.0, 2.0] and not out.requires_grad


def test_views_and_in_place_ops_take_no_out():
    assert not OPS["transpose"].accepts_out and not OPS["copy_"].accepts_out
    with pytest.raises(TypeError, match="out"):
        ember.transpose(ember.ones(2, 2), 0, 1, out=ember.empty(2, 2))


def test_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    ours, theirs = ember.empty(0), torch.empty(0)
    ember.matmul(ember.tensor(x), ember.tensor(x.T), out=ours)
    torch.matmul(torch.tensor(x), torch.tensor(x.T), out=theirs)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6)
    ours_i, theirs_i = ember.empty(0, dtype=ember.int64), torch.empty(0, dtype=torch.int64)
    ember.sort(ember.tensor(x), 1, out=(ember.empty(0), ours_i))
    torch.sort(torch.tensor(x), 1, out=(torch.empty(0), theirs_i))
    assert ours_i.tolist() == theirs_i.tolist()
