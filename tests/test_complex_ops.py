"""Complex tensors through reductions, shapes, indexing, creation and products: values and gradients against
PyTorch, and which ops accept complex input at all (the same ones as PyTorch's).

Each case is written once against the shared API (``lib`` is ``ember`` or ``torch``), so both frameworks run the
same call on the same data."""
from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.dispatch.schema.opdef import OPS

torch = pytest.importorskip("torch")

DTYPES = ("complex64", "complex128")
RNG = np.random.default_rng(39)


def _complex(shape, dtype="complex128"):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _as(lib, value, dtype=None):
    """An array as a tensor of ``lib``; integer and bool arrays stay index tensors."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "iub":
            return lib.tensor(value)
        return lib.tensor(value.astype(dtype) if dtype else value)
    return value


def _host(t):
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().numpy()
    return np.array(t.detach().tolist(), dtype=np.dtype(t.dtype.name)).reshape(tuple(t.shape))


_MASK = np.array([[True, False, True], [False, True, False]])
_ROWS = np.array([1, 0, 1])

# name -> (function of (lib, *inputs), inputs): the inputs are complex arrays (cast to the dtype under test)
# and integer or bool index arrays
CASES = {
    "sum": (lambda lib, z: lib.sum(z), (_complex((2, 3)),)),
    "sum_dim": (lambda lib, z: lib.sum(z, 1, keepdim=True), (_complex((2, 3)),)),
    "prod": (lambda lib, z: lib.prod(z), (_complex((2, 3)),)),
    "prod_dim": (lambda lib, z: lib.prod(z, 0), (_complex((3, 2)),)),
    "cumsum": (lambda lib, z: lib.cumsum(z, 1), (_complex((2, 4)),)),
    "cumprod": (lambda lib, z: lib.cumprod(z, 1), (_complex((2, 4)),)),
    "mean": (lambda lib, z: lib.mean(z, 0), (_complex((3, 2)),)),
    "var": (lambda lib, z: lib.var(z, 1), (_complex((2, 4)),)),
    "norm": (lambda lib, z: lib.norm(z, dim=1), (_complex((2, 4)),)),
    "norm_p1": (lambda lib, z: lib.norm(z, 1), (_complex((2, 4)),)),
    "norm_inf": (lambda lib, z: lib.norm(z, float("inf"), 0), (_complex((2, 4)),)),
    "logsumexp": (lambda lib, z: lib.logsumexp(z, 1), (_complex((2, 4)),)),
    "logcumsumexp": (lambda lib, z: lib.logcumsumexp(z, 1), (_complex((2, 4)),)),
    "std": (lambda lib, z: lib.std(z), (_complex((2, 4)),)),
    "var_mean": (lambda lib, z: lib.var_mean(z, 1), (_complex((2, 4)),)),
    "std_mean": (lambda lib, z: lib.std_mean(z, 0, correction=0), (_complex((3, 2)),)),
    "trace": (lambda lib, z: lib.trace(z), (_complex((3, 3)),)),
    "diag": (lambda lib, z: lib.diag(z), (_complex((3,)),)),
    "diagonal": (lambda lib, z: lib.diagonal(z, 1), (_complex((3, 4)),)),
    "diag_embed": (lambda lib, z: lib.diag_embed(z), (_complex((2, 3)),)),
    "tril": (lambda lib, z: lib.tril(z), (_complex((3, 3)),)),
    "triu": (lambda lib, z: lib.triu(z, 1), (_complex((3, 3)),)),
    "flip": (lambda lib, z: lib.flip(z, [1]), (_complex((2, 3)),)),
    "roll": (lambda lib, z: lib.roll(z, 1, 0), (_complex((3, 2)),)),
    "rot90": (lambda lib, z: lib.rot90(z), (_complex((2, 3)),)),
    "cat": (lambda lib, a, b: lib.cat([a, b], 1), (_complex((2, 3)), _complex((2, 1)))),
    "stack": (lambda lib, a, b: lib.stack([a, b]), (_complex((2, 3)), _complex((2, 3)))),
    "hstack": (lambda lib, a, b: lib.hstack([a, b]), (_complex((2,)), _complex((3,)))),
    "vstack": (lambda lib, a, b: lib.vstack([a, b]), (_complex((3,)), _complex((3,)))),
    "block_diag": (lambda lib, a, b: lib.block_diag(a, b), (_complex((2, 2)), _complex((1, 3)))),
    "diff": (lambda lib, z: lib.diff(z), (_complex((2, 4)),)),
    "repeat": (lambda lib, z: z.repeat(2, 1), (_complex((2, 3)),)),
    "repeat_interleave": (lambda lib, z: lib.repeat_interleave(z, 2), (_complex((3,)),)),
    "tile": (lambda lib, z: lib.tile(z, (2,)), (_complex((3,)),)),
    "transpose": (lambda lib, z: z.transpose(0, 1).reshape(-1), (_complex((2, 3)),)),
    "expand": (lambda lib, z: z.expand(3, 2), (_complex((1, 2)),)),
    "clone": (lambda lib, z: z.clone(), (_complex((2, 3)),)),
    "index_select": (lambda lib, z, i: lib.index_select(z, 0, i), (_complex((2, 3)), _ROWS)),
    "gather": (lambda lib, z, i: lib.gather(z, 1, i), (_complex((2, 3)), np.array([[0, 2], [1, 1]]))),
    "take_along_dim": (lambda lib, z, i: lib.take_along_dim(z, i, 1), (_complex((2, 3)), np.array([[2], [0]]))),
    "take": (lambda lib, z, i: lib.take(z, i), (_complex((2, 3)), np.array([5, 0, 5]))),
    "getitem_advanced": (lambda lib, z, i: z[i, 1:], (_complex((2, 3)), _ROWS)),
    "getitem_mask": (lambda lib, z, m: z[m], (_complex((2, 3)), _MASK)),
    "masked_select": (lambda lib, z, m: lib.masked_select(z, m), (_complex((2, 3)), _MASK)),
    "masked_fill": (lambda lib, z, m: lib.masked_fill(z, m, 2 - 1j), (_complex((2, 3)), _MASK)),
    "masked_scatter": (lambda lib, z, m, s: z.masked_scatter(m, s), (_complex((2, 3)), _MASK, _complex((2, 3)))),
    "scatter": (lambda lib, z, i, s: lib.scatter(z, 1, i, s),
                (_complex((2, 3)), np.array([[2, 0], [1, 2]]), _complex((2, 2)))),
    "scatter_add": (lambda lib, z, i, s: lib.scatter_add(z, 1, i, s),
                    (_complex((2, 3)), np.array([[2, 2], [1, 0]]), _complex((2, 2)))),
    "index_add": (lambda lib, z, i, s: lib.index_add(z, 0, i, s, alpha=2), (_complex((2, 3)), _ROWS, _complex((3, 3)))),
    "index_copy": (lambda lib, z, i, s: lib.index_copy(z, 0, i, s), (_complex((3, 2)), np.array([2, 0]),
                                                                     _complex((2, 2)))),
    "index_fill": (lambda lib, z, i: lib.index_fill(z, 1, i, 1j), (_complex((2, 3)), np.array([0, 2]))),
    "index_put": (lambda lib, z, i, v: lib.index_put(z, (i,), v, accumulate=True), (_complex((2, 3)), _ROWS,
                                                                                    _complex((3, 3)))),
    "diagonal_scatter": (lambda lib, z, s: lib.diagonal_scatter(z, s), (_complex((3, 3)), _complex((3,)))),
    "select_scatter": (lambda lib, z, s: lib.select_scatter(z, s, 0, 1), (_complex((2, 3)), _complex((3,)))),
    "slice_scatter": (lambda lib, z, s: lib.slice_scatter(z, s, 1, 0, 2), (_complex((2, 3)), _complex((2, 2)))),
    "dot": (lambda lib, a, b: lib.dot(a, b), (_complex((4,)), _complex((4,)))),
    "vdot": (lambda lib, a, b: lib.vdot(a, b), (_complex((4,)), _complex((4,)))),
    "inner": (lambda lib, a, b: lib.inner(a, b), (_complex((2, 3)), _complex((4, 3)))),
    "ger": (lambda lib, a, b: lib.ger(a, b), (_complex((2,)), _complex((3,)))),
    "mv": (lambda lib, a, b: lib.mv(a, b), (_complex((2, 3)), _complex((3,)))),
    "tensordot": (lambda lib, a, b: lib.tensordot(a, b, 1), (_complex((2, 3)), _complex((3, 2)))),
    "kron": (lambda lib, a, b: lib.kron(a, b), (_complex((2, 2)), _complex((1, 3)))),
    "addmm": (lambda lib, c, a, b: lib.addmm(c, a, b, beta=2, alpha=1j), (_complex((2, 2)), _complex((2, 3)),
                                                                          _complex((3, 2)))),
    "addmv": (lambda lib, c, a, b: lib.addmv(c, a, b), (_complex((2,)), _complex((2, 3)), _complex((3,)))),
    "addr": (lambda lib, c, a, b: lib.addr(c, a, b), (_complex((2, 3)), _complex((2,)), _complex((3,)))),
    "baddbmm": (lambda lib, c, a, b: lib.baddbmm(c, a, b), (_complex((2, 2, 2)), _complex((2, 2, 3)),
                                                            _complex((2, 3, 2)))),
    "addbmm": (lambda lib, c, a, b: lib.addbmm(c, a, b), (_complex((2, 2)), _complex((2, 2, 3)), _complex((2, 3, 2)))),
    "addcmul": (lambda lib, c, a, b: lib.addcmul(c, a, b, value=0.5), (_complex((3,)), _complex((3,)), _complex((3,)))),
    "addcdiv": (lambda lib, c, a, b: lib.addcdiv(c, a, b), (_complex((3,)), _complex((3,)), _complex((3,)))),
    "cov": (lambda lib, z: lib.cov(z), (_complex((2, 4)),)),
    "corrcoef": (lambda lib, z: lib.corrcoef(z), (_complex((2, 4)),)),
    "trapezoid": (lambda lib, z: lib.trapezoid(z), (_complex((2, 4)),)),
    "cumulative_trapezoid": (lambda lib, z: lib.cumulative_trapezoid(z), (_complex((2, 4)),)),
    "gradient": (lambda lib, z: lib.gradient(z)[0], (_complex((5,)),)),
    "vander": (lambda lib, z: lib.vander(z, 3), (_complex((3,)),)),
    "meshgrid": (lambda lib, a, b: lib.stack(lib.meshgrid(a, b, indexing="ij")), (_complex((2,)), _complex((3,)))),
    "cartesian_prod": (lambda lib, a, b: lib.cartesian_prod(a, b), (_complex((2,)), _complex((3,)))),
    "combinations": (lambda lib, z: lib.combinations(z), (_complex((3,)),)),
}

# values only: no gradient flows (integer or bool results)
VALUE_ONLY = {
    "count_nonzero": (lambda lib, z: lib.count_nonzero(z, 1), (np.array([[1j, 0, 2], [0, 0, 1 + 1j]]),)),
    "all": (lambda lib, z: lib.all(z, 1), (np.array([[1j, 0, 2], [1, 2j, 1 + 1j]]),)),
    "any": (lambda lib, z: lib.any(z), (np.array([[0j, 0, 0], [0, 0, 1j]]),)),
    "nonzero": (lambda lib, z: lib.nonzero(z), (np.array([[1j, 0, 2], [0, 0, 1 + 1j]]),)),
    "argwhere": (lambda lib, z: lib.argwhere(z), (np.array([[1j, 0, 2], [0, 0, 1 + 1j]]),)),
}

_TOLERANCE = {"complex64": dict(rtol=1e-4, atol=1e-5), "complex128": dict(rtol=1e-10, atol=1e-12)}


def _run(lib, fn, arrays, dtype, requires_grad=False):
    inputs = [_as(lib, a, dtype) for a in arrays]
    for t in inputs:
        if requires_grad and t.dtype.is_complex:
            t.requires_grad_()
    return inputs, fn(lib, *inputs)


def _outputs(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


#: cases built on matmul or outer, which compute on complex only once their declarations (linalg/linalg.py) say so
_ON_MATMUL = {"dot", "vdot", "inner", "ger", "mv", "tensordot", "addmm", "addmv", "addr", "baddbmm", "addbmm",
              "cov", "corrcoef"}


def _skip_without_complex_products(name):
    if name in _ON_MATMUL and not all("complex" in OPS[op].dtypes for op in ("matmul", "outer")):
        pytest.skip("matmul/outer do not compute on complex yet")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted({**CASES, **VALUE_ONLY}))
def test_values_match_torch(name, dtype):
    _skip_without_complex_products(name)
    fn, arrays = {**CASES, **VALUE_ONLY}[name]
    _, expected = _run(torch, fn, arrays, dtype)
    _, actual = _run(ember, fn, arrays, dtype)
    for e, a in zip(_outputs(expected), _outputs(actual), strict=True):
        assert a.dtype.name == str(e.dtype).removeprefix("torch."), name
        np.testing.assert_allclose(_host(a), _host(e), **_TOLERANCE[dtype])


# PyTorch computes no complex gradient for these ("select_scatter does not support automatic differentiation for
# outputs with complex dtype"; vander's backward trips over its own in-place update): finite differences check them
NO_TORCH_GRADIENT = {"select_scatter", "slice_scatter", "vander"}


@pytest.mark.parametrize("name", sorted(CASES.keys() - NO_TORCH_GRADIENT))
def test_gradients_match_torch(name):
    """Conjugate Wirtinger gradients, as PyTorch computes them, for a random complex upstream gradient."""
    _skip_without_complex_products(name)
    fn, arrays = CASES[name]
    t_inputs, t_out = _run(torch, fn, arrays, "complex128", requires_grad=True)
    e_inputs, e_out = _run(ember, fn, arrays, "complex128", requires_grad=True)
    t_outs = [o for o in _outputs(t_out) if o.requires_grad]
    e_outs = [o for o in _outputs(e_out) if o.requires_grad]
    upstream = [_complex(tuple(o.shape)) if o.is_complex() else RNG.standard_normal(tuple(o.shape)) for o in t_outs]
    wanted = [i for i, t in enumerate(t_inputs) if getattr(t, "requires_grad", False)]
    expected = torch.autograd.grad(t_outs, [t_inputs[i] for i in wanted], [torch.tensor(u) for u in upstream])
    actual = ember.autograd.grad(e_outs, [e_inputs[i] for i in wanted], [ember.tensor(u) for u in upstream])
    for e, a in zip(expected, actual, strict=True):
        assert a.dtype is ember.complex128
        np.testing.assert_allclose(_host(a), _host(e), rtol=1e-9, atol=1e-11)


def test_cumprod_and_prod_gradients_with_zeros():
    """The explicit-products paths (a zero among the factors) conjugate too."""
    z = np.array([[1 + 1j, 0, 2 - 1j, 0.5j], [0, 1j, 3, 1 - 1j]])
    for fn in (lambda lib, x: lib.cumprod(x, 1), lambda lib, x: lib.prod(x, 1)):
        (t,), t_out = _run(torch, fn, (z,), "complex128", requires_grad=True)
        (e,), e_out = _run(ember, fn, (z,), "complex128", requires_grad=True)
        upstream = _complex(tuple(t_out.shape))
        (expected,) = torch.autograd.grad(t_out, t, torch.tensor(upstream))
        (actual,) = ember.autograd.grad(e_out, e, ember.tensor(upstream))
        np.testing.assert_allclose(_host(actual), _host(expected), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(NO_TORCH_GRADIENT))
def test_gradients_pytorch_lacks_pass_gradcheck(name):
    fn, arrays = CASES[name]
    inputs, _ = _run(ember, fn, arrays, "complex128", requires_grad=True)
    assert ember.autograd.gradcheck(lambda *xs: fn(ember, *xs), inputs)


# -- which ops accept complex input: the same ones as in PyTorch, refused with PyTorch's words ---------------------

_Z = np.array([[1 + 2j, 3 - 1j, 0.5j], [2 + 0j, -1 - 1j, 4 + 4j]])
_V = np.array([1 + 1j, 2 - 1j, 3j])
_I = np.array([0, 1])
_COL = np.array([[0], [2]])

# every op of the reductions, shapes, indexing, creation, random and products families that takes a tensor, called
# on complex64 input as (lib, z: 2x3 matrix, v: vector, m: bool mask, i: row indices, c: column of indices)
ACCEPTANCE = {
    "sum": lambda lib, z, v, m, i, c: z.sum(),
    "prod": lambda lib, z, v, m, i, c: z.prod(),
    "amax": lambda lib, z, v, m, i, c: z.amax(),
    "amin": lambda lib, z, v, m, i, c: z.amin(),
    "argmax": lambda lib, z, v, m, i, c: z.argmax(),
    "argmin": lambda lib, z, v, m, i, c: z.argmin(),
    "cumsum": lambda lib, z, v, m, i, c: z.cumsum(0),
    "cumprod": lambda lib, z, v, m, i, c: z.cumprod(1),
    "mean": lambda lib, z, v, m, i, c: z.mean(),
    "var": lambda lib, z, v, m, i, c: z.var(),
    "std": lambda lib, z, v, m, i, c: z.std(),
    "all": lambda lib, z, v, m, i, c: z.all(),
    "any": lambda lib, z, v, m, i, c: z.any(),
    "max": lambda lib, z, v, m, i, c: z.max(),
    "max_dim": lambda lib, z, v, m, i, c: z.max(0),
    "min": lambda lib, z, v, m, i, c: z.min(),
    "min_dim": lambda lib, z, v, m, i, c: z.min(1),
    "kthvalue": lambda lib, z, v, m, i, c: z.kthvalue(1),
    "median": lambda lib, z, v, m, i, c: z.median(),
    "nanmedian": lambda lib, z, v, m, i, c: z.nanmedian(),
    "mode": lambda lib, z, v, m, i, c: z.mode(),
    "msort": lambda lib, z, v, m, i, c: lib.msort(z),
    "quantile": lambda lib, z, v, m, i, c: lib.quantile(z, 0.5),
    "nanquantile": lambda lib, z, v, m, i, c: lib.nanquantile(z, 0.5),
    "cummax": lambda lib, z, v, m, i, c: z.cummax(0),
    "cummin": lambda lib, z, v, m, i, c: z.cummin(0),
    "nansum": lambda lib, z, v, m, i, c: z.nansum(),
    "nanmean": lambda lib, z, v, m, i, c: z.nanmean(),
    "count_nonzero": lambda lib, z, v, m, i, c: z.count_nonzero(),
    "aminmax": lambda lib, z, v, m, i, c: lib.aminmax(z),
    "std_mean": lambda lib, z, v, m, i, c: lib.std_mean(z),
    "var_mean": lambda lib, z, v, m, i, c: lib.var_mean(z),
    "isin": lambda lib, z, v, m, i, c: lib.isin(z, v),
    "sort": lambda lib, z, v, m, i, c: z.sort(),
    "argsort": lambda lib, z, v, m, i, c: z.argsort(),
    "topk": lambda lib, z, v, m, i, c: z.topk(1),
    "flip": lambda lib, z, v, m, i, c: z.flip(0),
    "roll": lambda lib, z, v, m, i, c: z.roll(1),
    "tril": lambda lib, z, v, m, i, c: z.tril(),
    "triu": lambda lib, z, v, m, i, c: z.triu(),
    "diff": lambda lib, z, v, m, i, c: z.diff(),
    "cat": lambda lib, z, v, m, i, c: lib.cat([z, z]),
    "stack": lambda lib, z, v, m, i, c: lib.stack([z, z]),
    "argwhere": lambda lib, z, v, m, i, c: lib.argwhere(z),
    "nonzero": lambda lib, z, v, m, i, c: z.nonzero(),
    "nonzero_static": lambda lib, z, v, m, i, c: lib.nonzero_static(z, size=3),
    "index_put_": lambda lib, z, v, m, i, c: z.clone().index_put_((i,), v),
    "gather": lambda lib, z, v, m, i, c: z.gather(1, c),
    "scatter": lambda lib, z, v, m, i, c: z.scatter(1, c, z),
    "scatter_add": lambda lib, z, v, m, i, c: z.scatter_add(1, c, z),
    "scatter_reduce_sum": lambda lib, z, v, m, i, c: z.scatter_reduce(1, c, z, "sum"),
    "scatter_reduce_prod": lambda lib, z, v, m, i, c: z.scatter_reduce(1, c, z, "prod"),
    "scatter_reduce_mean": lambda lib, z, v, m, i, c: z.scatter_reduce(1, c, z, "mean"),
    "scatter_reduce_amax": lambda lib, z, v, m, i, c: z.scatter_reduce(1, c, z, "amax"),
    "index_reduce_prod": lambda lib, z, v, m, i, c: z.index_reduce(0, i, z, "prod"),
    "index_reduce_mean": lambda lib, z, v, m, i, c: z.index_reduce(0, i, z, "mean"),
    "index_reduce_amin": lambda lib, z, v, m, i, c: z.index_reduce(0, i, z, "amin"),
    "index_add": lambda lib, z, v, m, i, c: z.index_add(0, i, z),
    "index_select": lambda lib, z, v, m, i, c: z.index_select(0, i),
    "masked_fill": lambda lib, z, v, m, i, c: z.masked_fill(m, 1j),
    "masked_select": lambda lib, z, v, m, i, c: z.masked_select(m),
    "repeat": lambda lib, z, v, m, i, c: z.repeat(2, 1),
    "index_copy": lambda lib, z, v, m, i, c: z.index_copy(0, i, z),
    "index_fill": lambda lib, z, v, m, i, c: z.index_fill(0, i, 1j),
    "take": lambda lib, z, v, m, i, c: z.take(i),
    "put": lambda lib, z, v, m, i, c: z.put(i, v[:2]),
    "take_along_dim": lambda lib, z, v, m, i, c: lib.take_along_dim(z, c, 1),
    "masked_scatter": lambda lib, z, v, m, i, c: z.masked_scatter(m, z),
    "diagonal_scatter": lambda lib, z, v, m, i, c: lib.diagonal_scatter(z, v[:2]),
    "select_scatter": lambda lib, z, v, m, i, c: lib.select_scatter(z, v, 0, 0),
    "slice_scatter": lambda lib, z, v, m, i, c: lib.slice_scatter(z, z),
    "as_strided_scatter": lambda lib, z, v, m, i, c: lib.as_strided_scatter(z, v[:2], (2,), (1,)),
    "index_put": lambda lib, z, v, m, i, c: z.index_put((i,), v),
    "fill_": lambda lib, z, v, m, i, c: z.clone().fill_(1j),
    "hstack": lambda lib, z, v, m, i, c: lib.hstack([z, z]),
    "vstack": lambda lib, z, v, m, i, c: lib.vstack([z, z]),
    "dstack": lambda lib, z, v, m, i, c: lib.dstack([z, z]),
    "column_stack": lambda lib, z, v, m, i, c: lib.column_stack([v, v]),
    "repeat_interleave": lambda lib, z, v, m, i, c: z.repeat_interleave(2),
    "trace": lambda lib, z, v, m, i, c: z.trace(),
    "diag": lambda lib, z, v, m, i, c: z.diag(),
    "diag_embed": lambda lib, z, v, m, i, c: lib.diag_embed(z),
    "diagflat": lambda lib, z, v, m, i, c: lib.diagflat(v),
    "fill_diagonal_": lambda lib, z, v, m, i, c: z.clone().fill_diagonal_(1j),
    "dot": lambda lib, z, v, m, i, c: v.dot(v),
    "vdot": lambda lib, z, v, m, i, c: v.vdot(v),
    "inner": lambda lib, z, v, m, i, c: lib.inner(v, v),
    "ger": lambda lib, z, v, m, i, c: lib.ger(v, v),
    "mv": lambda lib, z, v, m, i, c: z.mv(v),
    "tensordot": lambda lib, z, v, m, i, c: lib.tensordot(z, v, 1),
    "kron": lambda lib, z, v, m, i, c: lib.kron(z, z),
    "addmm": lambda lib, z, v, m, i, c: lib.addmm(z[:, :2], z[:, :2], z[:, :2]),
    "addmv": lambda lib, z, v, m, i, c: lib.addmv(v[:2], z, v),
    "addr": lambda lib, z, v, m, i, c: lib.addr(z, v[:2], v),
    "baddbmm": lambda lib, z, v, m, i, c: lib.baddbmm(z[None, :, :2], z[None, :, :2], z[None, :, :2]),
    "addbmm": lambda lib, z, v, m, i, c: lib.addbmm(z[:, :2], z[None, :, :2], z[None, :, :2]),
    "addcmul": lambda lib, z, v, m, i, c: lib.addcmul(z, z, z),
    "addcdiv": lambda lib, z, v, m, i, c: lib.addcdiv(z, z, z),
    "cdist": lambda lib, z, v, m, i, c: lib.cdist(z[None], z[None]),
    "cov": lambda lib, z, v, m, i, c: lib.cov(z),
    "corrcoef": lambda lib, z, v, m, i, c: lib.corrcoef(z),
    "trapezoid": lambda lib, z, v, m, i, c: lib.trapezoid(z),
    "trapz": lambda lib, z, v, m, i, c: lib.trapz(z),
    "cumulative_trapezoid": lambda lib, z, v, m, i, c: lib.cumulative_trapezoid(z),
    "gradient": lambda lib, z, v, m, i, c: lib.gradient(z),
    "searchsorted": lambda lib, z, v, m, i, c: lib.searchsorted(v, v),
    "bucketize": lambda lib, z, v, m, i, c: lib.bucketize(v, v),
    "histc": lambda lib, z, v, m, i, c: lib.histc(z),
    "histogram": lambda lib, z, v, m, i, c: lib.histogram(z),
    "unique": lambda lib, z, v, m, i, c: lib.unique(z),
    "unique_consecutive": lambda lib, z, v, m, i, c: lib.unique_consecutive(z),
    "meshgrid": lambda lib, z, v, m, i, c: lib.meshgrid(v, v, indexing="ij"),
    "cartesian_prod": lambda lib, z, v, m, i, c: lib.cartesian_prod(v, v),
    "combinations": lambda lib, z, v, m, i, c: lib.combinations(v),
    "block_diag": lambda lib, z, v, m, i, c: lib.block_diag(z, z),
    "vander": lambda lib, z, v, m, i, c: lib.vander(v),
    "broadcast_to": lambda lib, z, v, m, i, c: lib.broadcast_to(v, (2, 3)),
    "clone": lambda lib, z, v, m, i, c: z.clone(),
    "rot90": lambda lib, z, v, m, i, c: lib.rot90(z),
    "tile": lambda lib, z, v, m, i, c: lib.tile(z, (2,)),
    "movedim": lambda lib, z, v, m, i, c: lib.movedim(z, 0, 1),
    "unfold": lambda lib, z, v, m, i, c: z.unfold(1, 2, 1),
    "narrow": lambda lib, z, v, m, i, c: lib.narrow(z, 1, 0, 2),
    "split": lambda lib, z, v, m, i, c: z.split(1),
    "unbind": lambda lib, z, v, m, i, c: z.unbind(),
    "logsumexp": lambda lib, z, v, m, i, c: lib.logsumexp(z, 0),
    "logcumsumexp": lambda lib, z, v, m, i, c: lib.logcumsumexp(z, 0),
    "sum_to_size": lambda lib, z, v, m, i, c: z.sum_to_size(1, 3),
    "zeros_like": lambda lib, z, v, m, i, c: lib.zeros_like(z),
    "ones_like": lambda lib, z, v, m, i, c: lib.ones_like(z),
    "full_like": lambda lib, z, v, m, i, c: lib.full_like(z, 1j),
    "empty_like": lambda lib, z, v, m, i, c: lib.empty_like(z),
    "rand_like": lambda lib, z, v, m, i, c: lib.rand_like(z),
    "randn_like": lambda lib, z, v, m, i, c: lib.randn_like(z),
    "randint_like": lambda lib, z, v, m, i, c: lib.randint_like(z, 3),
    "normal_": lambda lib, z, v, m, i, c: z.clone().normal_(),
    "uniform_": lambda lib, z, v, m, i, c: z.clone().uniform_(),
    "log_normal_": lambda lib, z, v, m, i, c: z.clone().log_normal_(),
    "exponential_": lambda lib, z, v, m, i, c: z.clone().exponential_(),
    "cauchy_": lambda lib, z, v, m, i, c: z.clone().cauchy_(),
    "geometric_": lambda lib, z, v, m, i, c: z.clone().geometric_(0.5),
    "random_": lambda lib, z, v, m, i, c: z.clone().random_(),
    "bernoulli_": lambda lib, z, v, m, i, c: z.clone().bernoulli_(0.5),
    "multinomial": lambda lib, z, v, m, i, c: lib.multinomial(v, 1),
    "bernoulli": lambda lib, z, v, m, i, c: lib.bernoulli(z),
    "normal": lambda lib, z, v, m, i, c: lib.normal(z, 1.0),
    "poisson": lambda lib, z, v, m, i, c: lib.poisson(z),
    "binomial": lambda lib, z, v, m, i, c: lib.binomial(z, z),
    "norm": lambda lib, z, v, m, i, c: z.norm(),
}


def _torch_words(message: str) -> str:
    """The part of PyTorch's refusal that Ember's must contain: its sentence, without its kernel's name or the
    operand details that follow."""
    first = message.strip().splitlines()[0].strip()
    if "not implemented for" in first:
        return first[first.index("not implemented for"):]
    for cut in (", X1 got", ", got", " but you specified", ": ComplexFloat"):
        first = first.split(cut)[0]
    return first


@pytest.mark.parametrize("name", sorted(ACCEPTANCE))
def test_complex_acceptance_matches_torch(name):
    fn = ACCEPTANCE[name]
    refusals = []
    for lib in (torch, ember):
        args = (lib.tensor(_Z.astype("complex64")), lib.tensor(_V.astype("complex64")), lib.tensor(_MASK),
                lib.tensor(_I), lib.tensor(_COL))
        try:
            fn(lib, *args)
            refusals.append(None)
        except (RuntimeError, NotImplementedError, TypeError, ValueError) as error:
            refusals.append(str(error))
    expected, actual = refusals
    assert (actual is None) == (expected is None), f"torch: {expected}; ember: {actual}"
    if expected is not None:
        assert _torch_words(expected) in actual


# -- creation ------------------------------------------------------------------------------------------------------

CREATION = {
    "zeros": lambda lib: lib.zeros((2, 3), dtype=lib.complex64),
    "ones": lambda lib: lib.ones((2,), dtype=lib.complex128),
    "eye": lambda lib: lib.eye(2, 3, dtype=lib.complex64),
    "full_complex_value": lambda lib: lib.full((2,), 1j),
    "full_real_value": lambda lib: lib.full((2,), 1.5, dtype=lib.complex64),
    "full_complex128": lambda lib: lib.full((2,), 1 - 2j, dtype=lib.complex128),
    "zeros_like": lambda lib: lib.zeros_like(lib.tensor([1j, 2])),
    "ones_like": lambda lib: lib.ones_like(lib.tensor([1j, 2], dtype=lib.complex128)),
    "full_like": lambda lib: lib.full_like(lib.tensor([1j, 2]), 2 - 1j),
    "linspace_complex_endpoints": lambda lib: lib.linspace(0, 1j, 5),
    "linspace_complex128": lambda lib: lib.linspace(1 + 1j, -2 + 3j, 4, dtype=lib.complex128),
    "linspace_complex_dtype": lambda lib: lib.linspace(0, 1, 3, dtype=lib.complex64),
    "logspace": lambda lib: lib.logspace(0, 1, 3, dtype=lib.complex64),
    "tensor": lambda lib: lib.tensor([1, 2j]),
}


@pytest.mark.parametrize("name", sorted(CREATION))
def test_creation_matches_torch(name):
    expected, actual = CREATION[name](torch), CREATION[name](ember)
    assert actual.dtype.name == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_allclose(_host(actual), _host(expected), rtol=1e-6)


@pytest.mark.parametrize("make", [
    lambda lib: lib.arange(3, dtype=lib.complex64),
    lambda lib: lib.range(0, 2, dtype=lib.complex64),
    lambda lib: lib.hann_window(4, dtype=lib.complex64),
    lambda lib: lib.randperm(3, dtype=lib.complex64),
])
def test_creation_that_torch_refuses_on_complex(make):
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        make(torch)
    with pytest.raises(NotImplementedError, match="not implemented for 'ComplexFloat'"):
        make(ember)


def test_a_complex_fill_value_for_a_real_dtype_is_refused():
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="value cannot be converted to type float"):
            lib.full((2,), 1j, dtype=lib.float32)


# -- random draws: a complex draw is a pair of real draws, as PyTorch makes it ---------------------------------------

_DRAWS = 200_000


def _parts(t):
    values = _host(t)
    return values.real, values.imag


def test_randn_complex_splits_the_unit_variance_over_both_parts():
    ember.manual_seed(0)
    z = ember.randn((_DRAWS,), dtype=ember.complex64)
    assert z.dtype is ember.complex64
    for part in _parts(z):
        assert abs(part.mean()) < 0.01 and abs(part.var() - 0.5) < 0.01
    assert abs(np.corrcoef(*_parts(z))[0, 1]) < 0.01  # independent parts


def test_rand_complex_draws_each_part_uniformly():
    ember.manual_seed(0)
    z = ember.rand((_DRAWS,), dtype=ember.complex128)
    for part in _parts(z):
        assert part.min() >= 0 and part.max() < 1 and abs(part.mean() - 0.5) < 0.01


def test_normal_and_uniform_fills_of_complex_tensors():
    """PyTorch's normal_ on complex: the mean on both parts, std / sqrt(2) each; uniform_: each part in [from, to)."""
    ember.manual_seed(0)
    z = ember.zeros((_DRAWS,), dtype=ember.complex64).normal_(2.0, 3.0)
    for part in _parts(z):
        assert abs(part.mean() - 2.0) < 0.05 and abs(part.var() - 4.5) < 0.1
    z = ember.zeros((_DRAWS,), dtype=ember.complex64).uniform_(2.0, 3.0)
    for part in _parts(z):
        assert part.min() >= 2.0 and part.max() < 3.0


