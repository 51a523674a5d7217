"""Indexing, scatter/gather and sorting ops against NumPy: every declared sample, then the cases
``tensor[...]`` relies on, the semantics PyTorch users expect, and the error messages."""
from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from ember.dispatch import clear_plans
from ember.dispatch import OPS, registry
from ember.dispatch.ops import F

OP_NAMES = ["argwhere", "nonzero", "unbind", "index", "index_put_", "gather", "scatter", "scatter_add",
            "index_select", "masked_fill", "masked_select", "flip", "roll", "tril", "triu", "diff", "sort",
            "argsort", "topk"]
DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int32, ember.int64, ember.float16, ember.bfloat16,
          ember.float32, ember.float64]
CPU_OVERRIDES = ["flip", "roll", "tril", "triu", "index_select", "topk"]


# -- the samples protocol: make(shape, *, dtype, low, high, noncontiguous) ------------------------

class Make:
    """A seeded ``make`` for ``OpDef.samples``, on the CPU."""

    def __init__(self, dtype, seed=0):
        self.dtype = dtype
        self.rng = np.random.default_rng(seed)

    def __call__(self, shape=(), *, dtype=None, low=None, high=None, noncontiguous=False):
        dt = dtype or self.dtype
        if dt is ember.bool:
            values = self.rng.random(shape) < 0.5
        elif not dt.is_floating_point:
            low = (0 if dt is ember.uint8 else -9) if low is None else low
            values = self.rng.integers(low, max(10 if high is None else high, low + 1), shape)
        else:
            values = self.rng.uniform(-5 if low is None else low, 5 if high is None else high, shape)
        if noncontiguous and len(shape):
            wide = np.zeros(tuple(shape[:-1]) + (2 * shape[-1],), values.dtype)
            wide[..., ::2] = values
            return ember.tensor(wide, dtype=dt)[..., ::2]
        return ember.tensor(values, dtype=dt)


def host(value):
    if isinstance(value, ember.Tensor):
        return np.array(value.numpy())
    if isinstance(value, (list, tuple)):
        return [host(v) for v in value]
    return value


def as_list(op, result):
    multi = len(op.outputs) > 1 or op.outputs == ("*",)
    return list(result) if multi else [result]


def assert_matches(actual, expected, dt=None):
    actual = np.asarray(actual.numpy())
    expected = np.asarray(expected)
    assert actual.shape == expected.shape, (actual.shape, expected.shape)
    if actual.dtype.kind in "biu":
        np.testing.assert_array_equal(actual, expected)
    else:
        tol = 2e-2 if actual.dtype.itemsize == 2 else 1e-6
        np.testing.assert_allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=tol, atol=tol,
                                   equal_nan=True)


def assert_shape_fits(actual, meta_shape):
    assert len(actual) == len(meta_shape) and all(m is None or a == m for a, m in zip(actual, meta_shape)), \
        (actual, meta_shape)


def _cases():
    for name in OP_NAMES:
        for dt in DTYPES:
            if dt in OPS[name].accepted_dtypes:
                yield pytest.param(name, dt, id=f"{name}-{dt.name}")


@pytest.mark.parametrize("name,dt", list(_cases()))
def test_samples_match_reference(name, dt):
    op = OPS[name]
    samples = list(op.samples(Make(dt), dt))
    assert len(samples) >= 4
    for sample in samples:
        ref_args = [host(a) for a in sample.args]
        ref_kwargs = {k: host(v) for k, v in sample.kwargs.items()}
        expected = op.reference(*ref_args, **ref_kwargs)
        result = getattr(F, name)(*sample.args, **sample.kwargs)
        outputs = as_list(op, result)
        expected = list(expected) if len(outputs) > 1 or op.outputs == ("*",) else [expected]
        assert len(outputs) == len(expected), sample.note
        for out, exp in zip(outputs, expected):
            assert_matches(out, exp)
        meta_shapes = op.meta(*_bound(op, sample))
        meta_shapes = list(meta_shapes) if len(outputs) > 1 or op.outputs == ("*",) else [meta_shapes]
        for out, meta_shape in zip(outputs, meta_shapes):
            assert_shape_fits(tuple(out.shape), meta_shape)


def _bound(op, sample):
    from ember.dispatch.schema.binding import bind, convert
    values = bind(op, sample.args, sample.kwargs)
    for i in op.attr_positions:
        values[i] = convert(op, op.params[i], values[i], sample.args[0].ndim)
    op.normalize_values(values)
    return values


