"""Parity with PyTorch for the shape, split, creation and small Tensor-method functions: movedim, rot90, the
stacks and splits, repeat_interleave, unravel_index, the window functions, logspace/range, the *_copy ops,
empty_strided/frombuffer/asarray, in-place view changes (with autograd) and the Tensor facts."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import ember

from torch_parity import assert_same

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(4)


def _both(*shape, grad=False):
    values = RNG.standard_normal(shape)
    return ember.tensor(values, requires_grad=grad), torch.tensor(values, requires_grad=grad)


def _grads_agree(ember_fn, torch_fn, *shape):
    """Same values and the same input gradient of a weighted sum of every output."""
    x, tx = _both(*shape, grad=True)
    ours, theirs = ember_fn(x), torch_fn(tx)
    ours, theirs = (ours, theirs) if isinstance(theirs, tuple) else ((ours,), (theirs,))
    assert_same(ours, theirs)
    weights = [RNG.standard_normal(tuple(t.shape)) for t in theirs]
    sum(ember.sum(o * ember.tensor(w)) for o, w in zip(ours, weights)).backward()
    sum((t * torch.tensor(w)).sum() for t, w in zip(theirs, weights)).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-12)


# -- rearranging ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, args", [
    ("movedim", ((0, 1), (2, 0))), ("moveaxis", (-1, 0)), ("swapdims", (0, 2)), ("swapaxes", (1, -1)),
    ("ravel", ()), ("tile", ((2, 1, 1, 2),)), ("rot90", (1, (0, 2))), ("rot90", (-3, (2, 1))), ("rot90", (2,)),
    ("fliplr", ()), ("flipud", ()), ("narrow_copy", (1, -3, 2)), ("repeat_interleave", (2, 1)),
])
def test_rearranging_functions_and_methods(name, args):
    _grads_agree(lambda x: getattr(ember, name)(x, *args), lambda x: getattr(torch, name)(x, *args), 2, 3, 4)
    x, tx = _both(2, 3, 4)
    assert_same(getattr(x, name)(*args), getattr(tx, name)(*args))


@pytest.mark.parametrize("name", ["hstack", "vstack", "row_stack", "dstack", "column_stack"])
@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (2, 3)), ((), ()), ((2, 1, 2), (2, 1, 2))])
def test_stacks(name, shapes):
    pairs = [_both(*s) for s in shapes]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.row_stack is deprecated
        assert_same(getattr(ember, name)([p[0] for p in pairs]), getattr(torch, name)([p[1] for p in pairs]))


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
def test_atleast_takes_a_tensor_or_several(name):
    pairs = [_both(*s) for s in ((), (3,), (2, 3), (1, 2, 3, 1))]
    for x, tx in pairs:
        assert_same(getattr(ember, name)(x), getattr(torch, name)(tx))
    assert_same(getattr(ember, name)(*(p[0] for p in pairs)), getattr(torch, name)(*(p[1] for p in pairs)))
    assert_same(getattr(ember, name)([p[0] for p in pairs]), getattr(torch, name)([p[1] for p in pairs]))


@pytest.mark.parametrize("split, dim", [(3, 0), ([1, 4], 1), ([4, 2, 9], 1), (7, -1)])
def test_tensor_split(split, dim):
    _grads_agree(lambda x: ember.tensor_split(x, split, dim), lambda x: torch.tensor_split(x, split, dim), 5, 6)


def test_tensor_split_takes_a_tensor_of_sections_or_indices():
    x, tx = _both(7, 2)
    assert_same(ember.tensor_split(x, ember.tensor(3)), torch.tensor_split(tx, torch.tensor(3)))
    assert_same(x.tensor_split(ember.tensor([2, 5])), tx.tensor_split(torch.tensor([2, 5])))


@pytest.mark.parametrize("name, value", [("hsplit", 2), ("hsplit", [1, 3]), ("vsplit", [1]), ("dsplit", 3)])
def test_directional_splits(name, value):
    x, tx = _both(4, 6, 3)
    assert_same(getattr(ember, name)(x, value), getattr(torch, name)(tx, value))
    assert_same(getattr(x, name)(value), getattr(tx, name)(value))


def test_split_with_sizes_and_copies():
    _grads_agree(lambda x: ember.split_with_sizes(x, [1, 0, 3], 1), lambda x: torch.split_with_sizes(x, [1, 0, 3], 1),
                 2, 4)
    x, tx = _both(2, 4)
    for ours, theirs in zip(ember.split_with_sizes_copy(x, [3, 1], -1), torch.split_with_sizes_copy(tx, [3, 1], -1)):
        assert_same(ours, theirs)
        assert ours.data_ptr_id() != x.data_ptr_id()


def test_unravel_index():
    indices = RNG.integers(-24, 24, (2, 3))
    assert_same(ember.unravel_index(ember.tensor(indices), (2, 3, 4)),
                torch.unravel_index(torch.tensor(indices), (2, 3, 4)))
    with pytest.raises(ember.OutOfRangeError, match="unravel_index: index 24 is out of bounds"):
        ember.unravel_index(ember.tensor([24]), (2, 3, 4))


def test_repeat_interleave_forms():
    counts = np.array([2, 0, 3])
    _grads_agree(lambda x: ember.repeat_interleave(x, ember.tensor(counts), dim=0),
                 lambda x: torch.repeat_interleave(x, torch.tensor(counts), dim=0), 3, 2)
    _grads_agree(lambda x: x.repeat_interleave(3), lambda x: x.repeat_interleave(3), 2, 2)
    _grads_agree(lambda x: ember.repeat_interleave(x, ember.tensor(counts), dim=1, output_size=5),
                 lambda x: torch.repeat_interleave(x, torch.tensor(counts), dim=1, output_size=5), 2, 3)
    assert_same(ember.repeat_interleave(ember.tensor(counts)), torch.repeat_interleave(torch.tensor(counts)))
    with pytest.raises(ValueError, match="repeat_interleave: repeats can not be negative"):
        ember.repeat_interleave(ember.zeros(3), ember.tensor([1, -1, 2]))


@pytest.mark.parametrize("name", ["expand_copy", "permute_copy", "select_copy", "slice_copy", "squeeze_copy",
                                  "t_copy", "transpose_copy", "unsqueeze_copy", "view_copy", "diagonal_copy",
                                  "unfold_copy", "alias_copy", "detach_copy", "unbind_copy", "split_copy"])
def test_view_copies_do_not_share_memory(name):
    args = {"expand_copy": ((2, 3, 4),), "permute_copy": ((1, 0),), "select_copy": (0, 1), "slice_copy": (1, 1, 3),
            "squeeze_copy": (), "t_copy": (), "transpose_copy": (0, 1), "unsqueeze_copy": (1,), "view_copy": ((4,),),
            "diagonal_copy": (), "unfold_copy": (1, 2, 1), "alias_copy": (), "detach_copy": (), "unbind_copy": (1,),
            "split_copy": (1,)}[name]
    shape = (1, 4) if name == "expand_copy" else (2, 2) if name == "view_copy" else (3, 4)
    x, tx = _both(*shape)
    ours, theirs = getattr(ember, name)(x, *args), getattr(torch, name)(tx, *args)
    assert_same(ours, tuple(theirs) if isinstance(theirs, (list, tuple)) else theirs)
    for piece in (ours if isinstance(ours, tuple) else (ours,)):
        assert piece.data_ptr_id() != x.data_ptr_id()


# -- creation -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, extra", [("hann_window", {}), ("hamming_window", {"alpha": 0.5, "beta": 0.4}),
                                         ("blackman_window", {}), ("bartlett_window", {}),
                                         ("kaiser_window", {"beta": 8.0})])
@pytest.mark.parametrize("length", [0, 1, 6, 9])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, extra, length, periodic):
    ours = getattr(ember, name)(length, periodic, dtype=ember.float64, **extra)
    theirs = getattr(torch, name)(length, periodic, dtype=torch.float64, **extra)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), atol=1e-12)
    assert getattr(ember, name)(4).dtype == ember.float32
    with pytest.raises(ember.DtypeError, match=f"{name}: not supported for dtype int64"):
        getattr(ember, name)(4, dtype=ember.int64)


def test_logspace_range_scalar_tensor():
    assert_same(ember.logspace(-1, 2, 7), torch.logspace(-1, 2, 7))
    assert_same(ember.logspace(0, 3, 4, 2.0, dtype=ember.float64), torch.logspace(0, 3, 4, 2.0, dtype=torch.float64))
    assert_same(ember.logspace(0, 2, 3, dtype=ember.int64), torch.logspace(0, 2, 3, dtype=torch.int64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.range is deprecated
        assert_same(ember.range(1, 4), torch.range(1, 4))
        assert_same(ember.range(0, 1, 0.3, dtype=ember.float64), torch.range(0, 1, 0.3, dtype=torch.float64))
        assert_same(ember.range(5, 1, -2, dtype=ember.int64), torch.range(5, 1, -2, dtype=torch.int64))
    assert_same(ember.scalar_tensor(3), torch.scalar_tensor(3))
    assert_same(ember.scalar_tensor(2.5, dtype=ember.float64), torch.scalar_tensor(2.5, dtype=torch.float64))
    with pytest.raises(ValueError, match="range: upper bound and larger bound inconsistent with step sign"):
        ember.range(0, 3, -1)


@pytest.mark.parametrize("size, stride", [((2, 3), (3, 1)), ((2, 3), (1, 2)), ((2, 3, 4), (1, 8, 2)), ((2, 1), (1, 7))])
def test_empty_strided_lays_out_the_strides(size, stride):
    """Strides agree with PyTorch's on every dim of length above one (a length-1 dim's stride is never used)."""
    out = ember.empty_strided(size, stride, dtype=ember.float64)
    theirs = torch.empty_strided(size, stride).stride()
    assert tuple(out.shape) == size
    assert [s for s, n in zip(out.stride(), size) if n > 1] == [s for s, n in zip(theirs, size) if n > 1]
    assert ember.zeros(1).new_empty_strided(size, stride).stride() == out.stride()
    with pytest.raises(ember.ShapeError, match="empty_strided: strides .* do not lay out shape"):
        ember.empty_strided((2, 3), (4, 1))


def test_frombuffer_shares_the_buffer():
    buffer = bytearray(np.arange(6, dtype=np.int32).tobytes())
    ours = ember.frombuffer(buffer, dtype=ember.int32, count=3, offset=4)
    assert_same(ours, torch.frombuffer(bytearray(buffer), dtype=torch.int32, count=3, offset=4))
    buffer[4:8] = np.int32(41).tobytes()
    assert int(ours[0]) == 41
    with pytest.raises(ValueError, match="frombuffer: requested buffer length"):
        ember.frombuffer(buffer, dtype=ember.int64, count=4)


def test_asarray_shares_or_copies():
    array = np.arange(4.0)
    shared, copied = ember.asarray(array), ember.asarray(array, copy=True)
    array[0] = 9.0
    assert float(shared[0]) == 9.0 and float(copied[0]) == 0.0
    x = ember.zeros(3)
    assert ember.asarray(x) is x
    assert_same(ember.asarray([1, 2], dtype=ember.float64), torch.asarray([1, 2], dtype=torch.float64))
    with pytest.raises(ValueError, match="asarray: copy=False"):
        ember.asarray([1.0, 2.0], copy=False)


# -- in-place shape changes ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name, args", [("transpose_", (0, 2)), ("swapaxes_", (2, 1)), ("swapdims_", (0, 1)),
                                        ("unsqueeze_", (1,)), ("squeeze_", ()), ("t_", ())])
def test_inplace_views_keep_identity_and_gradients(name, args):
    shape = (3, 4) if name == "t_" else (2, 1, 3)
    x, tx = _both(*shape, grad=True)
    y, ty = x * 2, tx * 2
    assert getattr(y, name)(*args) is y
    getattr(ty, name)(*args)
    assert_same(y, ty)
    weights = RNG.standard_normal(tuple(ty.shape))
    ember.sum(y * ember.tensor(weights)).backward()
    (ty * torch.tensor(weights)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        getattr(x, name)(*args)


def test_resize_keeps_elements_in_order():
    x, tx = _both(2, 3)
    x.resize_(3, 2)
    tx.resize_(3, 2)
    assert_same(x, tx)
    x.resize_(2)
    assert x.numpy().tolist() == tx.detach().flatten()[:2].tolist()
    y = ember.zeros(1)
    y.resize_as_(ember.zeros(2, 2))
    assert tuple(y.shape) == (2, 2)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        ember.zeros(2, requires_grad=True).resize_(4)
    z = ember.zeros(3)
    assert ember.resize_as_(z, ember.zeros(1, 2)) is z and tuple(z.shape) == (1, 2)
    a, ta = _both(2, 3)
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        assert_same(a.resize(3, 2), ta.resize(3, 2))
    with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
        assert tuple(x.resize_as(ember.zeros(2, 1)).shape) == (2, 1)


# -- Tensor facts ----------------------------------------------------------------------------------------------

def test_tensor_facts_match_torch():
    for dtype, t_dtype in ((ember.float32, torch.float32), (ember.uint8, torch.uint8), (ember.int16, torch.int16),
                           (ember.bool, torch.bool)):
        x, tx = ember.zeros(2, 3, dtype=dtype), torch.zeros(2, 3, dtype=t_dtype)
        assert (x.is_signed(), x.ndimension(), x.get_device(), x.is_neg()) == \
               (tx.is_signed(), tx.ndimension(), tx.get_device(), tx.is_neg())
        assert ember.is_floating_point(x) == torch.is_floating_point(tx)
        assert ember.is_signed(x) == torch.is_signed(tx)
    assert ember.is_nonzero(ember.tensor([0.5])) and not ember.is_nonzero(ember.tensor(0))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        ember.is_nonzero(ember.zeros(2))
    x = ember.zeros(2, 3)
    assert x.is_same_size(ember.ones(2, 3)) and not ember.is_same_size(x, ember.ones(3, 2))
    assert x.resolve_neg() is x and ember.resolve_neg(x) is x
    assert x.is_set_to(x) and not x.is_set_to(x[0]) and not x.is_set_to(x.clone())
    values, indices = ember.sort(ember.tensor([3.0, 1.0], requires_grad=True) * 1)
    t_values, t_indices = torch.sort(torch.tensor([3.0, 1.0], requires_grad=True) * 1)
    assert (values.output_nr, indices.output_nr, x.output_nr) == (t_values.output_nr, t_indices.output_nr, 0)


def test_new_and_sum_to_size():
    x, tx = _both(2, 3)
    assert_same(x.new([1.0, 2.0]), tx.new([1.0, 2.0]))
    assert tuple(x.new(4, 5).shape) == (4, 5) and x.new().numel() == 0 and x.new(2).dtype == x.dtype
    _grads_agree(lambda a: a.sum_to_size(1, 3), lambda a: a.sum_to_size(1, 3), 2, 3)
    _grads_agree(lambda a: a.sum_to_size((2, 1)), lambda a: a.sum_to_size((2, 1)), 2, 3)
    assert_same(x.sum_to_size(3), tx.sum_to_size(3))
    with pytest.raises(ember.ShapeError, match="sum_to_size: size \\[4\\] is not expandable"):
        x.sum_to_size(4)


# -- as_strided ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("size, stride, offset", [((3, 4), (4, 1), 0), ((4, 3), (2, 1), 1),
                                                  ((2, 3, 2), (1, 0, 5), None), ((), (), 5), ((0, 3), (3, 1), 2)])
def test_as_strided_values_and_gradients(size, stride, offset):
    _grads_agree(lambda x: ember.as_strided(x, size, stride, offset),
                 lambda x: torch.as_strided(x, size, stride, offset), 12)
    x, tx = _both(3, 4)
    assert_same(x.as_strided(size, stride, offset), tx.as_strided(size, stride, offset))
    assert_same(ember.as_strided_copy(x, size, stride, offset), torch.as_strided_copy(tx, size, stride, offset))


def test_as_strided_is_a_view_of_the_storage():
    x, tx = ember.arange(12.0), torch.arange(12.0)
    view, t_view = x[2:], tx[2:]
    assert_same(view.as_strided((2, 2), (1, 1)), t_view.as_strided((2, 2), (1, 1)))
    assert_same(ember.as_strided(view, (3,), (2,), 0), torch.as_strided(t_view, (3,), (2,), 0))
    windows = x.as_strided((2,), (3,))
    windows.add_(100)
    assert x.numpy().tolist()[:4] == [100.0, 1.0, 2.0, 103.0]
    y = ember.zeros(6)
    assert y.as_strided_((2, 3), (3, 1)) is y and tuple(y.shape) == (2, 3)


def test_as_strided_scatter_and_errors():
    x, tx = _both(3, 4)
    src, t_src = _both(2, 2)
    assert_same(ember.as_strided_scatter(x, src, (2, 2), (4, 1), 1),
                torch.as_strided_scatter(tx, t_src, (2, 2), (4, 1), 1))
    with pytest.raises(ember.OutOfRangeError, match="as_strided: sizes \\[3, 3\\], strides \\[4, 1\\] and storage "
                                                    "offset 0 reach element 10, out of bounds for a storage of 6"):
        ember.as_strided(ember.zeros(6), (3, 3), (4, 1))
    with pytest.raises(ember.ShapeError, match="as_strided: mismatch in length of strides and shape"):
        ember.as_strided(ember.zeros(6), (3, 2), (1,))
    with pytest.raises(RuntimeError, match="reaches outside the elements of a view that requires grad"):
        ember.as_strided((ember.zeros(6, requires_grad=True) * 1)[2:], (2,), (1,), 0)