def test_normal_with_a_complex_mean():
    ember.manual_seed(0)
    z = ember.normal(ember.full((_DRAWS,), 1 + 1j), 2.0)
    assert z.dtype is ember.complex64
    for part in _parts(z):
        assert abs(part.mean() - 1.0) < 0.05 and abs(part.var() - 2.0) < 0.05
    for lib in (torch, ember):
        with pytest.raises(RuntimeError, match="normal expects standard deviation to be non-complex"):
            lib.normal(0.0, lib.ones(2, dtype=lib.complex64))


def test_random_like_keeps_the_complex_dtype():
    z = ember.zeros((3,), dtype=ember.complex128)
    assert ember.randn_like(z).dtype is ember.complex128
    assert ember.rand_like(z).dtype is ember.complex128


# -- item assignment ---------------------------------------------------------------------------------------------

def _assigned(lib, index, value):
    x = lib.tensor(_Z)
    x[index(lib)] = value(lib)
    return x


SETITEM = {
    "integer": (lambda lib: 0, lambda lib: 1j),
    "slice_real_number": (lambda lib: (slice(None), 1), lambda lib: 2.5),
    "mask": (lambda lib: lib.tensor(_MASK), lambda lib: 2 - 1j),
    "advanced": (lambda lib: (lib.tensor([1, 0]), lib.tensor([2, 2])), lambda lib: lib.tensor([5j, 6 + 0j],
                                                                                              dtype=lib.complex128)),
    "list": (lambda lib: [1], lambda lib: 7j),
    "ellipsis": (lambda lib: ..., lambda lib: 1 + 1j),
    "real_tensor_row": (lambda lib: 0, lambda lib: lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)),
}


@pytest.mark.parametrize("name", sorted(SETITEM))
def test_setitem_on_complex_matches_torch(name):
    index, value = SETITEM[name]
    np.testing.assert_array_equal(_host(_assigned(ember, index, value)), _host(_assigned(torch, index, value)))


def test_gradients_through_setitem_and_indexing():
    grads = []
    upstream = _complex((2, 3))
    for lib in (torch, ember):
        z = lib.tensor(_Z).requires_grad_()
        w = lib.tensor(_V).requires_grad_()
        y = z.clone()
        y[lib.tensor(_MASK)] = w
        out = lib.cumprod(y[[1, 0]], 1)
        out.backward(lib.tensor(upstream))
        grads.append((_host(z.grad), _host(w.grad)))
    for actual, expected in zip(grads[1], grads[0]):
        np.testing.assert_allclose(actual, expected, rtol=1e-10)