@pytest.fixture
def composites_only(monkeypatch):
    """The CPU backend without its overrides, so composites run as they would on a new backend."""
    kernels = registry.get_backend("cpu").kernels
    for name in CPU_OVERRIDES:
        monkeypatch.delitem(kernels, name)
    clear_plans()  # plans made with the kernels would still run them
    yield
    monkeypatch.undo()
    clear_plans()


@pytest.mark.parametrize("name", CPU_OVERRIDES)
@pytest.mark.parametrize("dt", [ember.int32, ember.float16, ember.float32], ids=lambda d: d.name)
def test_composites_behind_cpu_overrides_match_reference(composites_only, name, dt):
    test_samples_match_reference(name, dt)


@pytest.mark.parametrize("path", ["cpu-override", "composite"])
def test_results_never_alias_the_input(request, path):
    if path == "composite":
        request.getfixturevalue("composites_only")
    x = ember.arange(6).reshape(2, 3)
    results = [ember.roll(x, 6), ember.roll(x, 3, 1), ember.flip(x, []), ember.flip(ember.tensor(1), [0]),
               ember.diff(x, 0), ember.index_select(x, 0, ember.tensor([0, 1])), ember.tril(x, 5),
               ember.topk(x, 3).values]
    for result in results:
        result.fill_(-1)
    assert x.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_topk_override_equals_sorting_under_ties_and_nan():
    rng = np.random.default_rng(1)
    values = rng.integers(0, 4, (6, 40)).astype(np.float32)
    values[rng.random(values.shape) < 0.2] = np.nan
    x = ember.tensor(values)
    for k in (1, 3, 10, 20, 40):
        for largest in (True, False):
            got = ember.topk(x, k, 1, largest)
            full = ember.sort(x, 1, descending=largest)
            assert got.values.shape == (6, k)
            np.testing.assert_array_equal(got.indices.numpy(), full.indices.numpy()[:, :k])
            np.testing.assert_array_equal(got.values.numpy(), full.values.numpy()[:, :k])


# -- tensor[...] and tensor[...] = v ------------------------------------------------------------

@pytest.fixture
def cube():
    values = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    return values, ember.tensor(values)


@pytest.mark.parametrize("key", [
    lambda t: t([0, 2]),
    lambda t: (slice(None), t([3, -1, 0])),
    lambda t: (t([0, 2]), slice(None), t([1, 4])),
    lambda t: (t([[0], [2]]), t([1, 3])),
    lambda t: (slice(None), 1, t([4, 0])),  # an int beside an index tensor (NumPy and PyTorch agree)
    lambda t: (Ellipsis, t([-5, 1])),
    lambda t: (t([1]), None, slice(1, 3)),
    lambda t: (slice(None), t([[1, 2]]), t([[0], [4]])),
], ids=["list", "second-dim", "separated", "broadcast-adjacent", "int-and-tensor", "ellipsis", "newaxis",
        "broadcast-2d"])
def test_getitem_with_index_tensors_matches_numpy(cube, key):
    values, x = cube
    ember_key, numpy_key = key(lambda v: ember.tensor(v)), key(np.array)
    assert_matches(x[ember_key], values[numpy_key])


def test_getitem_with_lists_and_masks(cube):
    values, x = cube
    assert_matches(x[[0, 2]], values[[0, 2]])
    mask = values % 3 == 0
    assert_matches(x[ember.tensor(mask)], values[mask])
    assert_matches(x[:, ember.tensor(mask[0, :, 0])], values[:, mask[0, :, 0]])
    assert_matches(x[1, ember.tensor(mask[0])], values[1, mask[0]])
    assert_matches(x[:, ember.tensor(mask[0])], values[:, mask[0]])


def test_getitem_returns_a_copy(cube):
    _, x = cube
    picked = x[ember.tensor([0])]
    picked.fill_(-1)
    assert x[0, 0, 0].item() == 0


def test_setitem_with_index_tensors_and_masks(cube):
    values, x = cube
    index = np.array([2, -3])
    x[ember.tensor(index)] = 7
    values[index] = 7
    x[:, ember.tensor([1, 3]), ember.tensor([0, 4])] = ember.tensor([-1.0, -2.0])
    values[:, [1, 3], [0, 4]] = [-1.0, -2.0]
    mask = values > 50
    x[ember.tensor(mask)] = 0.5
    values[mask] = 0.5
    x[ember.tensor([1])] = ember.tensor(np.ones((4, 5), np.float64))  # cast to x's dtype
    values[[1]] = 1
    assert_matches(x, values)
    assert x.dtype is ember.float32


def test_index_put_accumulates_duplicates_in_place():
    x = ember.zeros(3, 2)
    view = x[1:]
    out = view.index_put_([ember.tensor([0, 0, 1, -1])], ember.tensor([1.0, 2.0]), accumulate=True)
    assert out is view
    assert x.tolist() == [[0, 0], [2, 4], [2, 4]]  # values broadcast to each indexed row
    F.index_put_(x, [None, ember.tensor([1])], ember.tensor(9.0))
    assert x[:, 1].tolist() == [9, 9, 9]
    with pytest.raises(TypeError, match=r"argument 'values' \(position 3\) must be Tensor, not float"):
        F.index_put_(x, [None, ember.tensor([1])], 9.0)  # PyTorch's index_put_ has no Scalar overload


# -- semantics ------------------------------------------------------------------------------------

def test_nonzero_and_argwhere():
    x = ember.tensor([[0, 3], [4, 0]])
    assert ember.nonzero(x).tolist() == [[0, 1], [1, 0]]
    rows, cols = ember.nonzero(x, as_tuple=True)
    assert rows.tolist() == [0, 1] and cols.tolist() == [1, 0] and rows.dtype is ember.int64
    assert ember.argwhere(ember.tensor(5)).shape == (1, 0)
    assert ember.nonzero(ember.tensor(0)).shape == (0, 0)
    (only,) = ember.nonzero(ember.tensor(5), as_tuple=True)
    assert only.tolist() == [0]
    assert [t.tolist() for t in ember.where(ember.tensor([False, True, True]))] == [[1, 2]]


def test_unbind_returns_views():
    x = ember.arange(6).reshape(2, 3)
    columns = ember.unbind(x, -1)
    assert [c.tolist() for c in columns] == [[0, 3], [1, 4], [2, 5]]
    columns[0].fill_(9)
    assert x[:, 0].tolist() == [9, 9]


def test_gather_and_scatter_follow_pytorch():
    x = ember.tensor([[1, 2], [3, 4]])
    assert ember.gather(x, 1, ember.tensor([[0, 0], [1, 0]])).tolist() == [[1, 1], [4, 3]]
    assert x.gather(0, ember.tensor([[1, 0]])).tolist() == [[3, 2]]
    assert ember.gather(ember.tensor([5.0, 6.0]), 0, ember.tensor(1)).item() == 6.0
    z = ember.zeros(2, 3)
    assert ember.scatter(z, 0, ember.tensor([[1, 0]]), 7).tolist() == [[0, 7, 0], [7, 0, 0]]
    src = ember.arange(1.0, 7.0).reshape(2, 3)
    assert z.scatter_(1, ember.tensor([[2], [0]]), src) is z
    assert z.tolist() == [[0, 0, 1], [4, 0, 0]]
    counts = ember.zeros(4, dtype=ember.int64)
    counts.scatter_add_(0, ember.tensor([1, 3, 1, 1]), ember.ones(4, dtype=ember.int64))
    assert counts.tolist() == [0, 3, 0, 1]


def test_index_select_masked_fill_masked_select():
    x = ember.arange(6.0).reshape(2, 3)
    assert ember.index_select(x, 1, ember.tensor([2, 0, 2])).tolist() == [[2, 0, 2], [5, 3, 5]]
    assert x.index_select(0, ember.tensor(1)).tolist() == [[3, 4, 5]]
    mask = ember.tensor([True, False, True])
    assert ember.masked_fill(x, mask, -1).tolist() == [[-1, 1, -1], [-1, 4, -1]]
    ints = ember.tensor([1, 2, 3])
    filled = ints.masked_fill(mask, 2.7)
    assert filled.dtype is ember.int64 and filled.tolist() == [2, 2, 2]
    assert ints.masked_fill_(ember.tensor(True), ember.tensor(0)) is ints and ints.tolist() == [0, 0, 0]
    assert ember.masked_fill(ember.tensor([0.0, 1.0]), ember.tensor([[True], [False]]), 5).shape == (2, 2)
    assert ember.masked_select(x, mask).tolist() == [0, 2, 3, 5]
    assert ember.masked_select(ember.tensor(4), ember.tensor(True)).tolist() == [4]


def test_flip_roll_tril_triu_diff():
    x = ember.arange(6).reshape(2, 3)
    assert ember.flip(x, [0, -1]).tolist() == [[5, 4, 3], [2, 1, 0]]
    assert x.flip(1).tolist() == [[2, 1, 0], [5, 4, 3]]
    assert ember.roll(x, 1).tolist() == [[5, 0, 1], [2, 3, 4]]
    assert ember.roll(x, (1, -1), (0, 1)).tolist() == [[4, 5, 3], [1, 2, 0]]
    assert ember.tril(x).tolist() == [[0, 0, 0], [3, 4, 0]]
    assert ember.triu(x, 1).tolist() == [[0, 1, 2], [0, 0, 5]]
    ones = ember.ones(3, 3)
    assert ones.tril_(-1) is ones and ones.sum().item() == 3
    assert ember.diff(x).tolist() == [[1, 1], [1, 1]]
    assert ember.diff(x, dim=0, prepend=ember.zeros(1, 3, dtype=ember.int64)).tolist() == [[0, 1, 2], [3, 3, 3]]
    assert ember.diff(ember.tensor([True, False, False])).tolist() == [True, False]
    assert ember.diff(ember.tensor([1, 2]), prepend=ember.tensor([0.5])).dtype is ember.float32
    assert ember.diff(ember.tensor([1, 2]), n=5).shape == (0,)


def test_sort_is_stable_and_puts_nan_last():
    x = ember.tensor([2.0, math.nan, 1.0, 2.0, -0.5, math.nan])
    values, indices = ember.sort(x)
    assert indices.tolist() == [4, 2, 0, 3, 1, 5]
    assert values.tolist()[:4] == [-0.5, 1.0, 2.0, 2.0] and all(math.isnan(v) for v in values.tolist()[4:])
    assert ember.sort(x, descending=True).indices.tolist() == [1, 5, 0, 3, 2, 4]
    assert x.argsort(descending=True, stable=True).tolist() == [1, 5, 0, 3, 2, 4]
    assert ember.sort(ember.tensor([True, False, True]), descending=True).indices.tolist() == [0, 2, 1]
    b = ember.tensor([3.0, 1.0, 2.0], dtype=ember.bfloat16)
    assert ember.sort(b).values.tolist() == [1.0, 2.0, 3.0]
    zero_d = ember.sort(ember.tensor(5.0))
    assert zero_d.values.item() == 5.0 and zero_d.indices.item() == 0


def test_topk():
    x = ember.tensor([[1.0, 5.0, 3.0], [2.0, 2.0, 2.0]])
    values, indices = ember.topk(x, 2)
    assert values.tolist() == [[5, 3], [2, 2]] and indices.tolist() == [[1, 2], [0, 1]]
    assert x.topk(1, dim=0, largest=False).indices.tolist() == [[0, 1, 1]]
    assert ember.topk(ember.tensor(5.0), 1).values.item() == 5.0


# -- errors -------------------------------------------------------------------------------------

def test_index_errors_name_the_problem():
    x = ember.zeros(3, 4)
    with pytest.raises(IndexError, match=r"index: index 5 is out of bounds for dim 1 with size 4"):
        F.index(x, [None, ember.tensor([0, 5])])
    with pytest.raises(IndexError, match=r"index -4 is out of bounds for dim 0 with size 3"):
        x[ember.tensor([-4])]
    with pytest.raises(IndexError, match=r"too many indices for a tensor of dimension 2 \(got 3"):
        F.index(x, [ember.tensor([0])] * 3)
    with pytest.raises(ember.DtypeError, match=r"index: the index for dim 0 must be an integer tensor.*float32"):
        F.index(x, [ember.tensor([0.0])])
    with pytest.raises(ember.DtypeError, match="nonzero"):
        F.index(x, [ember.tensor([True, False, True])])
    with pytest.raises(ember.ShapeError, match=r"index tensors of shapes \(2,\), \(3,\) cannot be broadcast"):
        F.index(x, [ember.tensor([0, 1]), ember.tensor([0, 1, 2])])
    with pytest.raises(IndexError, match="index_put_: index 3 is out of bounds for dim 0 with size 3"):
        x[ember.tensor([3])] = 1
    with pytest.raises(ember.ShapeError, match=r"index_put_: values of shape \(3,\) cannot be broadcast to the "
                                               r"indexed shape \(2, 4\)"):
        F.index_put_(x, [ember.tensor([0, 1])], ember.zeros(3))
    with pytest.raises(IndexError, match="out of bounds for dim 0 with size 0"):
        ember.zeros(0)[ember.tensor([0])]


def test_gather_scatter_errors():
    x = ember.zeros(2, 3)
    with pytest.raises(ember.ShapeError, match="gather: Index tensor must have the same number of dimensions as input tensor"):
        ember.gather(x, 0, ember.tensor([0]))
    with pytest.raises(ember.ShapeError, match=r"index of shape \(2, 4\) must be no larger than input of shape "
                                               r"\(2, 3\) in every dim but dim 0"):
        ember.gather(x, 0, ember.zeros(2, 4, dtype=ember.int64))
    with pytest.raises(IndexError, match=r"gather: index -1 is out of bounds for dim 1 with size 3 \(expected 0..2"):
        ember.gather(x, 1, ember.tensor([[-1]]))
    with pytest.raises(IndexError, match="scatter_add: index 2 is out of bounds for dim 0 with size 2"):
        ember.scatter_add(x, 0, ember.tensor([[2]]), ember.ones(1, 1))
    with pytest.raises(ember.ShapeError, match=r"index of shape \(2, 2\) must be no larger than src of shape "
                                               r"\(1, 3\)"):
        ember.scatter(x, 0, ember.zeros(2, 2, dtype=ember.int64), ember.ones(1, 3))
    with pytest.raises(ember.DtypeError, match="scatter: src must have input's dtype float32"):
        ember.scatter(x, 0, ember.zeros(1, 1, dtype=ember.int64), ember.ones(1, 1, dtype=ember.float64))
    with pytest.raises(ember.DtypeError, match="gather: index must be an integer tensor"):
        ember.gather(x, 0, ember.zeros(1, 1))
    with pytest.raises(IndexError, match="gather: dim 2 is out of range"):
        ember.gather(x, 2, ember.zeros(1, 1, dtype=ember.int64))


def test_other_errors():
    x = ember.zeros(2, 3)
    with pytest.raises(ember.ShapeError, match="index_select: index must be 0-d or 1-D"):
        ember.index_select(x, 0, ember.zeros(1, 1, dtype=ember.int64))
    with pytest.raises(IndexError, match="index_select: index 3 is out of bounds for dim 1 with size 3"):
        ember.index_select(x, 1, ember.tensor([3]))
    with pytest.raises(ember.DtypeError, match="masked_fill: mask must be a bool tensor"):
        ember.masked_fill(x, ember.zeros(3, dtype=ember.uint8), 1)
    with pytest.raises(ember.ShapeError, match="masked_fill: value must be a number or a 0-d tensor"):
        ember.masked_fill(x, ember.tensor([True, False, True]), ember.zeros(1))
    with pytest.raises(ember.ShapeError, match=r"masked_select: shapes \(2, 3\), \(2,\) cannot be broadcast"):
        ember.masked_select(x, ember.tensor([True, False]))
    with pytest.raises(ValueError, match="flip: dims .* name a dimension more than once"):
        ember.flip(x, [0, -2])
    with pytest.raises(ember.ShapeError, match=r"roll: shifts \(1, 2\) and dims \(0,\) must have the same"):
        ember.roll(x, (1, 2), (0,))
    with pytest.raises(ember.ShapeError, match="roll: without dims, shifts must be one number"):
        ember.roll(x, (1, 2))
    with pytest.raises(ember.ShapeError, match="tril: input must have at least 2 dimensions"):
        ember.tril(ember.zeros(3))
    with pytest.raises(ember.ShapeError, match="diff: input must have at least one dimension"):
        ember.diff(ember.tensor(1.0))
    with pytest.raises(ValueError, match="diff: n must be non-negative, got -1"):
        ember.diff(x, n=-1)
    with pytest.raises(ember.ShapeError, match="diff: prepend's shape must match input's except along dim 1"):
        ember.diff(x, prepend=ember.zeros(3, 1))
    with pytest.raises(ember.ShapeError, match="topk: k=4 is out of range for dim 1 of size 3"):
        ember.topk(x, 4)
    with pytest.raises(ember.DtypeError, match="topk: not supported for dtype bool"):
        ember.topk(ember.tensor([True, False]), 1)
    with pytest.raises(IndexError, match="unbind: cannot unbind a 0-d tensor"):
        ember.unbind(ember.tensor(1.0))


def test_methods_exist():
    for name in ["index_put_", "gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "index_select",
                 "masked_fill", "masked_fill_", "masked_select", "flip", "roll", "tril", "tril_", "triu_", "diff",
                 "sort", "argsort", "topk", "nonzero", "argwhere", "unbind"]:
        assert callable(getattr(ember.Tensor, name)), name
